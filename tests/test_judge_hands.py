"""Hands holding the page (``pipeline/judges/hands.py``): a region made of smooth tone coming in from the view's
edge scores 0; a picture inside the page, or smooth tone that does not reach the edge, keeps its score."""

from __future__ import annotations

import cv2
import numpy as np
from test_judge_structure import OCTAVO, book_page, engraving

from pipeline.judges.candidates import Region
from pipeline.judges.hands import off_the_edge


def hand(img: np.ndarray, reach: int) -> None:
    """A thumb's smooth tone (shading across it, no print's texture) coming in ``reach`` px from the left edge."""
    h, _w = img.shape
    mask = np.zeros(img.shape, np.uint8)
    cv2.ellipse(mask, (0, h // 2), (reach, 90), 0, 0, 360, 1, -1)
    shading = np.linspace(110, 150, img.shape[1])[None, :].repeat(h, axis=0).astype(np.uint8)
    img[mask > 0] = shading[mask > 0]


def region(box: tuple[int, int, int, int]) -> Region:
    h, w = OCTAVO
    return Region(box=(box[0] / w, box[1] / h, box[2] / w, box[3] / h), area=0.1, fill=0.5, score=0.9)


def test_a_hand_over_the_text_is_no_picture_and_an_engraving_is() -> None:
    img = book_page()
    engraving(img, (200, 40, 360, 200))
    hand(img, 150)
    over_hand, picture = region((0, 220, 150, 400)), region((200, 40, 360, 200))
    assert [r.score for r in off_the_edge([over_hand, picture], img, 0.3)] == [0.0, 0.9]


def test_smooth_tone_inside_the_page_is_no_hand() -> None:
    img = book_page()
    inside = img[200:420, 100:300]
    inside[:] = np.linspace(110, 150, 200)[None, :].astype(np.uint8)  # a flat photograph's grey, away from the edges
    assert off_the_edge([region((100, 200, 300, 420))], img, 0.3)[0].score == 0.9
