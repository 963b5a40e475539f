"""How much ink each pixel holds, against the local paper tone: the map every later stage measures.

Toned, foxed or unevenly lit paper, a gutter shadow and light falling off toward an edge all become "white";
paper grain, bleed-through and blur count as nothing; 1-bit and grey scans give comparable maps. The scanner
frame's black (:mod:`.frame`) is cleared from the page's map, so it is never ink.
"""

from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np

from pipeline.judges.buffers import PageBuffers
from pipeline.judges.frame import border_runs
from pipeline.judges.measure import percentiles, px, rect


class InkSettings(Protocol):
    """What the ink map reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    @property
    def dpi(self) -> float: ...

    ink_lo: float
    ink_hi: float


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
    black = percentiles(small, [1])[0]
    k = max(3, px(25.0, dpi / f) | 1)
    paper = cv2.dilate(small.astype(np.float32), rect(k, k))
    # a gutter shadow or light falling off toward an edge runs the page's whole length, so no column (row)
    # of it has paper brighter than its brightest cell: the paper level is capped by that, where a picture's
    # column still reaches the margins' paper. An 8 mm max filter across ignores rules along the page.
    m = max(3, px(8.0, dpi / f) | 1)
    np.minimum(paper, cv2.dilate(small.max(axis=0, keepdims=True).astype(np.float32), rect(m, 1)), out=paper)
    np.minimum(paper, cv2.dilate(small.max(axis=1, keepdims=True).astype(np.float32), rect(1, m)), out=paper)
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


def page_ink(
    gray: np.ndarray, rows: np.ndarray, cols: np.ndarray, settings: InkSettings, buffers: PageBuffers
) -> np.ndarray:
    """The page's ink map (:func:`ink_map` into ``buffers.ink``, ``buffers.work`` its paper plane) with the dark
    scanner border (from the dark ``rows`` / ``cols`` counts) set to 0."""
    h, w = gray.shape
    work = buffers.work
    ink = ink_map(gray, settings.dpi, settings.ink_lo, settings.ink_hi, buffers.ink, work)
    top, bottom, left, right = border_runs(rows, cols, h, w)
    ink[:top] = ink[h - bottom :] = 0.0
    ink[:, :left] = ink[:, w - right :] = 0.0
    return ink
