"""Where the page is in its view (``pipeline/judges/frame.py``): a scanner bed's frame found from the edges, its
depth, the page's dark share, and boxes inside the frame mapped back onto the view."""

from __future__ import annotations

import numpy as np
from factories import on_bed, stained
from test_judge_structure import OCTAVO, book_page, engraving, paper

from pipeline.judges.frame import bed_runs, border_runs, dark_rows_cols, grey_range, onto_view


def dark_counts(img: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    return dark_rows_cols(img, np.empty(img.shape, bool), grey_range(img))


def test_a_page_on_a_black_bed_has_a_frame_as_deep_as_the_bed_and_a_bit() -> None:
    page = book_page()
    h, w = OCTAVO
    view = np.full((h + 60, w + 100), 12, np.uint8)
    view[20 : 20 + h, 70 : 70 + w] = page  # bed: 20 px above, 40 below, 70 left, 30 right
    rows, cols, dark = dark_counts(view)
    top, bottom, left, right = border_runs(rows, cols, *view.shape)
    margin_y, margin_x = max(1, view.shape[0] // 200), max(1, view.shape[1] // 200)
    assert (top, bottom, left, right) == (20 + margin_y, 40 + margin_y, 70 + margin_x, 30 + margin_x)
    assert 0.2 < dark < 0.5


def test_a_page_without_a_bed_has_no_frame() -> None:
    rows, cols, dark = dark_counts(book_page())
    assert border_runs(rows, cols, *OCTAVO) == (0, 0, 0, 0)
    assert dark < 0.2  # the text's share


def test_a_tinted_page_on_a_lighter_bed_has_the_bed_as_its_frame() -> None:
    view = on_bed(stained(book_page()), margins=(40, 60, 30, 50))
    margin_y, margin_x = max(1, view.shape[0] // 200), max(1, view.shape[1] // 200)
    assert bed_runs(view) == (40 + margin_y, 60 + margin_y, 30 + margin_x, 50 + margin_x)


def test_white_paper_on_a_white_bed_and_a_picture_on_its_own_sheet_have_no_bed() -> None:
    assert bed_runs(on_bed(book_page(), bed=245)) == (0, 0, 0, 0)  # one ground: the paper's own margin
    plate = paper(OCTAVO)
    engraving(plate, (30, 40, 370, 580))  # the middle is the picture, its paper as light as the margin
    assert bed_runs(on_bed(plate)) == (0, 0, 0, 0)
    assert bed_runs(on_bed(stained(book_page()), bed=200)) == (0, 0, 0, 0)  # a bed hardly lighter than the paper


def test_dark_counts_are_per_row_and_column_below_the_mid_tone() -> None:
    img = np.full((100, 80), 230, np.uint8)
    img[10:20, 5:45] = 20
    img[0, 0] = 0  # the 1st percentile is the black, the 99th the paper
    rows, cols, dark = dark_counts(img)
    assert rows[10:20].tolist() == [40] * 10 and rows[30] == 0
    assert cols[5:45].tolist() == [10] * 40
    assert dark == (400 + 1) / 8000


def test_a_box_inside_the_frame_lands_on_the_view() -> None:
    # the page is the view's middle: 100 px frame each side of a 1000 x 800 view
    assert onto_view((0.0, 0.0, 1.0, 1.0), (100, 100, 100, 100), 1000, 800) == (0.125, 0.1, 0.875, 0.9)
    assert onto_view((0.5, 0.5, 0.5, 0.5), (0, 200, 0, 0), 1000, 800) == (0.5, 0.4, 0.5, 0.4)
