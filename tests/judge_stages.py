"""The structure judge's stages run one after another on a drawn page, as ``StructureJudge._page_regions`` runs
them, so that a stage's test can look at what it hands on (and feed it what the stages before it made)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.judges.buffers import PageBuffers
from pipeline.judges.frame import dark_rows_cols, grey_range
from pipeline.judges.ink import page_ink
from pipeline.judges.measure import COARSE, column_means
from pipeline.judges.rules import without_rules
from pipeline.judges.staves import staves
from pipeline.judges.structure import StructureJudge
from pipeline.judges.typeset import lines_of_type


@dataclass
class Page:
    """A page's ink and masks, up to the texture stage (all copies: the buffers are reused by the next page)."""

    judge: StructureJudge
    ink: np.ndarray
    """The ink map, rules taken out."""
    typeset: np.ndarray
    inked: np.ndarray
    raw: np.ndarray
    inkh: np.ndarray
    music: list[tuple[int, int, int, int]]
    """The staves' boxes (view pixels)."""


def page(gray: np.ndarray, judge: StructureJudge | None = None) -> Page:
    judge = judge or StructureJudge()
    h, w = gray.shape
    buffers = PageBuffers(h, w)
    rows, cols, _dark = dark_rows_cols(gray, buffers.dark, grey_range(gray))
    ink = page_ink(gray, rows, cols, judge, buffers)
    planes = buffers.planes()
    coarse = column_means(ink, COARSE, planes[0])
    typeset = lines_of_type(coarse, judge.dpi / COARSE, judge)
    music = staves(coarse, COARSE, judge)
    inked, raw, inkh = without_rules(ink, planes[0], judge, buffers)
    return Page(judge, ink.copy(), typeset.copy(), inked.copy(), raw.copy(), inkh.copy(), music)


def coarse_share(mask: np.ndarray, box: tuple[int, int, int, int]) -> float:
    """Share of ``box`` (view pixels) set in ``mask`` of the page's coarse columns (``h x w // 3``)."""
    x0, y0, x1, y1 = box
    return float(
        np.count_nonzero(mask[y0:y1, x0 // COARSE : x1 // COARSE]) / ((y1 - y0) * (x1 // COARSE - x0 // COARSE))
    )
