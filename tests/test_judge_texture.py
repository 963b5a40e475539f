"""Texture cores (``pipeline/judges/texture.py``): every row of a line-pitch window inked in a picture, not in
text; the cores closed into one region per picture."""

from __future__ import annotations

import numpy as np
from judge_stages import coarse_share, page
from test_judge_structure import OCTAVO, book_page, engraving, halftone, headline_deck, paper

from pipeline.judges.buffers import PageBuffers
from pipeline.judges.texture import core_regions, texture_cores

PICTURE = (60, 60, 340, 300)


def cores(img: np.ndarray) -> np.ndarray:
    p = page(img)
    h, w = img.shape
    planes = PageBuffers(h, w).planes()
    planes[0][:] = p.inkh
    return texture_cores(planes[0], p.typeset, planes, p.judge, PageBuffers(h, w)).copy()


def test_an_engraving_and_a_halftone_are_texture_and_book_text_is_not() -> None:
    text = cores(book_page())
    assert not text.any()
    for draw in (engraving, halftone):
        img = book_page()
        img[PICTURE[1] - 10 : PICTURE[3] + 10, 40:360] = 235
        draw(img, PICTURE)
        core = cores(img)
        assert set(np.unique(core)) == {0, 255}
        assert coarse_share(core, (80, 80, 320, 280)) > 0.7, draw.__name__
        assert coarse_share(core, (60, 340, 340, 580)) == 0.0, "the text below is no texture"


def test_the_cores_of_one_picture_are_one_region_on_the_coarse_grid() -> None:
    img = book_page()
    img[50:310, 40:360] = 235
    engraving(img, PICTURE)
    h, _w = img.shape
    core, _labels, stats = core_regions(cores(img), h, page(img).judge)
    assert core.shape == (h // 3, 400 // 3) and set(np.unique(core)) <= {0, 1}
    assert len(stats) == 2, "the background and one region"
    x, y, bw, bh, _area = stats[1]
    # on the picture, give or take the window's footprint (~3 mm a side: 9 px) and the 4 mm opening
    assert np.abs(np.array([x, y, x + bw, y + bh]) * 3 - PICTURE).max() <= 30


def test_display_type_as_dense_as_hatching_gives_no_cores() -> None:
    """Large bold capitals fill every row of the window like hatching; lines of type are cleared."""
    img = paper(OCTAVO)
    headline_deck(img, (40, 40, 360, 600), ["SERIES OF ATTACKS", "LAUNCHED IN WEST", "BY GERMAN ARMIES"] * 3, 30)
    p = page(img)
    assert p.typeset.any()
    assert not cores(img).any()
