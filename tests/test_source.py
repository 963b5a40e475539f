import zipfile
from pathlib import Path

import pytest
from factories import encrypted_pdf, pdf_from_images, text_page, zero_page_pdf

from pipeline.source import PdfError, check_pdf, find_pdfs, gather_uploads, open_pdf, unpack_pdfs


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


def test_a_pdf_cut_after_its_page_tree_is_repaired(tmp_path: Path) -> None:
    whole = pdf_from_images(tmp_path / "whole.pdf", [text_page(seed=i) for i in range(3)]).read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(whole[: len(whole) // 2])  # an interrupted download: the scans' data is cut, not the pages
    assert check_pdf(truncated) == 3


def test_a_pdf_cut_after_its_header_is_refused_naming_the_file(tmp_path: Path) -> None:
    whole = pdf_from_images(tmp_path / "whole.pdf", [text_page()]).read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(whole[:400])
    with pytest.raises(PdfError, match=r"^truncated\.pdf: not a PDF, or damaged beyond repair$"):
        check_pdf(truncated)


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_unpack_pdfs_keeps_order_names_and_same_named_files_apart(tmp_path: Path) -> None:
    one = pdf_from_images(tmp_path / "one.pdf", [text_page()]).read_bytes()
    two = pdf_from_images(tmp_path / "two.pdf", [text_page(seed=1)] * 2).read_bytes()
    bundle = _zip(
        tmp_path / "bundle.zip",
        {"1890/issue.pdf": one, "notes.txt": b"ignored", "1891/issue.PDF": two, "../../escape.pdf": one},
    )
    unpacked = unpack_pdfs(bundle, tmp_path / "out", max_bytes=10 * 2**20)
    assert list(unpacked.values()) == ["1890/issue.pdf", "1891/issue.PDF", "../../escape.pdf"]
    paths = list(unpacked)
    assert [check_pdf(p) for p in paths] == [1, 2, 1]
    assert all((tmp_path / "out") in p.parents for p in paths), "no member is written outside the folder"
    assert len({p.parent for p in paths}) == 3 and paths[0].name == "issue.pdf"


@pytest.mark.parametrize(
    ("members", "message"),
    [({"readme.txt": b"no pdf"}, "holds no PDF"), ({"big.pdf": b"%PDF" + b"0" * 3000}, "more than")],
)
def test_unpack_pdfs_refuses_what_it_cannot_use(tmp_path: Path, members: dict[str, bytes], message: str) -> None:
    with pytest.raises(PdfError, match=message):
        unpack_pdfs(_zip(tmp_path / "a.zip", members), tmp_path / "out", max_bytes=2000)


def test_unpack_pdfs_names_a_file_that_is_no_zip(tmp_path: Path) -> None:
    (tmp_path / "fake.zip").write_text("not a zip")
    with pytest.raises(PdfError, match=r"fake\.zip: not a zip archive"):
        unpack_pdfs(tmp_path / "fake.zip", tmp_path / "out", max_bytes=2000)


def test_gather_uploads_keeps_every_pdf_and_names_zip_members(tmp_path: Path) -> None:
    good = pdf_from_images(tmp_path / "good.pdf", [text_page()])
    bad = tmp_path / "bad.pdf"
    bad.write_text("text")
    bundle = _zip(tmp_path / "issues.zip", {"1890/good.pdf": good.read_bytes()})
    broken = tmp_path / "broken.zip"
    broken.write_text("not a zip")
    names, problems = gather_uploads([bad, good, bundle, broken], tmp_path / "work", max_unpacked=2**20)
    assert list(names.values()) == ["bad.pdf", "good.pdf", "issues.zip › 1890/good.pdf"]
    assert len(problems) == 1 and problems[0].startswith("broken.zip: not a zip archive")


def test_gather_uploads_names_every_reason_when_nothing_is_usable(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_text("text")
    empty = _zip(tmp_path / "empty.zip", {"a.txt": b"x"})
    with pytest.raises(PdfError, match=r"empty\.zip: the zip holds no PDF; bad\.pdf: not a PDF"):
        gather_uploads([bad, empty], tmp_path / "work", max_unpacked=2**20)
