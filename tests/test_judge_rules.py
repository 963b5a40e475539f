"""Rules, frames and edge strips taken out of the ink (``pipeline/judges/rules.py``), areas of ink kept."""

from __future__ import annotations

import cv2
import numpy as np
from judge_stages import coarse_share, page
from test_judge_structure import INK, OCTAVO, book_page, continuous_photo, engraving

from pipeline.judges.ink import ink_map
from pipeline.judges.measure import px
from pipeline.judges.rules import ink_areas, line_mask


def test_line_mask_is_cv2s_opening_both_ways_grown_by_3x3() -> None:
    """The bit-packed rule tracer gives exactly what OpenCV's full-size morphology gives, at any width
    (byte boundaries), length and ink density, runs touching the edges included."""
    rng = np.random.default_rng(0)
    for _ in range(150):
        h, w, length = int(rng.integers(3, 70)), int(rng.integers(3, 90)), int(rng.integers(2, 40))
        inkb = rng.random((h, w)) < rng.uniform(0.3, 0.97)
        u8 = inkb.view(np.uint8)
        runs = cv2.morphologyEx(u8, cv2.MORPH_OPEN, np.ones((1, length), np.uint8))
        runs |= cv2.morphologyEx(u8, cv2.MORPH_OPEN, np.ones((length, 1), np.uint8))
        assert np.array_equal(line_mask(inkb, length), cv2.dilate(runs, np.ones((3, 3), np.uint8)))


def test_a_rule_is_taken_out_of_the_ink_and_its_masks_but_the_picture_stays() -> None:
    img = book_page()
    engraving(img, (60, 60, 340, 300), frame=False)
    cv2.line(img, (20, 320), (380, 320), INK, 2)  # a column-wide rule under the picture
    p = page(img)
    assert not p.inked[318:323, 20:380].any() and not p.raw[318:323, 20:380].any()
    assert not p.ink[318:323, 20:380].any()
    assert p.inked[80:280, 80:320].mean() > 0.2  # the hatching is no rule


def test_an_area_of_tone_keeps_its_straight_runs_for_the_texture_measure() -> None:
    """A fine-screen photograph is flat grey in the view: its rows are straight runs far longer than a rule,
    but it is thicker than any rule, so the texture measure's ink (``inkh``) keeps them; the strokes go without."""
    img = book_page()
    continuous_photo(img, (60, 60, 340, 300))
    thick, side = px(2.5, 72.0), px(15.0, 72.0)  # the judge's rule_mm and line_mm
    areas = ink_areas(ink_map(img, 72.0) > 0.5, thick, side)
    assert areas, "the photograph's dark passages are areas of ink"
    assert all(
        rows.start >= 56 and rows.stop <= 304 and cols.start >= 56 and cols.stop <= 344 for rows, cols, _ in areas
    )
    p = page(img)
    assert coarse_share(p.inkh > 0.3, (80, 80, 320, 280)) > 0.5
    assert p.raw[80:280, 80:320].mean() < 0.5  # its long runs are out of the strokes


def test_a_rule_is_no_area_of_ink() -> None:
    """Printed rules are at most ~2 mm thick: a 1.8 mm bar is no area, however long."""
    img = np.zeros(OCTAVO, bool)
    img[300:305, 20:380] = True
    assert ink_areas(img, px(2.5, 72.0), px(15.0, 72.0)) == []
