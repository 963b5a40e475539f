"""Line art: drawings without texture (outlines, diagrams, card symbols), which no texture core finds.

Their insides are blank, so no texture window of them is inked in every row. They are networks of strokes far
larger than any glyph, crossed more than once by a row or column, in an area mostly blank at a 3 mm grain (text
inks nearly every such cell). This stage decides which stroke networks are such drawings, groups the pieces of
one drawing, scores each on its size against a larger reference than texture's (``line_area``: line art carries
less evidence), and lets a drawing that meets a textured picture widen that picture's crop instead of standing
alone.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Protocol

import cv2
import numpy as np

from pipeline.judges.base import Box
from pipeline.judges.candidates import Region
from pipeline.judges.measure import MM_PER_INCH, PixelBox, box_union, grow_to_ink, overlap, px, union_until_stable
from pipeline.judges.score import size_evidence


class LineArtSettings(Protocol):
    """What this stage reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    @property
    def dpi(self) -> float: ...

    threshold: float
    line_art_mm: float
    glyph_mm: float
    blank_ink: float
    line_area: float
    max_aspect: float
    merge_mm: float
    grow_mm: float
    min_side_mm: float


def stroke_cells(inkh: np.ndarray, f: int, rows: int, cols: int) -> np.ndarray:
    """``1`` (uint8) on the whole cells of ``rows`` x ``cols`` values of ``inkh`` (means of ``f`` view columns)
    that a stroke passes: ink worth at least one full view pixel in the cell."""
    h, wf = inkh.shape
    hc, wc = h // rows, wf // cols
    if hc < 1 or wc < 1:
        return np.zeros((0, 0), np.uint8)
    means = cv2.resize(inkh[: hc * rows, : wc * cols], (wc, hc), interpolation=cv2.INTER_AREA)
    return (means >= 1.0 / (rows * cols * f)).view(np.uint8)


def strokes_crossed(comp: np.ndarray) -> float:
    """How many strokes of the connected ink ``comp`` (bool, its box) a row or column with ink crosses on
    average, the more of both ways: one stroke, straight or bent (a rule at an angle, a brace, a page's
    curled edge), is crossed once by every row and column; an outline, or a figure of several lines, more
    often."""
    across = np.count_nonzero(comp[:, 1:] & ~comp[:, :-1]) + np.count_nonzero(comp[:, 0])
    down = np.count_nonzero(comp[1:] & ~comp[:-1]) + np.count_nonzero(comp[0])
    rows, cols = np.count_nonzero(comp.any(axis=1)), np.count_nonzero(comp.any(axis=0))
    return max(across / max(1, rows), down / max(1, cols))


def near_groups(boxes: list[PixelBox], gap: int) -> list[PixelBox]:
    """Union boxes less than ``gap`` apart both ways, until none are."""

    def near(a: PixelBox, b: PixelBox) -> bool:
        return a[0] - gap < b[2] and b[0] - gap < a[2] and a[1] - gap < b[3] and b[1] - gap < a[3]

    return union_until_stable(boxes, near, box_union)


def with_line_art(
    regions: list[Region],
    sketch: np.ndarray,
    cell: int,
    strokes: np.ndarray,
    inked: np.ndarray,
    settings: LineArtSettings,
) -> list[Region]:
    """``regions`` (in place) with the line drawings (:func:`line_art`): each widens a picture it meets, or is one.

    The arguments after ``regions`` are :func:`line_art`'s."""
    # a line drawing that meets a textured picture is that picture's outline: its crop takes in the pieces
    # it meets, not the drawing's whole group (display type may stand within its reach)
    for art, pieces in line_art(sketch, cell, strokes, inked, settings):
        met = False
        for i, r in enumerate(regions):
            if r.score >= settings.threshold and overlap(r.box, art.box):
                box = r.box
                for p in (p for p in pieces if overlap(r.box, p)):
                    box = (min(box[0], p[0]), min(box[1], p[1]), max(box[2], p[2]), max(box[3], p[3]))
                regions[i], met = replace(r, box=box, area=(box[2] - box[0]) * (box[3] - box[1])), True
        if not met:
            regions.append(art)
    return regions


