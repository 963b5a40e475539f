"""Lines of type (``pipeline/judges/typeset.py``): display type stands in lines, a picture's texture does not."""

from __future__ import annotations

from judge_stages import coarse_share, page
from test_judge_structure import OCTAVO, engraving, headline_deck, paper


def test_a_headline_deck_is_lines_of_type_and_an_engraving_is_not() -> None:
    img = paper(OCTAVO)
    bottom = headline_deck(img, (40, 40, 360, 300), ["SERIES OF ATTACKS", "LAUNCHED IN WEST", "BY GERMAN"], 26)
    engraving(img, (60, bottom + 20, 340, bottom + 240))
    p = page(img)
    assert coarse_share(p.typeset, (60, 45, 340, bottom - 40)) > 0.5
    assert coarse_share(p.typeset, (60, bottom + 20, 340, bottom + 240)) < 0.05


def test_one_band_of_display_size_alone_is_no_line_of_type() -> None:
    """A single band (a headpiece) has no neighbour band of its height across empty leading."""
    img = paper(OCTAVO)
    headline_deck(img, (40, 40, 360, 300), ["ONE LINE ONLY"], 30)
    assert coarse_share(page(img).typeset, (40, 40, 360, 90)) == 0.0


def test_bands_of_display_size_apart_by_more_than_half_their_height_are_no_lines_of_type() -> None:
    """Leading is less than half the type's height; two bands farther apart are separate things (a
    headpiece over a tailpiece), not lines set together."""
    img = paper(OCTAVO)
    headline_deck(img, (40, 40, 360, 300), ["ONE LINE ONLY"], 30)
    headline_deck(img, (40, 100, 360, 300), ["ANOTHER LINE"], 30)  # a gap of a whole cap height
    assert coarse_share(page(img).typeset, (40, 40, 360, 140)) == 0.0
