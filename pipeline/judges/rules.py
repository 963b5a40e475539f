"""Rules, frames and edge strips taken out of the ink: layout, not picture.

Column rules and frames are the one kind of non-text ink that also fills every row of a texture window, and a
page or column rule touching a picture would join it to everything else. This stage decides which ink is a
straight run at least ``line_mm`` long (:func:`line_mask`) and takes it out of the ink map and its masks, except
inside areas of ink (:func:`ink_areas`: a fine-screen photograph's or a dark passage's flat tone, whose straight
runs are tone, not rules), where the texture measure keeps them.
"""

from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np

from pipeline.judges.buffers import PageBuffers
from pipeline.judges.measure import COARSE, column_means, px, rect


class RuleSettings(Protocol):
    """What this stage reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    @property
    def dpi(self) -> float: ...

    line_mm: float
    rule_mm: float


def runs_open(packed: np.ndarray, length: int) -> np.ndarray:
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


def line_mask(inkb: np.ndarray, length: int) -> np.ndarray:
    """``1`` (uint8) on straight vertical/horizontal runs of ``inkb`` at least ``length`` long (rules, frames,
    scan edges), grown by 3 x 3.

    Column rules and frames are the one kind of non-text ink that also fills every row of a window; no stroke
    of a letter is that long, and a picture loses only a few strokes (and its solid blacks, which are no
    texture either). Vertical runs are opened on bit-packed rows (8x less memory traffic than ``cv2`` opening
    a full uint8 page with a ``length`` x 1 kernel); horizontal runs only on the few rows that can hold one
    (no transposes of the page), with the same result; the growth too is done on the packed rows."""
    h, w = inkb.shape
    packed = np.packbits(inkb, axis=1)
    lines = runs_open(packed, length)
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
        flat = cv2.morphologyEx(inkb.view(np.uint8)[rows], cv2.MORPH_OPEN, rect(length, 1))
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


def ink_areas(inked: np.ndarray, thick: int, side: int) -> list[tuple[slice, slice, np.ndarray]]:
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
    small = cv2.morphologyEx(small, cv2.MORPH_OPEN, rect(k, k))
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
    inside = cv2.erode(big[labels].view(np.uint8), rect(3, 3))
    found = []
    for x, y, bw, bh in stats[np.flatnonzero(big), :4]:
        rows, cols = slice(y * f, (y + bh) * f), slice(x * f, (x + bw) * f)
        cells = cv2.resize(inside[y : y + bh, x : x + bw], (bw * f, bh * f), interpolation=cv2.INTER_NEAREST)
        found.append((rows, cols, cells.view(bool) & inked[rows, cols]))
    return found


def without_rules(
    ink: np.ndarray, plane: np.ndarray, settings: RuleSettings, buffers: PageBuffers
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``inked``, ``raw``, ``inkh``: the page's ink without rules, frames and edge strips (layout, not picture).

    ``ink`` (in place) and its masks ``inked`` (> 0.5: the pictures' ink) and ``raw`` (> 0.3: strokes) lose
    every straight run, so no rule joins a picture to the rest of the page; ``inkh`` (the texture measure's
    ink, column means into ``plane``) keeps those inside areas of ink, whose tone is texture."""
    dpi = settings.dpi
    inked = np.greater(ink, 0.5, out=buffers.inked)
    lines = line_mask(inked, px(settings.line_mm, dpi))
    # rules and edge strips are bands: an area of ink (a fine-screen halftone or a dark passage, which the
    # view renders as solid grey at any screen finer than ~50 lpi) keeps its straight runs for the texture
    # measure; strokes and the region evidence below go without any straight run, as before
    areas = ink_areas(inked, px(settings.rule_mm, dpi), px(settings.line_mm, dpi))
    tones = [ink[rows, cols][mask] for rows, cols, mask in areas]
    np.copyto(ink, 0.0, where=lines.view(bool))
    for (rows, cols, mask), tone in zip(areas, tones, strict=True):
        ink[rows, cols][mask] = tone
    inkh = column_means(ink, COARSE, plane)
    for rows, cols, _mask in areas:
        np.copyto(ink[rows, cols], 0.0, where=lines[rows, cols].view(bool))
    # ``ink > 0.5`` with the rules gone, without another pass over the float page
    cv2.subtract(inked.view(np.uint8), lines, dst=inked.view(np.uint8))
    # strokes without rules: a page or column rule touching a picture would join it to everything else.
    # For strokes, rules are traced again at the faintest level that counts as a stroke (0.3): a hairline
    # rule printed (or resampled) near 0.5 breaks into short runs there, which would join its neighbours
    raw = np.greater(ink, 0.3, out=buffers.raw)
    faint = line_mask(raw, px(settings.line_mm, dpi))
    cv2.subtract(raw.view(np.uint8), faint, dst=raw.view(np.uint8))
    cv2.subtract(inked.view(np.uint8), faint, dst=inked.view(np.uint8))
    return inked, raw, inkh
