"""Captions from the page's own words: the text printed in and around a picture, from the text layer."""

from pathlib import Path

import pymupdf
from factories import ARTICLE, mixed_page, pdf_from_images

from pipeline import Options, run
from pipeline.words import MAX_WORDS, clean_words, words_near
from pipeline.writer import read_manifest


def test_clean_words_joins_hyphens_drops_noise_and_caps_the_length() -> None:
    words = ["THE", "UNITED", "STATES", "CAPI-", "TOL.", "—", "p.", "12", "....", "l'église", "x7#q"]
    assert clean_words(words, line_ends={3}) == "the united states capitol l'église"
    assert len(clean_words(["word"] * 100).split()) == MAX_WORDS


def test_clean_words_reads_no_further_than_a_full_caption() -> None:
    """A newspaper page's text layer holds ~10,000 words; cleaning stops once the caption has MAX_WORDS, so a
    word after those is never read (here one that would fail if it were), and a shorter text is read to its end."""
    unread = object()  # joined to a string, it would raise TypeError
    words = ["the", "12", "capi-", "tol", *["word"] * MAX_WORDS, unread, "never"]
    cleaned = clean_words(words, line_ends={2})
    assert cleaned.split()[:2] == ["the", "capitol"] and len(cleaned.split()) == MAX_WORDS
    assert clean_words(["a", "little", "hyph-"], line_ends={2}) == "little hyph"


def _plate_with_legend(path: Path) -> Path:
    """A page with an engraving in its upper half, its legend under it, and a footer far below."""
    pdf_from_images(path, [mixed_page(800, 1100, seed=1)])
    with pymupdf.open(path) as doc:
        page = doc[0]
        below = page.rect.height / 2 + 14  # just under the engraving (upper half of the page)
        page.insert_text((80, below), "THE UNITED STATES CAPI-", fontsize=10, render_mode=3)  # invisible OCR
        page.insert_text((80, below + 12), "TOL AT WASHINGTON", fontsize=10, render_mode=3)
        page.insert_text((80, page.rect.height - 20), "Printed by the Gazette office", fontsize=8, render_mode=3)
        doc.saveIncr()
    return path


def test_words_near_a_box_are_its_legend_not_the_pages_footer(tmp_path: Path) -> None:
    with pymupdf.open(_plate_with_legend(tmp_path / "plate.pdf")) as doc:
        near = words_near(doc[0], [(0.125, 0.1, 0.875, 0.5)])
        everything = words_near(doc[0])
        assert near == "the united states capitol at washington"
        assert "gazette" in everything and "gazette" not in near


def test_captions_hold_the_words_printed_near_the_picture(tmp_path: Path) -> None:
    pdf = _plate_with_legend(tmp_path / "plate.pdf")
    bare = pdf_from_images(tmp_path / "bare.pdf", [mixed_page(800, 1100, seed=2)])  # no text layer
    options = Options(
        **{**ARTICLE, "filter": "structure", "min_side": 64}, trigger="vestnik mody", crop=True, size=256, ocr=False
    )
    run([pdf, bare], tmp_path / "out", options)
    rows = read_manifest(tmp_path / "out")
    captions = {row["source"]: (tmp_path / "out" / row["outputs"].replace(".jpg", ".txt")).read_text() for row in rows}
    assert captions == {
        "plate.pdf": "vestnik mody, monochrome line art, the united states capitol at washington",
        "bare.pdf": "vestnik mody, monochrome line art",
    }
