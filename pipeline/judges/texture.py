"""Texture cores: where the ink is a picture's 2-D texture, and the core regions they form.

Text is small marks set in lines: some row of every window a line pitch tall (``pitch_mm``) is (nearly) empty
along a short span (``span_mm``). Hatching, stippling and screen dots put ink into every row of such a window.
So this stage measures, at every pixel, the *minimum over that window of the ink density along the span* (the
row-minimum density): ~0 in text, high in pictures. Where it is dense (``core_density``), no row of the window
is much lighter than the darkest (``row_ratio``) and the pixel stands outside lines of type (:mod:`.typeset`),
it is core. The cores are then opened on a coarse grid (thin strips go) and closed over ``merge_mm`` into the
regions each candidate starts from (:mod:`.candidates`).
"""

from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np

from pipeline.judges.buffers import PageBuffers
from pipeline.judges.measure import COARSE, px, rect


class TextureSettings(Protocol):
    """What this stage reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    @property
    def dpi(self) -> float: ...

    span_mm: float
    pitch_mm: float
    hatch_mm: float
    row_ratio: float
    core_density: float
    merge_mm: float


def texture_cores(
    inkh: np.ndarray, typeset: np.ndarray, planes: list[np.ndarray], settings: TextureSettings, buffers: PageBuffers
) -> np.ndarray:
    """Texture cores (255, else 0, on the grid of ``inkh``): where the row-minimum density marks a picture.

    That is where every row of a window one line pitch tall is inked along the span and none is much
    lighter than the darkest, outside the lines of type ``typeset``; each such pixel is widened to its
    window's footprint. ``planes`` (the first of which is ``inkh``) are clobbered."""
    dpi = settings.dpi
    span, pitch = px(settings.span_mm, dpi / COARSE), px(settings.pitch_mm, dpi)
    # a 1 mm vertical blur merges hatching (pitch < 1 mm) but not text lines (pitch >= 2.2 mm)
    rowdens = cv2.blur(inkh, (span, px(settings.hatch_mm, dpi)), dst=planes[1])
    rowmin = cv2.erode(rowdens, rect(1, pitch), dst=planes[2])
    rowmax = cv2.dilate(rowdens, rect(1, pitch), dst=planes[0])
    # picture texture: every row of the window inked, and no row much lighter than the darkest
    np.multiply(rowmax, settings.row_ratio, out=rowmax)
    # (255 / 0 masks: the area reduction below needs no scaled copy)
    core = cv2.compare(rowmin, rowmax, cv2.CMP_GT, dst=buffers.core)
    dense = cv2.compare(rowmin, settings.core_density, cv2.CMP_GT, dst=buffers.dense)
    cv2.bitwise_and(core, dense, dst=core)
    # cores inside lines of type are no picture texture: large headline type is as dense as hatching
    np.copyto(core, 0, where=typeset)
    # the window footprint: a core pixel vouches for the whole window around it
    return cv2.dilate(core, rect(span, pitch))


def core_regions(core: np.ndarray, h: int, settings: TextureSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Core regions on the coarse grid: the cores there (0/1), and their regions' cv2 labels and stats.

    Region geometry is measured on a grid ``h // 3 x w // 3`` (``core``: the texture cores of a page ``h``
    tall); the cores are opened there, so that thin strips go, and closed over ``merge_mm`` into regions."""
    wf = core.shape[1]
    # region geometry on a coarse grid (dpi / 3): columns are already whole 3-column means
    hf = max(1, h // COARSE)
    core = cv2.threshold(cv2.resize(core, (wf, hf), interpolation=cv2.INTER_AREA), 127, 1, cv2.THRESH_BINARY)[1]
    cdpi = settings.dpi / COARSE
    # thin strips (rules, edges, single headline lines) cannot survive a 4 mm opening
    o = px(4.0, cdpi)
    core = cv2.morphologyEx(core, cv2.MORPH_OPEN, rect(o, o))
    c = px(settings.merge_mm, cdpi)
    merged = cv2.morphologyEx(core, cv2.MORPH_CLOSE, rect(c, c))
    # 16-bit labels when they cannot overflow (fewer inked cells than labels), for which cv2 computes the
    # stats 3x faster
    ltype = cv2.CV_16U if cv2.countNonZero(merged) < 65535 else cv2.CV_32S
    _n, labels, stats, _ = cv2.connectedComponentsWithStats(merged, connectivity=8, ltype=ltype)
    return core, labels, stats
