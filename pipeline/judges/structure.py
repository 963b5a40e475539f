"""Structure judge: find pictures by the *layout of ink*, not by global brightness.

Principle (from how historical print is made):

* **Text** is small marks set in lines. Along any horizontal span of a few millimetres the ink comes in
  bands (the lines) separated by near-white rows (the leading), so *some* row in every window a line
  pitch tall is (nearly) empty.
* **Pictures** (engravings, woodcuts, line cartoons, halftones) are 2-D texture: hatching, stippling or
  screen dots put ink into *every* row of such a window, over a large area.
* **Display type** (headlines in capitals 5-25 mm tall) can be denser than that window is tall, but it too
  stands in lines: bands of similar height separated by leading that is empty along a span of 20 mm. Such
  bands are lines of type, never picture texture, whatever their size.
* **Line drawings without texture** (outlines, diagrams, card symbols) have blank insides, so no window of
  them is inked in every row; they are networks of strokes far larger than any glyph, crossed more than once
  by a row or column, in an area mostly blank at a 3 mm grain (text inks nearly every such cell).
* **Rules, frames and scanner edges** are long straight runs and are removed before measuring; an area
  of ink (a photo at a screen finer than the view resolves is flat grey) keeps its runs: rules are thin. A
  page on a black scanner bed or microfilm frame is cropped out of its frame and judged alone;
  **microfilm targets** are negative (mostly dark) cards, refused outright, or big glyphs, solid blocks
  and uniform grey patches, which have little fine variety and much solid black.

So the judge measures, at every pixel, the *minimum over a window one text line pitch tall of the ink
density along a short horizontal span* ("row-minimum density"); it is ~0 in text and high in pictures.
Where it is high (and no row of the window is much lighter than the darkest) lie picture *cores*. Cores
are opened (thin strips go), closed into regions, and each region is scored from its own evidence:
size, texture fill, solid-black share, aspect and edge variety. The crop then grows from the core along
the picture's connected strokes (a line drawing's outline; rules excluded, which are layout and run on
past the picture), within a bounded reach, and stops at the white gutter around it; pieces of one picture
not separated by a white gutter become one crop. Line drawings are regions of their own (sized against a
larger reference, ``line_area``) where they meet no textured picture. All sizes are physical (millimetres
at the view's nominal dpi), chosen from print conventions, so the same numbers serve books and newspapers.

Score: ``sigmoid(z)`` of a log-linear sum of those terms, written so that a region exactly at the
reference values (``min_area``, ``fill_ref``, ``solid_ref``, ``max_aspect``, ``variety_ref``) scores 0.5;
the page score is its best region's. One threshold (0.5) therefore means "a picture at least this big
and this textured" for any page. On ``../shared/data`` (bench/eval_purity.py) illustrations score
0.62..0.99, text pages and targets at most 0.44.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

import cv2
import numpy as np

from pipeline.judges.base import Box, Verdict
from pipeline.judges.sheet import SheetFinder
from pipeline.scale import has_lines

MM_PER_INCH = 25.4
EDGE_CHECK_PIXELS = 1_000_000
"""Pixels the check for hands at the page's edge looks at, at most (a newspaper's 72 dpi view is 2 M)."""


def _px(mm: float, dpi: float) -> int:
    """A physical length in pixels, at least 1."""
    return max(1, round(mm * dpi / MM_PER_INCH))


def _onto_view(box: Box, frame: tuple[int, int, int, int], h: int, w: int) -> Box:
    """``box``, fractions of the page inside a scanner ``frame`` (top, bottom, left, right, in pixels of an
    ``h`` x ``w`` view), as fractions of the view."""
    top, bottom, left, right = frame
    fx, fy = (w - left - right) / w, (h - top - bottom) / h
    return (left / w + box[0] * fx, top / h + box[1] * fy, left / w + box[2] * fx, top / h + box[3] * fy)


def _rect(w: int, h: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_RECT, (max(1, w), max(1, h)))


# the row-minimum density is measured on a grid this much coarser horizontally (the span averages over 6 mm
# anyway), and region geometry on a grid this much coarser both ways
_COARSE = 3

_SCRATCH = threading.local()


def _scratch(name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """A page-sized work array kept per thread and reused from page to page: a fresh one costs more in
    page faults (the allocator hands big blocks back to the system after every page) than the arithmetic
    done on it. Contents are garbage; callers overwrite them."""
    pool = _SCRATCH.__dict__.setdefault("pool", {})
    n = math.prod(shape) * np.dtype(dtype).itemsize
    buf = pool.get(name)
    if buf is None or buf.size < n:
        buf = pool[name] = np.empty(n, np.uint8)
    return buf[:n].view(dtype).reshape(shape)


def release_scratch() -> None:
    """Free this thread's work arrays (~16 bytes per view pixel: 45–80 MB for a newspaper page). Called after
    each task, so a server thread that judged a PDF once does not keep them for good."""
    _SCRATCH.__dict__.pop("pool", None)


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


def ink_map(
    gray: np.ndarray,
    dpi: float,
    lo: float = 0.25,
    hi: float = 0.75,
    out: np.ndarray | None = None,
    work: np.ndarray | None = None,
) -> np.ndarray:
    """Ink coverage in ``[0, 1]`` relative to the local paper tone.

    The paper level is a grey max-filter over ~25 mm (toned, foxed or unevenly lit paper all become
    "white"), capped by the brightest cell of its column and row (gutter shadows and light falling off
    toward an edge run the page's whole length), and a soft ramp maps contrast 25 %..75 % to ink 0..1, so
    paper grain, bleed-through and blur count as nothing and both 1-bit and grey scans give comparable maps.
    ``out`` / ``work``: float32 arrays of the page's shape to use instead of fresh ones (the result is
    ``out``; ``work`` is clobbered).
    """
    h, w = gray.shape
    f = 8
    # the whole 8 x 8 cells only: a reduction by an exact integer factor takes cv2's fast area path (the
    # general one costs 10-25 ms on a newspaper page); the few cut-off rows and columns get the paper level
    # of their neighbours, which the 25 mm max-filter below spreads over them anyway
    src = gray[: h - h % f or h, : w - w % f or w]
    small = cv2.resize(src, (max(1, w // f), max(1, h // f)), interpolation=cv2.INTER_AREA)
    black = _percentiles(small, [1])[0]
    k = max(3, _px(25.0, dpi / f) | 1)
    paper = cv2.dilate(small.astype(np.float32), _rect(k, k))
    # a gutter shadow or light falling off toward an edge runs the page's whole length, so no column (row)
    # of it has paper brighter than its brightest cell: the paper level is capped by that, where a picture's
    # column still reaches the margins' paper. An 8 mm max filter across ignores rules along the page.
    m = max(3, _px(8.0, dpi / f) | 1)
    np.minimum(paper, cv2.dilate(small.max(axis=0, keepdims=True).astype(np.float32), _rect(m, 1)), out=paper)
    np.minimum(paper, cv2.dilate(small.max(axis=1, keepdims=True).astype(np.float32), _rect(1, m)), out=paper)
    # ink = ((paper - g) / max(paper - black, 40) - lo) / (hi - lo) is linear in g: its slope and offset are
    # computed on the coarse grid and interpolated, so the full page sees one multiply, one subtract and the
    # clip (instead of seven float passes, which cost more than everything else here on a newspaper page)
    slope = cv2.max(paper - black, 40.0)
    np.multiply(slope, hi - lo, out=slope)
    np.divide(1.0, slope, out=slope)
    offset = paper * slope - lo / (hi - lo)
    g = cv2.resize(slope, (w, h), dst=out, interpolation=cv2.INTER_LINEAR)
    cv2.multiply(g, gray, dst=g, dtype=cv2.CV_32F)  # numpy's mixed-type multiply is ~1.5x slower
    base = cv2.resize(offset, (w, h), dst=work, interpolation=cv2.INTER_LINEAR)
    np.subtract(base, g, out=g)
    cv2.threshold(g, 1.0, 1.0, cv2.THRESH_TRUNC, dst=g)
    return cv2.threshold(g, 0.0, 0.0, cv2.THRESH_TOZERO, dst=g)[1]


def _percentiles(a: np.ndarray, qs: list[float]) -> list[float]:
    """``np.percentile(a, qs)`` (linear), from a histogram when ``a`` is uint8: a sort-free count is exact for
    256 levels and ~10x faster than numpy's partition on the 65k samples judged per page."""
    if a.dtype != np.uint8:
        return [float(v) for v in np.percentile(a, qs)]
    cum = np.cumsum(np.bincount(a.ravel(), minlength=256))
    # numpy's own steps: virtual index q * (n - 1), then its two-sided linear interpolation
    index = np.asarray(qs, np.float64) / 100 * (cum[-1] - 1)
    below = np.floor(index)
    t = index - below
    a0 = np.searchsorted(cum, below, side="right").astype(np.float64)
    a1 = np.searchsorted(cum, np.minimum(below + 1, cum[-1] - 1), side="right").astype(np.float64)
    diff = a1 - a0
    return [float(v) for v in np.where(t >= 0.5, a1 - diff * (1 - t), a0 + diff * t)]


