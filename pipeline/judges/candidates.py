"""Candidates: a crop per core region, grown along the picture's strokes, and the pieces of one picture merged.

A textured core (:mod:`.texture`) is often only a picture's shaded part: a line drawing's outline, its light
sky, its frame carry no texture. So each core region's crop grows along the stroke networks under it (rules
excluded: they are layout and run on past the picture), by at most ``reach`` times the core's size per side,
then over adjacent ink up to ``grow_mm``, stopping at the first empty row or column (the white gutter around a
picture). Its score stays the core's own evidence (:mod:`.score`). Strong candidates whose crops overlap or lie
side by side with no white gutter between are one picture (:func:`merged`); weak ones (headlines, ad cuts) never
glue onto a picture. Each then becomes a :class:`Region`, scored 0 where it is too small to be a picture.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np

from pipeline.judges.base import Box
from pipeline.judges.buffers import PageBuffers
from pipeline.judges.measure import COARSE, PixelBox, box_union, grow_to_ink, px, rect, union_until_stable
from pipeline.judges.score import ScoreSettings, core_evidence


class CandidateSettings(ScoreSettings, Protocol):
    """What this stage reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    threshold: float
    span_mm: float
    pitch_mm: float
    stroke_gap_mm: float
    reach: float
    grow_mm: float
    merge_score: float
    merge_mm: float
    min_side_mm: float


@dataclass(frozen=True)
class Region:
    """One candidate picture region with the measurements its score is built from."""

    box: Box
    area: float
    """Box area as a fraction of the page."""
    fill: float
    """Fraction of the textured cores' box where the row-minimum density marks picture texture (0 for a line
    drawing, which has none)."""
    score: float


@dataclass(frozen=True)
class Candidate:
    """One textured core's crop and the evidence it was scored from, before the pieces of one picture are
    merged (:func:`merge_overlapping`)."""

    crop: PixelBox
    """The crop in view pixels: the core's box grown along its stroke networks and then to its ink."""
    core: PixelBox
    """The textured core's box on the coarse core grid (3x coarser than the view both ways)."""
    core_px: int
    """How many pixels of that grid inside ``core`` are core (the texture fill's numerator)."""
    score: float
    """The score of the core's own evidence (once merged: the best of its parts')."""

    def union(self, other: Candidate) -> Candidate:
        """Both as one: crops and core boxes unioned, core pixels summed, the best score kept."""
        return Candidate(
            crop=box_union(self.crop, other.crop),
            core=box_union(self.core, other.core),
            core_px=self.core_px + other.core_px,
            score=max(self.score, other.score),
        )


def stroke_boxes(
    strokes: np.ndarray, sy: np.ndarray, sx: np.ndarray, value: int, window: tuple[int, int, int, int]
) -> list[tuple[int, ...]]:
    """Bounding boxes ``(x, y, w, h)`` of the 8-connected stroke networks (nonzero ``strokes``) holding a
    sample point, traced within ``window`` (``x0, y0, x1, y1``: a crop never reaches past it, and cv2's
    flood fill costs ~10x more on the whole page than on such a window): each is flood-filled once from its
    first sample (with ``value``, so samples in it are then skipped)."""
    x0, y0, x1, y1 = window
    roi = strokes[y0:y1, x0:x1]
    sy, sx = sy - y0, sx - x0
    boxes = []
    todo = np.flatnonzero((roi[sy, sx] != 0) & (roi[sy, sx] != value))
    while todo.size:
        i = todo[0]
        v = int(roi[sy[i], sx[i]])  # 1, or an earlier core's mark: any nonzero value is stroke
        rect = cv2.floodFill(roi, None, (int(sx[i]), int(sy[i])), value, v - 1, 255 - v, cv2.FLOODFILL_FIXED_RANGE | 8)[
            3
        ]
        boxes.append((rect[0] + x0, rect[1] + y0, rect[2], rect[3]))
        todo = todo[1:]
        todo = todo[roi[sy[todo], sx[todo]] != value]
    return boxes