def line_art(
    sketch: np.ndarray,
    cell: int,
    strokes: np.ndarray,
    inked: np.ndarray,
    settings: LineArtSettings,
) -> list[tuple[Region, list[Box]]]:
    """Regions of line drawings without texture (outlines, diagrams, card symbols): networks of strokes far
    larger than a glyph, their inside blank. Candidates: components of ``sketch`` (cells of ``cell`` px that
    a stroke passes) at least ``line_art_mm`` both ways, at most 60 % inked (text, even where its lines run
    together or a rule joins them, inks nearly every cell) and clear of the page's outermost cells. Within
    a candidate's cells (and one more around), the pieces of ``strokes`` (0/1 uint8, rules removed: a
    figure's straight lines and frame go with them) connected at the view's resolution that are larger
    than a glyph of body type both ways (``glyph_mm``; notes on staves are not), mostly blank inside (ink
    on at most ``blank_ink`` of their box: words whose glyphs run together on a soft scan ink ~30-60 %) and
    more than one stroke (see :func:`_strokes_crossed`) are drawing. Pieces less than 2 x ``merge_mm``
    apart are one picture, its score weighing its area against ``line_area``; each is returned with its
    pieces' boxes (page fractions)."""
    h, w = strokes.shape
    hc, wc = sketch.shape
    if hc < 3 or wc < 3:
        return []
    dpi, mm = settings.dpi, MM_PER_INCH / settings.dpi
    ltype = cv2.CV_16U if cv2.countNonZero(sketch) < 65535 else cv2.CV_32S
    _n, _labels, stats, _ = cv2.connectedComponentsWithStats(sketch, connectivity=8, ltype=ltype)
    ext = math.ceil(settings.line_art_mm / (cell * mm))
    x, y, cw, ch, cells = stats.T
    # (a network reaching the outermost cells is the scan's edge or the paper's, or a target's frame, not
    # a printed drawing: left out, it costs nothing to trace)
    cand = (cw >= ext) & (ch >= ext) & (5 * cells <= 3 * cw * ch) & (x > 0) & (y > 0)
    cand &= (x + cw < wc) & (y + ch < hc)
    cand[0] = False
    glyph = px(settings.glyph_mm, dpi)
    found: list[PixelBox] = []
    for i in np.flatnonzero(cand):
        x0, y0 = (x[i] - 1) * cell, (y[i] - 1) * cell
        x1, y1 = min(w, (x[i] + cw[i] + 1) * cell), min(h, (y[i] + ch[i] + 1) * cell)
        window = strokes[y0:y1, x0:x1]
        ltype = cv2.CV_16U if cv2.countNonZero(window) < 65535 else cv2.CV_32S
        _k, labels, pieces, _ = cv2.connectedComponentsWithStats(window, connectivity=8, ltype=ltype)
        large = (pieces[:, 2] >= glyph) & (pieces[:, 3] >= glyph)
        large[0] = False
        for j in np.flatnonzero(large):
            px0, py0, pw, ph, _a = pieces[j]
            gx0, gy0 = x0 + px0, y0 + py0
            comp = labels[py0 : py0 + ph, px0 : px0 + pw] == j
            if np.count_nonzero(comp) <= settings.blank_ink * pw * ph and strokes_crossed(comp) >= 1.5:
                found.append((int(gx0), int(gy0), int(gx0 + pw), int(gy0 + ph)))
    regions = []
    grow, min_side = px(settings.grow_mm, dpi), px(settings.min_side_mm, dpi)
    for gx0, gy0, gx1, gy1 in near_groups(found, px(2 * settings.merge_mm, dpi)):
        inside = [b for b in found if gx0 <= b[0] and gy0 <= b[1] and b[2] <= gx1 and b[3] <= gy1]
        pieces = [(b[0] / w, b[1] / h, b[2] / w, b[3] / h) for b in inside]
        x0, y0, x1, y1 = grow_to_ink(inked, gx0, gy0, gx1, gy1, grow)
        box = (x0 / w, y0 / h, x1 / w, y1 / h)
        bw, bh = x1 - x0, y1 - y0
        area = bw * bh / float(h * w)
        z = size_evidence(area, settings.line_area, max(bw / bh, bh / bw), settings.max_aspect)
        score = 1.0 / (1.0 + math.exp(-z)) if bw >= min_side and bh >= min_side else 0.0
        regions.append((Region(box=box, area=area, fill=0.0, score=score), pieces))
    return regions