def _column_means(a: np.ndarray, f: int, out: np.ndarray) -> np.ndarray:
    """Means of each ``f`` adjacent columns of float32 ``a`` into ``out`` (``h x w // f``; the last ``w % f``
    columns are left out): an exact area reduction, done as a per-pixel ``1 x f`` matrix product over the
    columns viewed as ``f`` channels, 3-8x faster than ``cv2.resize(INTER_AREA)`` (whose general path runs
    when ``w`` is no multiple of ``f``)."""
    h, wf = out.shape
    return cv2.transform(a[:, : wf * f].reshape(h, wf, f), np.full((1, f), 1.0 / f), dst=out)


def _grey_range(gray: np.ndarray) -> tuple[float, float]:
    """1st and 99th percentile of the page's grey, from a ~256 x 256 sample."""
    h, w = gray.shape
    lo, hi = _percentiles(gray[:: max(1, h // 256), :: max(1, w // 256)], [1, 99])
    return lo, hi


def _dark_rows_cols(
    gray: np.ndarray, grey_range: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-row and per-column counts of dark pixels (below the mid-tone of the 1st/99th percentiles,
    ``grey_range`` when the caller has them), and the page's dark fraction; one integer pass instead of
    float comparisons and means."""
    h, w = gray.shape
    lo, hi = grey_range or _grey_range(gray)
    # integer grey: g < t exactly when g < ceil(t)
    dark = np.less(gray, math.ceil((lo + hi) / 2), out=_scratch("dark", (h, w), bool)).view(np.uint8)
    rows = cv2.reduce(dark, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    cols = cv2.reduce(dark, 0, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    return rows, cols, float(rows.sum() / (h * w))


def _border_runs(rows: np.ndarray, cols: np.ndarray, h: int, w: int) -> tuple[int, int, int, int]:
    """Depth of the dark scanner border at the top, bottom, left and right edge (0: none)."""
    runs = []
    for prof, n in ((rows / w, h), (cols / h, w)):
        for rev in (False, True):
            seq = prof[::-1] if rev else prof
            run = int(np.argmax(seq < 0.6)) if (seq < 0.6).any() else n
            runs.append(min(n, run + max(1, n // 200)) if run else 0)
    return runs[0], runs[1], runs[2], runs[3]


def _runs_open(packed: np.ndarray, length: int) -> np.ndarray:
    """Morphological opening along axis 0 of bit-packed rows by a ``length`` x 1 rectangle, exactly as
    ``cv2.morphologyEx(MORPH_OPEN)`` (anchor at the centre, outside = ink for the erosion, paper for the
    dilation). Each byte holds 8 columns, so one AND/OR does 8 pixels and doubling windows take log2 steps."""
    n = packed.shape[0]
    a = length // 2
    b = length - 1 - a

    def window(x: np.ndarray, op: np.ufunc, fill: int, before: int, after: int) -> np.ndarray:
        pad = np.full((before + n + after, x.shape[1]), fill, np.uint8)
        pad[before : before + n] = x
        s = 1
        while 2 * s <= length:
            pad = op(pad[:-s], pad[s:])
            s *= 2
        return op(pad[: -(length - s)], pad[length - s :]) if length > s else pad

    # erosion: out[y] = AND x[y - a .. y + b]; dilation: out[y] = OR x[y - a .. y + b]
    eroded = window(packed, np.bitwise_and, 255, a, b)
    return window(eroded, np.bitwise_or, 0, a, b)


def _line_mask(inkb: np.ndarray, length: int) -> np.ndarray:
    """``1`` (uint8) on straight vertical/horizontal runs of ``inkb`` at least ``length`` long (rules, frames,
    scan edges), grown by 3 x 3.

    Column rules and frames are the one kind of non-text ink that also fills every row of a window; no stroke
    of a letter is that long, and a picture loses only a few strokes (and its solid blacks, which are no
    texture either). Vertical runs are opened on bit-packed rows (8x less memory traffic than ``cv2`` opening
    a full uint8 page with a ``length`` x 1 kernel); horizontal runs only on the few rows that can hold one
    (no transposes of the page), with the same result; the growth too is done on the packed rows."""
    h, w = inkb.shape
    packed = np.packbits(inkb, axis=1)
    lines = _runs_open(packed, length)
    # a run surviving the opening is ``length`` long inside the row (so it fills ``(length - 7) // 8``
    # consecutive whole bytes, however aligned), or it touches the left / right edge over at least the
    # anchor's reach (outside counts as ink for the erosion): any other row opens to nothing
    a = length // 2
    b = length - 1 - a
    k = (length - 7) // 8
    if k < 1:  # too short to be sure of a whole byte: every row may hold one
        cand = np.ones(h, bool)
    else:
        run = packed == 255
        for _ in range(1, k):
            run = run[:, :-1] & run[:, 1:]
        cand = run.any(axis=1) if run.shape[1] else np.zeros(h, bool)
    cand |= inkb[:, : b + 1].all(axis=1) | inkb[:, w - a - 1 :].all(axis=1)
    rows = np.flatnonzero(cand)
    if rows.size:
        flat = cv2.morphologyEx(inkb.view(np.uint8)[rows], cv2.MORPH_OPEN, _rect(length, 1))
        lines[rows] |= np.packbits(flat, axis=1)
    # take the rule's blurred flanks with it: a 3 x 3 dilation, rows ORed with their neighbours, then each
    # bit with the bits beside it (across byte boundaries: the neighbour byte's end bit)
    grown = lines.copy()
    grown[1:] |= lines[:-1]
    grown[:-1] |= lines[1:]
    lines = grown | (grown >> 1) | (grown << 1)
    lines[:, 1:] |= (grown[:, :-1] & 1) << 7
    lines[:, :-1] |= grown[:, 1:] >> 7
    return np.unpackbits(lines, axis=1, count=w)


def _areas(inked: np.ndarray, thick: int, side: int) -> list[tuple[slice, slice, np.ndarray]]:
    """The ink inside areas of ink: connected ink at least ``thick`` across everywhere (strokes and rules
    are thinner) whose extent is at least ``side`` both ways (dark edge strips are narrower), as ``(rows,
    columns, mask)`` per area's box (none on most text pages). Found on a grid 4x coarser (an exact area
    reduction, majority per cell; these sizes are millimetres); only the boxes are touched at full size."""
    h, w = inked.shape
    f = 4
    hc, wc = h // f, w // f
    if hc < 1 or wc < 1:
        return []
    small = cv2.resize(inked[: hc * f, : wc * f].view(np.uint8), (wc, hc), interpolation=cv2.INTER_AREA)
    k = max(1, round(thick / f))
    small = cv2.morphologyEx(small, cv2.MORPH_OPEN, _rect(k, k))
    ink_cells = cv2.countNonZero(small)
    if not ink_cells:
        return []
    # 16-bit labels when they cannot overflow (as in the regions), 2-3x faster stats
    ltype = cv2.CV_16U if ink_cells < 65535 else cv2.CV_32S
    _n, labels, stats, _ = cv2.connectedComponentsWithStats(small, connectivity=8, ltype=ltype)
    big = np.minimum(stats[:, 2], stats[:, 3]) * f >= side
    big[0] = False
    if not big.any():
        return []
    # the areas' inside only: a rule or frame along an area's edge is still a rule
    inside = cv2.erode(big[labels].view(np.uint8), _rect(3, 3))
    found = []
    for x, y, bw, bh in stats[np.flatnonzero(big), :4]:
        rows, cols = slice(y * f, (y + bh) * f), slice(x * f, (x + bw) * f)
        cells = cv2.resize(inside[y : y + bh, x : x + bw], (bw * f, bh * f), interpolation=cv2.INTER_NEAREST)
        found.append((rows, cols, cells.view(bool) & inked[rows, cols]))
    return found


def _stroke_boxes(
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


def _grow_to_ink(inked: np.ndarray, x0: int, y0: int, x1: int, y1: int, m: int) -> tuple[int, int, int, int]:
    """Fit a box to the picture's ink: trim empty rows/columns at its edges, then grow each side by up
    to ``m`` px over light outer strokes the texture core missed, stopping at the first empty line (the
    white gutter that separates a picture from its caption and the text)."""
    h, w = inked.shape
    win = inked[y0:y1, x0:x1]
    rows = np.flatnonzero(win.any(axis=1))
    cols = np.flatnonzero(win.any(axis=0))
    if rows.size and cols.size:
        x0, x1, y0, y1 = x0 + cols[0], x0 + cols[-1] + 1, y0 + rows[0], y0 + rows[-1] + 1
    for _ in range(m):
        if x0 > 0 and inked[y0:y1, x0 - 1].any():
            x0 -= 1
        elif y0 > 0 and inked[y0 - 1, x0:x1].any():
            y0 -= 1
        else:
            break
    for _ in range(m):
        if x1 < w and inked[y0:y1, x1].any():
            x1 += 1
        elif y1 < h and inked[y1, x0:x1].any():
            y1 += 1
        else:
            break
    return int(x0), int(y0), int(x1), int(y1)


def _joined(a: tuple[int, ...], b: tuple[int, ...], inked: np.ndarray, reach: int) -> bool:
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


_T = TypeVar("_T")


def _union_until_stable(items: list[_T], joined: Callable[[_T, _T], bool], union: Callable[[_T, _T], _T]) -> list[_T]:
    """Replace any two ``joined`` items by their ``union`` until no two are joined (a grown item is checked
    again against every other, earlier ones included)."""
    items = list(items)
    changed = True
    while changed:
        changed = False
        for i, j in itertools.combinations(range(len(items)), 2):
            if joined(items[i], items[j]):
                items[i] = union(items[i], items[j])
                del items[j]
                changed = True
                break
    return items


_Box = tuple[int, int, int, int]
"""A box ``(x0, y0, x1, y1)`` in pixels (of the view, or of a coarser grid where said)."""


def _box_union(a: _Box, b: _Box) -> _Box:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


@dataclass(frozen=True)
class Candidate:
    """One textured core's crop and the evidence it was scored from, before the pieces of one picture are
    merged (:func:`_merge_overlapping`)."""

    crop: _Box
    """The crop in view pixels: the core's box grown along its stroke networks and then to its ink."""
    core: _Box
    """The textured core's box on the coarse core grid (3x coarser than the view both ways)."""
    core_px: int
    """How many pixels of that grid inside ``core`` are core (the texture fill's numerator)."""
    score: float
    """The score of the core's own evidence (once merged: the best of its parts')."""

    def union(self, other: Candidate) -> Candidate:
        """Both as one: crops and core boxes unioned, core pixels summed, the best score kept."""
        return Candidate(
            crop=_box_union(self.crop, other.crop),
            core=_box_union(self.core, other.core),
            core_px=self.core_px + other.core_px,
            score=max(self.score, other.score),
        )


def _merge_overlapping(candidates: list[Candidate], inked: np.ndarray, reach: int) -> list[Candidate]:
    """Union candidates whose crops are one picture (``_joined``), until none are: the pieces of one picture
    become one crop."""
    return _union_until_stable(candidates, lambda a, b: _joined(a.crop, b.crop, inked, reach), Candidate.union)


def _size_evidence(area: float, ref: float, aspect: float, max_aspect: float) -> float:
    """The size and shape terms of a region's log-odds: 0 at area ``ref`` and aspect up to ``max_aspect``;
    bigger helps up to a point (+1.5), smaller hurts steeply, longer than ``max_aspect`` hurts."""
    ratio = math.log(max(area, 1e-9) / ref)
    return (min(1.5, 1.5 * ratio) if ratio > 0 else 4.0 * ratio) - 3.0 * max(0.0, math.log(aspect / max_aspect))


def _stroke_cells(inkh: np.ndarray, f: int, rows: int, cols: int) -> np.ndarray:
    """``1`` (uint8) on the whole cells of ``rows`` x ``cols`` values of ``inkh`` (means of ``f`` view columns)
    that a stroke passes: ink worth at least one full view pixel in the cell."""
    h, wf = inkh.shape
    hc, wc = h // rows, wf // cols
    if hc < 1 or wc < 1:
        return np.zeros((0, 0), np.uint8)
    means = cv2.resize(inkh[: hc * rows, : wc * cols], (wc, hc), interpolation=cv2.INTER_AREA)
    return (means >= 1.0 / (rows * cols * f)).view(np.uint8)


def _strokes_crossed(comp: np.ndarray) -> float:
    """How many strokes of the connected ink ``comp`` (bool, its box) a row or column with ink crosses on
    average, the more of both ways: one stroke, straight or bent (a rule at an angle, a brace, a page's
    curled edge), is crossed once by every row and column; an outline, or a figure of several lines, more
    often."""
    across = np.count_nonzero(comp[:, 1:] & ~comp[:, :-1]) + np.count_nonzero(comp[:, 0])
    down = np.count_nonzero(comp[1:] & ~comp[:-1]) + np.count_nonzero(comp[0])
    rows, cols = np.count_nonzero(comp.any(axis=1)), np.count_nonzero(comp.any(axis=0))
    return max(across / max(1, rows), down / max(1, cols))


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _near_groups(boxes: list[_Box], gap: int) -> list[_Box]:
    """Union boxes less than ``gap`` apart both ways, until none are."""

    def near(a: _Box, b: _Box) -> bool:
        return a[0] - gap < b[2] and b[0] - gap < a[2] and a[1] - gap < b[3] and b[1] - gap < a[3]

    return _union_until_stable(boxes, near, _box_union)


@dataclass
class StructureJudge:
    """Keep pages holding a picture region; return its tight box(es). Pure function of the view.

    Parameters (physical sizes assume the view's nominal dpi ``72 * zoom``; defaults from print):

    * ``threshold`` -- on ``score`` in 0..1; 0.5 = a region exactly at the reference values below.
    * ``min_area`` -- smallest picture worth keeping, as a fraction of the page (0.02: ~9x9 cm on a
      newspaper, ~4x4 cm on an octavo page; smaller ones are vignettes, initials, ad cuts). Regions
      below it are never returned and score 0.
    * ``span_mm`` / ``pitch_mm`` -- horizontal span (6 mm, a few letters) and vertical window of the
      row-minimum density; the window exceeds any body-text line pitch (6pt agate ~2.3 mm, 12pt book
      ~5.5 mm), so it always holds a gap between lines: 7 mm.
    * ``hatch_mm`` -- vertical blur (1 mm) that merges hatching and screens (pitch < 1 mm) but not lines
      of text (pitch >= 2.2 mm).
    * ``core_density`` (0.15) / ``row_ratio`` (0.5) -- the lightest row of a core pixel.s window must hold
      >= 15 % ink and >= half the darkest row's ink: leading between lines holds ~0-5 %.
    * ``fill_ref`` (0.3) -- share of a region's box that is core at score 0.5 (pictures 0.3-0.8, stray
      cores in dense text 0.1-0.25).
    * ``solid_ref`` (0.4) -- share of the inked area that is solid black beyond which a region looks
      like a card, bar or masthead rather than a picture (pictures measure 0.05-0.3).
    * ``variety_ref`` (0.45) -- share of the region near a sharp ink edge below which it looks like a
      uniform patch (pictures measure 0.55-0.99; grey step wedges ~0.05, and a target's resolution gratings,
      which the view renders as flat grey, ~0.25-0.3): midway between.
    * ``max_aspect`` (4) -- longer/shorter side beyond which a region looks like a headline or rule.
    * ``line_mm`` (15) -- straight runs at least this long are rules/frames, removed before measuring
      texture unless they lie in an area of ink (see ``rule_mm``), and always before tracing strokes
      (for the strokes a crop grows along, traced again at the stroke level: a hairline rule printed
      or resampled near the ink threshold breaks into short runs there that would join its neighbours).
    * ``line_span_mm`` (20) / ``type_mm`` (25) / ``leading_ink`` (0.01) -- lines of type: along a span of
      20 mm (under half the narrowest newspaper column, ~45 mm, so some span lies within one column), bands
      3.5..25 mm tall (14..72 pt display type) next to a band of similar height across leading with under
      1 % ink (a speck, not a stroke). Their cores are dropped before regions are formed.
    * ``rule_mm`` (2.5) -- ink thicker than this everywhere and at least ``line_mm`` across both ways is an
      area (a photo's or dark passage's tone), and its straight runs are no rules: printed rules are at most
      ~2 mm thick; dark edge strips are thick but narrower than ``line_mm``.
    * ``min_side_mm`` (15) -- a crop narrower than this is not a picture.
    * ``merge_mm`` (8) -- cores closer than this are one region (a picture's light parts between).
    * ``stroke_gap_mm`` (1), ``reach`` (1.0), ``grow_mm`` (3) -- crops grow along stroke networks
      touching a core, by at most ``reach`` x the core's size per side, then by up to ``grow_mm`` of
      adjacent ink, stopping at the first empty row/column (the gutter).
    * ``merge_score`` (0.25) -- cores scoring at least this x ``threshold`` are merged into one crop
      when their crops overlap or lie < 2 x ``merge_mm`` apart with no white gutter between; weaker ones
      (headlines, ad cuts) never glue onto a picture.
    * ``ink_lo`` / ``ink_hi`` -- local contrast mapped to ink 0..1 (paper grain and bleed-through are 0).
    * ``line_art_mm`` (10) / ``glyph_mm`` (6) / ``blank_ink`` (0.2) / ``line_area`` (0.08) -- line drawings
      without texture (outlines, diagrams; see ``_line_art``): stroke networks on ~3 mm cells at least 10 mm
      both ways and mostly blank, whose pieces connected at full resolution are larger than a glyph of body
      type (6 mm: ascender to descender of 12 pt type is ~4.5 mm), ink at most 20 % of their box (hairline
      outlines ~3-15 %, words run together on a soft newspaper scan ~30-60 %) and are more than one stroke.
      Line art carries less evidence than texture, so its size reference is larger: 0.08, between the 7-8 %
      of the drawings labelled minor on ``../shared/data`` and the 10 % that makes an illustration there.
    * ``margin_mm`` (1.5) -- paper kept around each returned box (clipped to the page). The view has
      0.35 mm pixels and faint outer hairlines and frames fall below the ink ramp, so the detected box sits
      inside the printed picture; 1.5 mm is half the narrowest gutter set between a picture and text
      (~3 mm), so the margin stays clear of the text.
    """

    threshold: float = 0.5
    min_area: float = 0.02
    zoom: float = 1.0
    colorspace: Literal["gray", "rgb"] = "gray"
    exact_within: float = 0.0  # defined on any faithful view: a scan's decoded view is judged as it is
    real_size: bool = True
    name: str = "structure"
    span_mm: float = 6.0
    pitch_mm: float = 7.0
    core_density: float = 0.15
    fill_ref: float = 0.3
    solid_ref: float = 0.4
    min_side_mm: float = 15.0
    line_mm: float = 15.0
    rule_mm: float = 2.5
    hatch_mm: float = 1.0
    merge_mm: float = 8.0
    grow_mm: float = 3.0
    stroke_gap_mm: float = 1.0
    reach: float = 1.0
    merge_score: float = 0.25
    variety_ref: float = 0.45
    row_ratio: float = 0.5
    ink_lo: float = 0.25
    ink_hi: float = 0.75
    max_aspect: float = 4.0
    margin_mm: float = 1.5
    line_art_mm: float = 10.0
    glyph_mm: float = 6.0
    blank_ink: float = 0.2
    line_area: float = 0.08
    line_span_mm: float = 20.0
    type_mm: float = 25.0
    leading_ink: float = 0.01
    held: float = 0.3
    sheet: SheetFinder = field(default_factory=SheetFinder)

    @property
    def dpi(self) -> float:
        return 72.0 * self.zoom

    def regions(self, view: np.ndarray) -> tuple[list[Region], float]:
        """All candidate regions with their scores (boxes as fractions of ``view``), and the page's dark
        fraction (for diagnosis): printed pictures (:meth:`printed`), and on a page without lines of text the
        pictures on its sheet (:mod:`.sheet`), which replace the printed regions they hold."""
        found, dark, frame = self.printed(view)
        top, bottom, left, right = frame
        gray = cv2.cvtColor(view, cv2.COLOR_RGB2GRAY) if view.ndim == 3 else view
        if any(r.score >= self.threshold for r in found):
            found = self._off_the_edge(found, gray)
        # text is looked for on the page inside its scanner frame, whose black would count as untexted ink
        h, w = gray.shape
        inside = gray[top : h - bottom, left : w - right]
        if not has_lines(inside):
            # a picture on its sheet is one crop: printed regions within it (a photograph's texture, part of a
            # plate) give way to it, and it keeps the best evidence of either. A page in a scanner's frame
            # is read on its own paper (the frame would make the whole page one piece on a black "mount"); a
            # photograph on a dark card, whose edges are no even sheet, on the card.
            frame = (top, bottom, left, right) if any(frame) and self.sheet.is_sheet(inside) else (0, 0, 0, 0)
            top, bottom, left, right = frame
            share = (h - top - bottom) * (w - left - right) / (h * w)
            sheet = [
                Region(_onto_view(s.box, frame, h, w), s.area * share, 0.0, s.score)
                for s in self.sheet(view[top : h - bottom, left : w - right])
            ]
            pictures = [p for p in sheet if p.score >= self.threshold]
            held = [r for r in found if any(_overlap(r.box, p.box) for p in pictures)]
            sheet = [
                replace(p, score=max([p.score] + [r.score for r in held if _overlap(r.box, p.box)]))
                if p in pictures
                else p
                for p in sheet
            ]
            found = [r for r in found if r not in held] + sheet
        return found, dark

    def _off_the_edge(self, regions: list[Region], gray: np.ndarray) -> list[Region]:
        """``regions``, those mostly made of smooth tone that comes in from the view's edge scored 0: a hand or
        fingers holding the page, over text or beside it (print is ink or paper at this scale, however fine
        its hatching; a halftone photograph's flat grey lies inside the page). Only pages with a kept region
        pay for this. Large views are sampled every few pixels down to about :data:`EDGE_CHECK_PIXELS`: a hand
        is centimetres wide, and sampling (not averaging) keeps print's texture."""
        step = max(1, math.ceil(math.sqrt(gray.size / EDGE_CHECK_PIXELS)))
        gray = np.ascontiguousarray(gray[::step, ::step]) if step > 1 else gray
        h, w = gray.shape
        mean = cv2.boxFilter(gray, cv2.CV_32F, (3, 3))  # 3x3 variance straight from the uint8 pixels
        variance = cv2.sqrBoxFilter(gray, cv2.CV_32F, (3, 3)) - mean * mean
        paper = _percentiles(gray[:: max(1, h // 256), :: max(1, w // 256)], [95])[0]
        tone = (gray < paper - 30).view(np.uint8)
        smooth = (tone & (variance < 36).view(np.uint8)).astype(np.uint8)  # local std below 6 grey levels
        n, labels = cv2.connectedComponents(cv2.morphologyEx(smooth, cv2.MORPH_CLOSE, _rect(3, 3)), connectivity=8)
        outside = np.zeros(n, bool)
        for edge in (labels[0], labels[-1], labels[:, 0], labels[:, -1]):
            outside[edge] = True
        outside[0] = False
        out = []
        for r in regions:
            x0, y0, x1, y1 = (round(v * s) for v, s in zip(r.box, (w, h, w, h), strict=True))
            inked = max(1, cv2.countNonZero(tone[y0:y1, x0:x1]))
            share = np.count_nonzero(outside[labels[y0:y1, x0:x1]] & (smooth[y0:y1, x0:x1] > 0)) / inked
            out.append(replace(r, score=0.0) if share >= self.held else r)
        return out

    def printed(self, view: np.ndarray) -> tuple[list[Region], float, tuple[int, int, int, int]]:
        """Printed pictures: regions found by the layout of ink (the module's docstring), the page's dark
        fraction, and the depth of its scanner frame (top, bottom, left, right; 0 where there is none).

        A page scanned on a black scanner bed or microfilm frame is judged inside its frame: the frame is
        runs of mostly-dark rows and columns from the view's edges, and the page within is cropped and judged
        alone, so the frame's black counts neither as the page's darkness (a negative card) nor in its
        sizes, grey range or paper level; the boxes are mapped back onto the view."""
        gray = cv2.cvtColor(view, cv2.COLOR_RGB2GRAY) if view.ndim == 3 else view
        h, w = gray.shape
        unframed = (0, 0, 0, 0)
        if h < 8 or w < 8:
            return [], 0.0, unframed
        lo, hi = _grey_range(gray)
        if hi - lo < 32:  # blank (or uniformly dark) page: no ink structure at all
            return [], 0.0, unframed
        rows, cols, dark = _dark_rows_cols(gray, (lo, hi))
        frame = top, bottom, left, right = _border_runs(rows, cols, h, w)
        ph, pw = h - top - bottom, w - left - right
        if not top + bottom + left + right:
            return *self._page_regions(gray, rows, cols, dark), unframed
        if ph < 8 or pw < 8 or ph * pw < h * w / 4:  # dark nearly to the middle: a card, not a framed page
            return [], dark, unframed
        page = gray[top : h - bottom, left : w - right]  # a view: nothing here needs it contiguous
        lo, hi = _grey_range(page)
        if hi - lo < 32:
            return [], 0.0, frame
        found, dark = self._page_regions(page, *_dark_rows_cols(page, (lo, hi)))
        return [replace(r, box=_onto_view(r.box, frame, h, w)) for r in found], dark, frame

    def _page_regions(
        self, gray: np.ndarray, rows: np.ndarray, cols: np.ndarray, dark: float
    ) -> tuple[list[Region], float]:
        """:meth:`regions` of a page without a frame, given its dark row/column counts and dark fraction.

        The stages below, in order: ink map; lines of type; rules taken out (areas of ink keep theirs for the
        texture measure); texture cores; core regions on the coarse grid; a candidate crop per region, grown
        along its strokes; candidates of one picture merged; regions, then line art."""
        if dark > 0.5:  # negative / black card (microfilm targets), not a printed page
            return [], dark
        h, w = gray.shape
        # page-sized arrays live in per-thread scratch (see ``_scratch``); none outlives this call
        ink, planes = self._ink(gray, rows, cols)
        # lines of type are found with the rules still in: leading is empty of any ink, while a drawing's
        # straight hatching (taken for rules below) fills the rows between its strokes
        typeset = self._lines_of_type(_column_means(ink, _COARSE, planes[0]), self.dpi / _COARSE)
        inked, raw, inkh = self._without_rules(ink, planes[0])
        # line art is looked for on cells of ~3 mm (a line of body type, 1.5-2.5 mm, inks every cell it crosses)
        cell_cols = max(1, round(_px(3.0, self.dpi) / _COARSE))
        sketch = _stroke_cells(inkh, _COARSE, cell_cols * _COARSE, cell_cols)
        core = self._texture_cores(inkh, typeset, planes)
        core, labels, stats = self._core_regions(core, h)
        candidates = self._candidates(ink, inked, raw, core, labels, stats)
        regions = self._regions_of(self._merged(candidates, inked), h, w)
        return self._with_line_art(regions, sketch, cell_cols * _COARSE, raw.view(np.uint8), inked), dark

    def _ink(self, gray: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """The page's ink map, scanner border cleared, and three free coarse planes for the later stages.

        The map is :func:`ink_map` with the dark border (from the dark ``rows`` / ``cols`` counts) set to 0; the
        planes are float ``h x w // 3``. All live in per-thread scratch: a page costs no fresh page-sized array."""
        h, w = gray.shape
        work = _scratch("work", (h * w,), np.float32)
        ink = ink_map(gray, self.dpi, self.ink_lo, self.ink_hi, _scratch("ink", (h, w), np.float32), work.reshape(h, w))
        top, bottom, left, right = _border_runs(rows, cols, h, w)
        ink[:top] = ink[h - bottom :] = 0.0
        ink[:, :left] = ink[:, w - right :] = 0.0
        wf = max(1, w // _COARSE)
        # three coarse float planes fit in the (now free) paper plane of ink_map
        return ink, [work[i * h * wf : (i + 1) * h * wf].reshape(h, wf) for i in range(3)]

    def _without_rules(self, ink: np.ndarray, plane: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``inked``, ``raw``, ``inkh``: the page's ink without rules, frames and edge strips (layout, not picture).

        ``ink`` (in place) and its masks ``inked`` (> 0.5: the pictures' ink) and ``raw`` (> 0.3: strokes) lose
        every straight run, so no rule joins a picture to the rest of the page; ``inkh`` (the texture measure's
        ink, column means into ``plane``) keeps those inside areas of ink, whose tone is texture."""
        h, w = ink.shape
        dpi = self.dpi
        inked = np.greater(ink, 0.5, out=_scratch("inked", (h, w), bool))
        lines = _line_mask(inked, _px(self.line_mm, dpi))
        # rules and edge strips are bands: an area of ink (a fine-screen halftone or a dark passage, which the
        # view renders as solid grey at any screen finer than ~50 lpi) keeps its straight runs for the texture
        # measure; strokes and the region evidence below go without any straight run, as before
        areas = _areas(inked, _px(self.rule_mm, dpi), _px(self.line_mm, dpi))
        tones = [ink[rows, cols][mask] for rows, cols, mask in areas]
        np.copyto(ink, 0.0, where=lines.view(bool))
        for (rows, cols, mask), tone in zip(areas, tones, strict=True):
            ink[rows, cols][mask] = tone
        inkh = _column_means(ink, _COARSE, plane)
        for rows, cols, _mask in areas:
            np.copyto(ink[rows, cols], 0.0, where=lines[rows, cols].view(bool))
        # ``ink > 0.5`` with the rules gone, without another pass over the float page
        cv2.subtract(inked.view(np.uint8), lines, dst=inked.view(np.uint8))
        # strokes without rules: a page or column rule touching a picture would join it to everything else.
        # For strokes, rules are traced again at the faintest level that counts as a stroke (0.3): a hairline
        # rule printed (or resampled) near 0.5 breaks into short runs there, which would join its neighbours
        raw = np.greater(ink, 0.3, out=_scratch("raw", (h, w), bool))
        faint = _line_mask(raw, _px(self.line_mm, dpi))
        cv2.subtract(raw.view(np.uint8), faint, dst=raw.view(np.uint8))
        cv2.subtract(inked.view(np.uint8), faint, dst=inked.view(np.uint8))
        return inked, raw, inkh

    def _texture_cores(self, inkh: np.ndarray, typeset: np.ndarray, planes: list[np.ndarray]) -> np.ndarray:
        """Texture cores (255, else 0, on the grid of ``inkh``): where the row-minimum density marks a picture.

        That is where every row of a window one line pitch tall is inked along the span and none is much
        lighter than the darkest, outside the lines of type ``typeset``; each such pixel is widened to its
        window's footprint. ``planes`` (the first of which is ``inkh``) are clobbered."""
        dpi = self.dpi
        span, pitch = _px(self.span_mm, dpi / _COARSE), _px(self.pitch_mm, dpi)
        # a 1 mm vertical blur merges hatching (pitch < 1 mm) but not text lines (pitch >= 2.2 mm)
        rowdens = cv2.blur(inkh, (span, _px(self.hatch_mm, dpi)), dst=planes[1])
        rowmin = cv2.erode(rowdens, _rect(1, pitch), dst=planes[2])
        rowmax = cv2.dilate(rowdens, _rect(1, pitch), dst=planes[0])
        # picture texture: every row of the window inked, and no row much lighter than the darkest
        np.multiply(rowmax, self.row_ratio, out=rowmax)
        # (255 / 0 masks: the area reduction below needs no scaled copy)
        shape = inkh.shape
        core = cv2.compare(rowmin, rowmax, cv2.CMP_GT, dst=_scratch("core", shape, np.uint8))
        dense = cv2.compare(rowmin, self.core_density, cv2.CMP_GT, dst=_scratch("core2", shape, np.uint8))
        cv2.bitwise_and(core, dense, dst=core)
        # cores inside lines of type are no picture texture: large headline type is as dense as hatching
        np.copyto(core, 0, where=typeset)
        # the window footprint: a core pixel vouches for the whole window around it
        return cv2.dilate(core, _rect(span, pitch))

    def _core_regions(self, core: np.ndarray, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Core regions on the coarse grid: the cores there (0/1), and their regions' cv2 labels and stats.

        Region geometry is measured on a grid ``h // 3 x w // 3`` (``core``: the texture cores of a page ``h``
        tall); the cores are opened there, so that thin strips go, and closed over ``merge_mm`` into regions."""
        wf = core.shape[1]
        # region geometry on a coarse grid (dpi / 3): columns are already whole 3-column means
        hf = max(1, h // _COARSE)
        core = cv2.threshold(cv2.resize(core, (wf, hf), interpolation=cv2.INTER_AREA), 127, 1, cv2.THRESH_BINARY)[1]
        cdpi = self.dpi / _COARSE
        # thin strips (rules, edges, single headline lines) cannot survive a 4 mm opening
        o = _px(4.0, cdpi)
        core = cv2.morphologyEx(core, cv2.MORPH_OPEN, _rect(o, o))
        c = _px(self.merge_mm, cdpi)
        merged = cv2.morphologyEx(core, cv2.MORPH_CLOSE, _rect(c, c))
        # 16-bit labels when they cannot overflow (fewer inked cells than labels), for which cv2 computes the
        # stats 3x faster
        ltype = cv2.CV_16U if cv2.countNonZero(merged) < 65535 else cv2.CV_32S
        _n, labels, stats, _ = cv2.connectedComponentsWithStats(merged, connectivity=8, ltype=ltype)
        return core, labels, stats

    def _candidates(
        self,
        ink: np.ndarray,
        inked: np.ndarray,
        raw: np.ndarray,
        core: np.ndarray,
        labels: np.ndarray,
        stats: np.ndarray,
    ) -> list[Candidate]:
        """A :class:`Candidate` per core region big enough to matter, its crop grown along its strokes.

        The crop grows from the core's box along the stroke networks under it (:meth:`_along_strokes`), then
        to its ink (``grow_mm``); its score is that of the core's own evidence (:meth:`_evidence`), which the
        crop's growth does not change."""
        h, w = ink.shape
        hf, wf = core.shape
        dpi = self.dpi
        # too small to matter even as a piece of a picture (the score would be < 0.15)
        regions = [i for i in range(1, len(stats)) if stats[i][2] * stats[i][3] >= self.min_area / 4 * wf * hf]
        if not regions:
            return []
        # ink connectivity: a line drawing's strokes (and its frame) form one network reaching beyond
        # its textured core (hatching, shading); that network tells how far to grow the crop
        g = _px(self.stroke_gap_mm, dpi)
        strokes = cv2.dilate(raw.view(np.uint8), _rect(g, g), dst=_scratch("strokes", (h, w), np.uint8))
        grow = _px(self.grow_mm, dpi)
        found = []
        for n_traced, i in enumerate(regions):
            x, y, bw, bh, _a = (int(v) for v in stats[i])
            sub = (labels[y : y + bh, x : x + bw] == i) & (core[y : y + bh, x : x + bw] > 0)
            # networks are marked 2, 3, ... per candidate as they are traced (one mark per candidate, so a
            # network shared by two cores is traced for each); past 255 marks start again from a clean copy
            mark = 2 + n_traced % 254
            if mark == 2 and n_traced:
                cv2.dilate(raw.view(np.uint8), _rect(g, g), dst=strokes)
            box = (x, y, x + bw, y + bh)
            x0, y0, x1, y1 = self._along_strokes(strokes, mark, sub, box, hf)
            # the crop grows along strokes; the evidence (core box, core pixels, own score) stays the core's
            core_px = int(sub.sum())
            found.append(
                Candidate(
                    crop=_grow_to_ink(inked, x0, y0, x1, y1, grow),
                    core=box,
                    core_px=core_px,
                    score=self._evidence(ink, box, core_px, (hf, wf)),
                )
            )
        return found

    def _along_strokes(self, strokes: np.ndarray, mark: int, sub: np.ndarray, box: _Box, hf: int) -> _Box:
        """A core's crop in view pixels: its box widened over the stroke networks under it (a drawing's outline).

        ``sub``: the core's pixels in its ``box`` on the coarse grid (``hf`` rows); ``strokes``: nonzero on
        strokes, traced with ``mark``. The box widens by at most ``reach`` times its size per side."""
        h, w = strokes.shape
        x, y = box[0], box[1]
        cx_scale, cy_scale = _COARSE, h / hf  # a coarse column is exactly 3 view columns
        x0, y0 = int(x * cx_scale), int(y * cy_scale)
        x1, y1 = int(box[2] * cx_scale), int(box[3] * cy_scale)
        # stroke networks under the core pixels (sampled on the core grid), away from the core's rim:
        # the window footprint overshoots the picture by up to half a window into its neighbours
        cdpi = self.dpi / _COARSE
        rim_x, rim_y = _px(self.span_mm / 2, cdpi), _px(self.pitch_mm / 2, cdpi)
        inner = cv2.erode(sub.astype(np.uint8), _rect(2 * rim_x + 1, 2 * rim_y + 1))
        ys, xs = np.nonzero(inner if inner.any() else sub)
        sy = np.minimum(((ys + y + 0.5) * cy_scale).astype(int), h - 1)
        sx = np.minimum(((xs + x + 0.5) * cx_scale).astype(int), w - 1)
        # a network may widen the crop by at most ``reach`` times the core's size per side: enough for
        # a line drawing's outline, bounded where newspaper text and rules run on across the page
        mx, my = self.reach * (x1 - x0), self.reach * (y1 - y0)
        lx0, ly0, lx1, ly1 = x0 - mx, y0 - my, x1 + mx, y1 + my
        window = (max(0, int(lx0)), max(0, int(ly0)), min(w, int(lx1) + 1), min(h, int(ly1) + 1))
        for nx0, ny0, sw, sh in _stroke_boxes(strokes, sy, sx, mark, window):
            x0, y0 = int(max(lx0, min(x0, nx0))), int(max(ly0, min(y0, ny0)))
            x1, y1 = int(min(lx1, max(x1, nx0 + sw))), int(min(ly1, max(y1, ny0 + sh)))
        return x0, y0, x1, y1

    def _evidence(self, ink: np.ndarray, box: _Box, core_px: int, grid: tuple[int, int]) -> float:
        """Score of a textured core from the ink under it: size, texture fill, solid black, aspect, edge variety.

        ``box``: the core's box on the core grid (``grid``: that grid's rows and columns); ``core_px``: its core
        pixel count."""
        h = ink.shape[0]
        hf, wf = grid
        cx_scale, cy_scale = _COARSE, h / hf
        bx0, by0, bx1, by1 = box
        cw, ch = bx1 - bx0, by1 - by0
        area = cw * ch / float(wf * hf)
        crop = ink[int(by0 * cy_scale) : int(by1 * cy_scale), int(bx0 * cx_scale) : int(bx1 * cx_scale)]
        inked = crop > 0.3
        k2 = _px(2.0, self.dpi)
        solid = float((cv2.blur(crop, (k2, k2))[inked] > 0.8).mean()) if inked.any() else 0.0
        # variety: share of the area with a sharp ink edge nearby (hatching, dots, contours); uniform
        # grey patches and solid blocks of test targets have edges only at their borders
        gx = cv2.Sobel(crop, cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(crop, cv2.CV_32F, 0, 1, ksize=3)
        edges = ((np.abs(gx) + np.abs(gy)) > 1.0).astype(np.uint8)
        edges = cv2.dilate(edges, _rect(k2, k2))
        variety = float(edges.mean()) if edges.size else 0.0
        return self._score(area, core_px / float(cw * ch), solid, max(cw / ch, ch / cw), variety)

    def _merged(self, candidates: list[Candidate], inked: np.ndarray) -> list[Candidate]:
        """The candidates, the pieces of each picture merged into one (:func:`_merge_overlapping`), strong ones only."""
        # only cores that are pictures in their own right are cropped (and merged when their crops
        # overlap); headlines and cuts below the threshold must not glue onto a neighbouring picture
        cut = self.merge_score * self.threshold
        kept = [c for c in candidates if c.score >= cut]
        weak = [c for c in candidates if c.score < cut]
        return _merge_overlapping(kept, inked, _px(2 * self.merge_mm, self.dpi)) + weak

    def _regions_of(self, candidates: list[Candidate], h: int, w: int) -> list[Region]:
        """The :class:`Region` of each candidate on an ``h x w`` page, scored 0 where too small for a picture."""
        min_side = _px(self.min_side_mm, self.dpi)
        out = []
        for c in candidates:
            x0, y0, x1, y1 = c.crop
            cx0, cy0, cx1, cy1 = c.core
            bw, bh = x1 - x0, y1 - y0
            area = bw * bh / float(h * w)
            # the strongest core decides; a crop below the minimum size is an ornament, never kept
            score = c.score if area >= self.min_area and bw >= min_side and bh >= min_side else 0.0
            fill = c.core_px / float((cx1 - cx0) * (cy1 - cy0))
            out.append(Region(box=(x0 / w, y0 / h, x1 / w, y1 / h), area=area, fill=fill, score=score))
        return out

    def _with_line_art(
        self, regions: list[Region], sketch: np.ndarray, cell: int, strokes: np.ndarray, inked: np.ndarray
    ) -> list[Region]:
        """``regions`` (in place) with the line drawings (:meth:`_line_art`): each widens a picture it meets, or is one.

        The arguments after ``regions`` are :meth:`_line_art`'s."""
        # a line drawing that meets a textured picture is that picture's outline: its crop takes in the pieces
        # it meets, not the drawing's whole group (display type may stand within its reach)
        for art, pieces in self._line_art(sketch, cell, strokes, inked):
            met = False
            for i, r in enumerate(regions):
                if r.score >= self.threshold and _overlap(r.box, art.box):
                    box = r.box
                    for p in (p for p in pieces if _overlap(r.box, p)):
                        box = (min(box[0], p[0]), min(box[1], p[1]), max(box[2], p[2]), max(box[3], p[3]))
                    regions[i], met = replace(r, box=box, area=(box[2] - box[0]) * (box[3] - box[1])), True
            if not met:
                regions.append(art)
        return regions

    def _line_art(
        self,
        sketch: np.ndarray,
        cell: int,
        strokes: np.ndarray,
        inked: np.ndarray,
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
        dpi, mm = self.dpi, MM_PER_INCH / self.dpi
        ltype = cv2.CV_16U if cv2.countNonZero(sketch) < 65535 else cv2.CV_32S
        _n, _labels, stats, _ = cv2.connectedComponentsWithStats(sketch, connectivity=8, ltype=ltype)
        ext = math.ceil(self.line_art_mm / (cell * mm))
        x, y, cw, ch, cells = stats.T
        # (a network reaching the outermost cells is the scan's edge or the paper's, or a target's frame, not
        # a printed drawing: left out, it costs nothing to trace)
        cand = (cw >= ext) & (ch >= ext) & (5 * cells <= 3 * cw * ch) & (x > 0) & (y > 0)
        cand &= (x + cw < wc) & (y + ch < hc)
        cand[0] = False
        glyph = _px(self.glyph_mm, dpi)
        found: list[_Box] = []
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
                if np.count_nonzero(comp) <= self.blank_ink * pw * ph and _strokes_crossed(comp) >= 1.5:
                    found.append((int(gx0), int(gy0), int(gx0 + pw), int(gy0 + ph)))
        regions = []
        grow, min_side = _px(self.grow_mm, dpi), _px(self.min_side_mm, dpi)
        for gx0, gy0, gx1, gy1 in _near_groups(found, _px(2 * self.merge_mm, dpi)):
            inside = [b for b in found if gx0 <= b[0] and gy0 <= b[1] and b[2] <= gx1 and b[3] <= gy1]
            pieces = [(b[0] / w, b[1] / h, b[2] / w, b[3] / h) for b in inside]
            x0, y0, x1, y1 = _grow_to_ink(inked, gx0, gy0, gx1, gy1, grow)
            box = (x0 / w, y0 / h, x1 / w, y1 / h)
            bw, bh = x1 - x0, y1 - y0
            area = bw * bh / float(h * w)
            z = _size_evidence(area, self.line_area, max(bw / bh, bh / bw), self.max_aspect)
            score = 1.0 / (1.0 + math.exp(-z)) if bw >= min_side and bh >= min_side else 0.0
            regions.append((Region(box=box, area=area, fill=0.0, score=score), pieces))
        return regions

    def _lines_of_type(self, inkh: np.ndarray, xdpi: float) -> np.ndarray:
        """``True`` where a horizontal span of ``line_span_mm`` shows lines of type: bands of ink at most
        ``type_mm`` tall, each with a neighbour band of similar height (within 2x) across a gap (the
        leading) that is (nearly) empty along the whole span and less than half as tall as either band.
        Type of any size is set so; a picture's texture has no such full-span gaps every line, and a
        single picture band (a headpiece) has white gutters and lines of other sizes around it.
        ``inkh``: the ink map at ``xdpi`` horizontally, full resolution vertically."""
        h, wf = inkh.shape
        sw = min(wf, _px(self.line_span_mm, xdpi))
        step = max(1, sw // 4)
        # the span's mean ink, sampled every quarter span: means of quarter-span blocks (one exact reduction),
        # summed k at a time (a full-width box filter costs ~8x more on a newspaper page)
        blocks = _column_means(inkh, step, np.empty((h, max(1, wf // step)), np.float32))
        k = min(blocks.shape[1], max(1, round(sw / step)))
        n = blocks.shape[1] - k + 1
        dens = blocks[:, :n].copy()
        for i in range(1, k):
            dens += blocks[:, i : i + n]
        dens /= k
        cols = np.minimum(np.arange(n) * step + k * step // 2, wf - 1)
        # runs of inked rows per sampled column, each column padded with empty rows at both ends
        filled = np.zeros((cols.size, h + 2), np.int8)
        filled[:, 1:-1] = (dens >= self.leading_ink).T
        edge = np.diff(filled.ravel())
        starts, ends = np.flatnonzero(edge == 1) + 1, np.flatnonzero(edge == -1) + 1
        height = ends - starts
        gap = starts[1:] - ends[:-1]
        same = starts[1:] // (h + 2) == starts[:-1] // (h + 2)  # neighbours in one column
        lo, hi = np.minimum(height[1:], height[:-1]), np.maximum(height[1:], height[:-1])
        # display type only: smaller lines are told from texture by the row-minimum window already
        big = (lo >= _px(self.pitch_mm / 2, self.dpi)) & (hi <= _px(self.type_mm, self.dpi))
        pair = same & big & (2 * lo >= hi) & (2 * gap < lo)
        line = np.zeros(height.size, bool)
        line[1:] |= pair
        line[:-1] |= pair
        mark = np.zeros(filled.size + 1, np.int32)
        np.add.at(mark, starts[line], 1)
        np.add.at(mark, ends[line], -1)
        lines = (np.cumsum(mark[:-1]).reshape(filled.shape)[:, 1:-1] > 0).T
        out = np.zeros((h, wf), np.uint8)
        out[:, cols] = lines
        # the span that showed the lines is text throughout (a span centred near a column's edge reaches
        # into the next column, whose baselines need not line up)
        return cv2.dilate(out, _rect(sw, 1)).view(bool)

    def _score(self, area: float, fill: float, solid: float, aspect: float, variety: float = 1.0) -> float:
        """Log-linear evidence, squashed to 0..1; exactly 0.5 for a region at ``min_area``, ``fill_ref``,
        ``solid_ref`` and ``max_aspect``. Bigger helps up to a point (+1.5), smaller hurts steeply."""
        z = (
            _size_evidence(area, self.min_area, aspect, self.max_aspect)
            + 3.0 * math.log(max(fill, 1e-3) / self.fill_ref)
            - 10.0 * max(0.0, solid - self.solid_ref)
            - 8.0 * max(0.0, math.log(self.variety_ref / max(variety, 1e-3)))
        )
        return 1.0 / (1.0 + math.exp(-z))

    def release(self) -> None:
        """Free the work arrays kept between pages (see :func:`release_scratch`)."""
        release_scratch()

    def __call__(self, view: np.ndarray) -> Verdict:
        regions, _ = self.regions(view)
        score = max((r.score for r in regions), default=0.0)
        boxes = tuple(
            self._with_margin(r.box, view.shape[1], view.shape[0])
            for r in sorted(regions, key=lambda r: r.box[1])
            if r.score >= self.threshold
        )
        top = max(regions, key=lambda r: r.score, default=None)  # the best candidate, kept or not
        best = self._with_margin(top.box, view.shape[1], view.shape[0]) if top is not None and top.score > 0 else None
        return Verdict(keep=score >= self.threshold, score=score, boxes=boxes, best=best)

    def _with_margin(self, box: Box, width: int, height: int) -> Box:
        dx, dy = (self.margin_mm * self.dpi / MM_PER_INCH / side for side in (width, height))
        x0, y0, x1, y1 = box
        return (max(0.0, x0 - dx), max(0.0, y0 - dy), min(1.0, x1 + dx), min(1.0, y1 + dy))