def joined(a: tuple[int, ...], b: tuple[int, ...], inked: np.ndarray, reach: int) -> bool:
    """Whether boxes ``a`` and ``b`` (``x0, y0, x1, y1``) are one picture: they overlap, or they lie side by
    side (or one above the other) less than ``reach`` apart with ink in every column (row) of the gap between
    them, i.e. no white gutter separates them (a line drawing's light middle between two shaded parts; two
    cuts, a cut and its caption, or text columns always have a gutter between)."""
    if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
        return True
    for lo, hi, s0, s1, axis in ((0, 2, 1, 3, 0), (1, 3, 0, 2, 1)):
        gap0, gap1 = min(a[hi], b[hi]), max(a[lo], b[lo])
        o0, o1 = max(a[s0], b[s0]), min(a[s1], b[s1])
        # side by side along this axis: overlapping across it by half the smaller extent
        if 0 <= gap1 - gap0 <= reach and o1 - o0 >= 0.5 * min(a[s1] - a[s0], b[s1] - b[s0]):
            band = inked[o0:o1, gap0:gap1] if axis == 0 else inked[gap0:gap1, o0:o1].T
            if band.shape[1] == 0 or band.any(axis=0).all():
                return True
    return False


def merge_overlapping(candidates: list[Candidate], inked: np.ndarray, reach: int) -> list[Candidate]:
    """Union candidates whose crops are one picture (:func:`joined`), until none are: the pieces of one picture
    become one crop."""
    return union_until_stable(candidates, lambda a, b: joined(a.crop, b.crop, inked, reach), Candidate.union)


def along_strokes(
    strokes: np.ndarray, mark: int, sub: np.ndarray, box: PixelBox, hf: int, settings: CandidateSettings
) -> PixelBox:
    """A core's crop in view pixels: its box widened over the stroke networks under it (a drawing's outline).

    ``sub``: the core's pixels in its ``box`` on the coarse grid (``hf`` rows); ``strokes``: nonzero on
    strokes, traced with ``mark``. The box widens by at most ``reach`` times its size per side."""
    h, w = strokes.shape
    x, y = box[0], box[1]
    cx_scale, cy_scale = COARSE, h / hf  # a coarse column is exactly 3 view columns
    x0, y0 = int(x * cx_scale), int(y * cy_scale)
    x1, y1 = int(box[2] * cx_scale), int(box[3] * cy_scale)
    # stroke networks under the core pixels (sampled on the core grid), away from the core's rim:
    # the window footprint overshoots the picture by up to half a window into its neighbours
    cdpi = settings.dpi / COARSE
    rim_x, rim_y = px(settings.span_mm / 2, cdpi), px(settings.pitch_mm / 2, cdpi)
    inner = cv2.erode(sub.astype(np.uint8), rect(2 * rim_x + 1, 2 * rim_y + 1))
    ys, xs = np.nonzero(inner if inner.any() else sub)
    sy = np.minimum(((ys + y + 0.5) * cy_scale).astype(int), h - 1)
    sx = np.minimum(((xs + x + 0.5) * cx_scale).astype(int), w - 1)
    # a network may widen the crop by at most ``reach`` times the core's size per side: enough for
    # a line drawing's outline, bounded where newspaper text and rules run on across the page
    mx, my = settings.reach * (x1 - x0), settings.reach * (y1 - y0)
    lx0, ly0, lx1, ly1 = x0 - mx, y0 - my, x1 + mx, y1 + my
    window = (max(0, int(lx0)), max(0, int(ly0)), min(w, int(lx1) + 1), min(h, int(ly1) + 1))
    for nx0, ny0, sw, sh in stroke_boxes(strokes, sy, sx, mark, window):
        x0, y0 = int(max(lx0, min(x0, nx0))), int(max(ly0, min(y0, ny0)))
        x1, y1 = int(min(lx1, max(x1, nx0 + sw))), int(min(ly1, max(y1, ny0 + sh)))
    return x0, y0, x1, y1


