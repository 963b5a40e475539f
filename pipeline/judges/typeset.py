"""Lines of type: ink set in lines, of any size, which is never picture texture.

Display type (headlines in capitals 5-25 mm tall) can be denser than the texture window is tall, but it too
stands in lines: bands of similar height separated by leading that is (nearly) empty along a span of 20 mm.
This stage decides where a span shows such lines; the texture cores there are dropped (:mod:`.texture`).
Body type needs no such test: the row-minimum window, taller than its line pitch, already holds its leading.
"""

from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np

from pipeline.judges.measure import column_means, px, rect


class TypeSettings(Protocol):
    """What this stage reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    @property
    def dpi(self) -> float: ...

    line_span_mm: float
    leading_ink: float
    pitch_mm: float
    type_mm: float


def lines_of_type(inkh: np.ndarray, xdpi: float, settings: TypeSettings) -> np.ndarray:
    """``True`` where a horizontal span of ``line_span_mm`` shows lines of type: bands of ink at most
    ``type_mm`` tall, each with a neighbour band of similar height (within 2x) across a gap (the
    leading) that is (nearly) empty along the whole span and less than half as tall as either band.
    Type of any size is set so; a picture's texture has no such full-span gaps every line, and a
    single picture band (a headpiece) has white gutters and lines of other sizes around it.
    ``inkh``: the ink map at ``xdpi`` horizontally, full resolution vertically."""
    h, wf = inkh.shape
    sw = min(wf, px(settings.line_span_mm, xdpi))
    step = max(1, sw // 4)
    # the span's mean ink, sampled every quarter span: means of quarter-span blocks (one exact reduction),
    # summed k at a time (a full-width box filter costs ~8x more on a newspaper page)
    blocks = column_means(inkh, step, np.empty((h, max(1, wf // step)), np.float32))
    k = min(blocks.shape[1], max(1, round(sw / step)))
    n = blocks.shape[1] - k + 1
    dens = blocks[:, :n].copy()
    for i in range(1, k):
        dens += blocks[:, i : i + n]
    dens /= k
    cols = np.minimum(np.arange(n) * step + k * step // 2, wf - 1)
    # runs of inked rows per sampled column, each column padded with empty rows at both ends
    filled = np.zeros((cols.size, h + 2), np.int8)
    filled[:, 1:-1] = (dens >= settings.leading_ink).T
    edge = np.diff(filled.ravel())
    starts, ends = np.flatnonzero(edge == 1) + 1, np.flatnonzero(edge == -1) + 1
    height = ends - starts
    gap = starts[1:] - ends[:-1]
    same = starts[1:] // (h + 2) == starts[:-1] // (h + 2)  # neighbours in one column
    lo, hi = np.minimum(height[1:], height[:-1]), np.maximum(height[1:], height[:-1])
    # display type only: smaller lines are told from texture by the row-minimum window already
    big = (lo >= px(settings.pitch_mm / 2, settings.dpi)) & (hi <= px(settings.type_mm, settings.dpi))
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
    return cv2.dilate(out, rect(sw, 1)).view(bool)
