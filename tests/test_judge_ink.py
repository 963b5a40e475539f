"""The ink map (``pipeline/judges/ink.py``): ink against the local paper tone, the scanner frame cleared."""

from __future__ import annotations

import numpy as np
from judge_stages import page
from test_judge_structure import INK, OCTAVO, book_page, paper

from pipeline.judges.ink import ink_map


def test_unevenly_lit_toned_paper_is_no_ink_and_print_on_it_is() -> None:
    h, w = OCTAVO
    light = np.linspace(150, 235, w)[None, :].repeat(h, axis=0)  # light falling off toward the left edge
    img = light.astype(np.uint8)
    marks = np.zeros(OCTAVO, bool)
    marks[100:500:20, 30:370] = True  # rows of ink, each a pixel tall
    img[marks] = (light[marks] * INK / 235).astype(np.uint8)
    ink = ink_map(img, 72.0)
    assert ink[~marks].max() < 0.05
    assert ink[marks].min() > 0.9


def test_contrast_a_quarter_to_three_quarters_of_paper_to_black_is_ink_zero_to_one() -> None:
    img = np.full(OCTAVO, 235, np.uint8)
    img[100:200, 30:370] = 35  # the page's black
    for x, contrast in zip(range(40, 360, 40), (0.1, 0.25, 0.375, 0.5, 0.625, 0.75, 0.9, 1.0), strict=True):
        img[300:340, x : x + 30] = round(235 - contrast * 200)
    ink = ink_map(img, 72.0)[320, 55:360:40]
    assert np.allclose(ink, [0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 1.0], atol=0.01)


def test_the_scanner_frame_is_cleared_from_the_pages_ink() -> None:
    img = book_page()
    img[:, :30] = 10  # a black scanner bed along the left edge
    p = page(img)
    assert not p.ink[:, :30].any()
    assert p.ink[:, 40:].any()


def test_faint_print_on_a_low_contrast_page_is_ink() -> None:
    """Print only 45 levels darker than its paper (a faded page, nothing darker on it) is measured against a
    floor of 40 levels, not against a contrast the page does not have: it is ink, and the paper's grain is not."""
    img = paper(OCTAVO)
    lines = np.zeros(OCTAVO, bool)
    lines[100:500:10] = True  # hairlines of faint print
    img[lines] = 190
    ink = ink_map(img, 72.0)
    assert ink[lines].min() > 0.9
    assert ink[~lines].mean() < 0.01
