"""Candidates (``pipeline/judges/candidates.py``): a core's crop grown along its strokes to the gutter, the pieces
of one picture merged, weak cores kept apart, crops too small for a picture scored 0."""

from __future__ import annotations

import cv2
import numpy as np
from test_judge_structure import OCTAVO

from pipeline.judges.candidates import Candidate, joined, merged, regions_of, stroke_boxes
from pipeline.judges.structure import StructureJudge


def test_stroke_boxes_are_the_networks_under_the_samples_each_traced_once() -> None:
    strokes = np.zeros((100, 100), np.uint8)
    cv2.rectangle(strokes, (10, 10), (60, 40), 1, 1)  # an outline
    cv2.line(strokes, (70, 70), (90, 90), 1, 1)  # another network
    sy, sx = np.array([10, 40, 25, 80]), np.array([30, 30, 10, 80])  # three samples on the outline, one on the line
    assert stroke_boxes(strokes, sy, sx, 2, (0, 0, 100, 100)) == [(10, 10, 51, 31), (70, 70, 21, 21)]
    assert (strokes == 2).sum() > 0 and not (strokes == 1).any()
    # traced within its window only
    strokes[:] = 0
    cv2.line(strokes, (0, 50), (99, 50), 1, 1)
    assert stroke_boxes(strokes, np.array([50]), np.array([50]), 2, (40, 0, 60, 100)) == [(40, 50, 20, 1)]


def test_boxes_side_by_side_are_one_picture_unless_a_white_gutter_parts_them() -> None:
    inked = np.zeros((200, 300), bool)
    a, b = (10, 10, 100, 150), (120, 10, 200, 150)
    assert not joined(a, b, inked, 40), "a white gutter between"
    inked[10 + 7 * np.arange(20), 100 + np.arange(20)] = True  # a light diagonal stroke across the gap
    assert joined(a, b, inked, 40), "ink in every column of the gap"
    assert not joined(a, b, inked, 10), "but farther apart than the reach"
    assert joined((10, 10, 100, 150), (90, 100, 200, 190), np.zeros((200, 300), bool), 0), "overlapping"


def candidate(crop: tuple[int, int, int, int], score: float) -> Candidate:
    return Candidate(crop=crop, core=(crop[0] // 3, crop[1] // 3, crop[2] // 3, crop[3] // 3), core_px=100, score=score)


def test_strong_candidates_of_one_picture_merge_and_weak_ones_never_glue_on() -> None:
    judge = StructureJudge()
    inked = np.ones(OCTAVO, bool)  # no gutter anywhere
    strong = [candidate((40, 40, 200, 200), 0.8), candidate((210, 40, 360, 200), 0.3)]
    weak = candidate((40, 210, 360, 260), 0.1)  # below merge_score x threshold: a headline
    (one, alone) = merged([*strong, weak], inked, judge)
    assert one.crop == (40, 40, 360, 200) and one.score == 0.8 and one.core_px == 200
    assert alone == weak


def test_a_crop_too_small_or_too_narrow_for_a_picture_scores_0() -> None:
    judge = StructureJudge()
    h, w = OCTAVO
    big, narrow, small = (
        candidate((40, 40, 300, 300), 0.9),
        candidate((40, 40, 70, 600), 0.9),
        candidate((0, 0, 60, 60), 0.9),
    )
    regions = regions_of([big, narrow, small], h, w, judge)
    assert [r.score for r in regions] == [0.9, 0.0, 0.0]  # narrow: 30 px < 15 mm; small: 1.5 % of the page
    assert regions[0].box == (40 / w, 40 / h, 300 / w, 300 / h)
    assert regions[0].fill == 100 / (87 * 87)  # of the core box on the coarse grid
