"""The score (``pipeline/judges/score.py``): 0.5 exactly at the reference values, each term moving it the way
its docstring says, and a core's evidence telling hatching from a solid block."""

from __future__ import annotations

import numpy as np

from pipeline.judges.score import core_evidence, size_evidence, texture_score
from pipeline.judges.structure import StructureJudge


def test_a_region_at_the_reference_values_scores_one_half() -> None:
    j = StructureJudge()
    assert texture_score(j, j.min_area, j.fill_ref, j.solid_ref, j.max_aspect, j.variety_ref) == 0.5
    assert size_evidence(j.line_area, j.line_area, 1.0, j.max_aspect) == 0.0


def test_each_term_moves_the_score_its_way() -> None:
    j = StructureJudge()
    ref = (j.min_area, j.fill_ref, j.solid_ref, j.max_aspect, j.variety_ref)
    base = texture_score(j, *ref)
    for i, (worse, better) in enumerate([(0.5, 2.0), (0.5, 2.0), (1.5, 0.5), (2.0, 0.5), (0.5, 2.0)]):
        lower, higher = list(ref), list(ref)
        lower[i] *= worse
        higher[i] *= better
        assert texture_score(j, *lower) < base, i
        if i in (0, 1):  # size and fill help above their references
            assert texture_score(j, *higher) > base, i
        else:  # solid black below its reference, aspect within it and variety above it only cost nothing
            assert texture_score(j, *higher) == base, i
    # bigger helps only up to a point: +1.5 in log-odds at most
    assert texture_score(j, 100 * j.min_area, *ref[1:]) == 1 / (1 + np.exp(-1.5))


def test_a_cores_evidence_tells_hatching_from_a_solid_block() -> None:
    """Same core, same size: hatching has edges everywhere, a solid black block only at its border."""
    j = StructureJudge()
    h, w = 300, 300
    yy, xx = np.mgrid[0:h, 0:w]
    hatching = ((xx + yy) % 3 == 0).astype(np.float32)
    solid = np.zeros((h, w), np.float32)
    solid[30:270, 30:270] = 1.0
    box, grid = (10, 10, 90, 90), (100, 100)  # on the coarse grid (3x coarser)
    core_px = 80 * 80 // 2
    assert core_evidence(hatching, box, core_px, grid, j) > 0.5 > core_evidence(solid, box, core_px, grid, j)


def test_a_uniform_grey_patch_has_too_little_variety_for_a_picture() -> None:
    """A grey step of a test target: textured enough, not solid black, but with sharp edges only at its border."""
    j = StructureJudge()
    grey = np.zeros((300, 300), np.float32)
    grey[30:270, 30:270] = 0.6
    box, grid = (5, 5, 95, 95), (100, 100)  # the patch and a margin of paper around it
    assert core_evidence(grey, box, 90 * 90 // 2, grid, j) < 0.5