def candidates(
    ink: np.ndarray,
    inked: np.ndarray,
    raw: np.ndarray,
    core: np.ndarray,
    labels: np.ndarray,
    stats: np.ndarray,
    settings: CandidateSettings,
    buffers: PageBuffers,
) -> list[Candidate]:
    """A :class:`Candidate` per core region big enough to matter, its crop grown along its strokes.

    The crop grows from the core's box along the stroke networks under it (:func:`along_strokes`), then
    to its ink (``grow_mm``); its score is that of the core's own evidence (:func:`.score.core_evidence`),
    which the crop's growth does not change."""
    hf, wf = core.shape
    dpi = settings.dpi
    # too small to matter even as a piece of a picture (the score would be < 0.15)
    regions = [i for i in range(1, len(stats)) if stats[i][2] * stats[i][3] >= settings.min_area / 4 * wf * hf]
    if not regions:
        return []
    # ink connectivity: a line drawing's strokes (and its frame) form one network reaching beyond
    # its textured core (hatching, shading); that network tells how far to grow the crop
    g = px(settings.stroke_gap_mm, dpi)
    strokes = cv2.dilate(raw.view(np.uint8), rect(g, g), dst=buffers.strokes)
    grow = px(settings.grow_mm, dpi)
    found = []
    for n_traced, i in enumerate(regions):
        x, y, bw, bh, _a = (int(v) for v in stats[i])
        sub = (labels[y : y + bh, x : x + bw] == i) & (core[y : y + bh, x : x + bw] > 0)
        # networks are marked 2, 3, ... per candidate as they are traced (one mark per candidate, so a
        # network shared by two cores is traced for each); past 255 marks start again from a clean copy
        mark = 2 + n_traced % 254
        if mark == 2 and n_traced:
            cv2.dilate(raw.view(np.uint8), rect(g, g), dst=strokes)
        box = (x, y, x + bw, y + bh)
        x0, y0, x1, y1 = along_strokes(strokes, mark, sub, box, hf, settings)
        # the crop grows along strokes; the evidence (core box, core pixels, own score) stays the core's
        core_px = int(sub.sum())
        found.append(
            Candidate(
                crop=grow_to_ink(inked, x0, y0, x1, y1, grow),
                core=box,
                core_px=core_px,
                score=core_evidence(ink, box, core_px, (hf, wf), settings),
            )
        )
    return found


def merged(candidates: list[Candidate], inked: np.ndarray, settings: CandidateSettings) -> list[Candidate]:
    """The candidates, the pieces of each picture merged into one (:func:`merge_overlapping`), strong ones only."""
    # only cores that are pictures in their own right are cropped (and merged when their crops
    # overlap); headlines and cuts below the threshold must not glue onto a neighbouring picture
    cut = settings.merge_score * settings.threshold
    kept = [c for c in candidates if c.score >= cut]
    weak = [c for c in candidates if c.score < cut]
    return merge_overlapping(kept, inked, px(2 * settings.merge_mm, settings.dpi)) + weak


def regions_of(candidates: list[Candidate], h: int, w: int, settings: CandidateSettings) -> list[Region]:
    """The :class:`Region` of each candidate on an ``h x w`` page, scored 0 where too small for a picture."""
    min_side = px(settings.min_side_mm, settings.dpi)
    out = []
    for c in candidates:
        x0, y0, x1, y1 = c.crop
        cx0, cy0, cx1, cy1 = c.core
        bw, bh = x1 - x0, y1 - y0
        area = bw * bh / float(h * w)
        # the strongest core decides; a crop below the minimum size is an ornament, never kept
        score = c.score if area >= settings.min_area and bw >= min_side and bh >= min_side else 0.0
        fill = c.core_px / float((cx1 - cx0) * (cy1 - cy0))
        out.append(Region(box=(x0 / w, y0 / h, x1 / w, y1 / h), area=area, fill=fill, score=score))
    return out
