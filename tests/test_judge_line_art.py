"""Line art (``pipeline/judges/line_art.py``): outlines far larger than a glyph, crossed more than once, blank
inside, found without texture; a single stroke and text are not."""

from __future__ import annotations

import cv2
import numpy as np
from judge_stages import page
from test_judge_structure import INK, OCTAVO, book_page, card_symbols, geometric_figure, page_with_figure, paper

from pipeline.judges.line_art import line_art, stroke_cells, strokes_crossed
from pipeline.judges.measure import COARSE, px


def drawings(img: np.ndarray) -> list:
    p = page(img)
    cell_cols = max(1, round(px(3.0, p.judge.dpi) / COARSE))
    sketch = stroke_cells(p.inkh, COARSE, cell_cols * COARSE, cell_cols)
    return line_art(sketch, cell_cols * COARSE, p.raw.view(np.uint8), p.inked, p.judge)


def test_one_stroke_is_crossed_once_and_an_outline_twice() -> None:
    line = np.zeros((60, 60), np.uint8)
    cv2.line(line, (5, 50), (55, 10), 1, 1)
    box = np.zeros((60, 60), np.uint8)
    cv2.rectangle(box, (5, 5), (55, 55), 1, 1)
    assert strokes_crossed(line.astype(bool)) == 1.0
    assert strokes_crossed(box.astype(bool)) > 1.9


def test_an_outline_figure_is_one_drawing_boxed_on_its_ink() -> None:
    for draw, box in ((card_symbols, (105, 200, 295, 390)), (geometric_figure, (90, 170, 310, 390))):
        img, figure = page_with_figure(draw, box)
        found = drawings(img)
        assert len(found) == 1, draw.__name__
        region, pieces = found[0]
        h, w = OCTAVO
        want = (figure[0] / w, figure[1] / h, figure[2] / w, figure[3] / h)
        assert max(abs(a - b) for a, b in zip(region.box, want, strict=True)) < 0.03, draw.__name__
        assert region.score > 0.5 and region.fill == 0.0 and pieces


def test_a_text_page_has_no_line_art() -> None:
    assert drawings(book_page()) == []


def test_a_single_stroke_however_long_is_no_drawing() -> None:
    """A long diagonal or bent hairline is far larger than a glyph and blank inside, but it is one stroke: every
    row and column crosses it once."""
    line, bent = paper(OCTAVO), paper(OCTAVO)
    cv2.line(line, (40, 580), (360, 40), INK, 1, cv2.LINE_AA)
    cv2.polylines(bent, [np.array([(60, 60), (200, 300), (340, 320)])], False, INK, 1, cv2.LINE_AA)
    assert drawings(line) == [] and drawings(bent) == []


def test_two_parallel_strokes_are_crossed_twice_by_every_row() -> None:
    comp = np.zeros((50, 21), bool)
    comp[:, 0] = comp[:, 20] = True  # as their connected box holds them: one on its left edge
    assert strokes_crossed(comp) == 2.0
