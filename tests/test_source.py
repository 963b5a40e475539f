from pathlib import Path

import pytest
from factories import encrypted_pdf, pdf_from_images, text_page, zero_page_pdf

from pipeline.source import PdfError, check_pdf, find_pdfs, open_pdf


def test_find_pdfs_searches_folders_recursively_and_drops_repeats(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    first = pdf_from_images(tmp_path / "a" / "one.pdf", [text_page()])
    second = pdf_from_images(tmp_path / "a" / "b" / "TWO.PDF", [text_page()])
    (tmp_path / "a" / "notes.txt").write_text("not a pdf")
    found = find_pdfs([tmp_path / "a", first])
    assert found == [second, first]  # sorted by path, the explicit repeat of one.pdf dropped


def test_find_pdfs_names_a_missing_input(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.pdf"):
        find_pdfs([tmp_path / "missing.pdf"])


def test_check_pdf_counts_pages(tmp_path: Path) -> None:
    assert check_pdf(pdf_from_images(tmp_path / "three.pdf", [text_page()] * 3)) == 3


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("hello, I am text"), "not a PDF"),
        (lambda p: p.write_bytes(b""), "empty"),
        (encrypted_pdf, "encrypted"),
        (zero_page_pdf, "no pages"),
    ],
    ids=["text-file", "empty-file", "encrypted", "zero-pages"],
)
def test_unusable_pdfs_raise_a_message_naming_the_file(tmp_path: Path, make, message: str) -> None:
    path = tmp_path / "bad input.pdf"
    make(path)
    with pytest.raises(PdfError, match=message) as error:
        open_pdf(path)
    assert "bad input.pdf" in str(error.value)


def test_truncated_pdf_is_repaired_or_refused_never_crashes(tmp_path: Path) -> None:
    whole = pdf_from_images(tmp_path / "whole.pdf", [text_page(seed=i) for i in range(3)]).read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(whole[: len(whole) // 2])
    try:
        pages = check_pdf(truncated)
    except PdfError as error:
        assert "truncated.pdf" in str(error)
    else:
        assert 1 <= pages <= 3
