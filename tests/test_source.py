import csv
import io
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from factories import ARTICLE_CLI, encrypted_pdf, engraving, pdf_from_images, text_page, zero_page_pdf
from PIL import Image

from pipeline import source as source_module
from pipeline.source import MAX_ZIPS, PdfError, check_pdf, find_pdfs, gather_uploads, open_pdf, unpack_pdfs


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


def _picture(kind: str) -> bytes:
    data = io.BytesIO()
    Image.new("RGB", (24, 16), (200, 30, 30)).save(data, format=kind)
    return data.getvalue()


def _zipped(members: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, member in members.items():
            archive.writestr(name, member)
    return data.getvalue()


LOGIN_PAGE = b"\n  <!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form>...</form></body></html>\n"
NOT_PDFS = {
    "HTML": LOGIN_PAGE,
    "SVG/XML": b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"></svg>',
    "text": "# Notes\n\nA Markdown file, *named* `.pdf` — MuPDF would lay it out as pages.\n".encode(),
    "JPEG": _picture("JPEG"),
    "PNG": _picture("PNG"),
    "GIF": _picture("GIF"),
    "zip": _zipped({"page1.png": _picture("PNG")}),  # MuPDF reads it as a comic book archive
}


@pytest.mark.parametrize(("kind", "data"), NOT_PDFS.items(), ids=NOT_PDFS)
def test_content_that_is_not_a_pdf_is_refused_whatever_its_name(tmp_path: Path, kind: str, data: bytes) -> None:
    """MuPDF opens every one of these as pages (filetype="pdf" or not): the content is checked first."""
    path = tmp_path / "issue 12.pdf"
    path.write_bytes(data)
    with pytest.raises(PdfError, match=rf"^issue 12\.pdf: not a PDF: looks like {kind}$"):
        open_pdf(path)
    with pytest.raises(PdfError, match="not a PDF"):
        check_pdf(path)


def test_binary_data_of_no_known_kind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "noise.pdf"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(PdfError, match=r"^noise\.pdf: not a PDF: no %PDF- header in its first KB$"):
        open_pdf(path)


def test_junk_before_the_header_is_allowed_within_the_first_kb(tmp_path: Path) -> None:
    """Acrobat's rule: a PDF whose ``%PDF-`` starts within the first 1024 bytes (a mail gateway's or
    scanner's prefix) still opens; one that starts later is refused."""
    pdf = pdf_from_images(tmp_path / "scan.pdf", [text_page()] * 2).read_bytes()
    prefixed = tmp_path / "prefixed.pdf"
    prefixed.write_bytes(b"\x00\xff junk " * 125 + pdf)
    assert prefixed.read_bytes().index(b"%PDF-") == 1000
    assert check_pdf(prefixed) == 2
    late = tmp_path / "late.pdf"
    late.write_bytes(b"\x00" * 1024 + pdf)
    with pytest.raises(PdfError, match=r"^late\.pdf: not a PDF"):
        check_pdf(late)


def test_a_login_page_named_pdf_gets_its_error_row_and_the_run_goes_on(tmp_path: Path) -> None:
    """Through the CLI: the HTML file is one manifest row with the reason; the real PDF's page is processed."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "login.pdf").write_bytes(LOGIN_PAGE)
    pdf_from_images(tmp_path / "in" / "scan.pdf", [engraving(400, 500)])
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", tmp_path / "in", "-o", tmp_path / "out.zip", *ARTICLE_CLI, "--size", "64"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "login.pdf: not a PDF: looks like HTML" in result.stderr
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        rows = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))
    assert [(row["source"], row["page"], row["error"]) for row in rows] == [
        ("login.pdf", "", "login.pdf: not a PDF: looks like HTML"),
        ("scan.pdf", "1", ""),
    ]
    assert rows[1]["outputs"] == "scan_p0001.jpg"


@pytest.mark.parametrize("as_url", [False, True])
def test_a_fifo_or_a_device_named_as_a_pdf_is_refused_not_read_for_ever(tmp_path: Path, as_url: bool) -> None:
    """Given as a file:// URL, a fifo hung the run for good and /dev/zero was copied without end."""
    os.mkfifo(tmp_path / "pipe.pdf")
    (tmp_path / "zero.pdf").symlink_to("/dev/zero")
    for name in ("pipe.pdf", "zero.pdf"):
        given = (tmp_path / name).as_uri() if as_url else tmp_path / name
        with pytest.raises(FileNotFoundError, match=f"{name}: not a regular file"):
            find_pdfs([given])


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


def _damaged_member(path: Path, good: bytes) -> Path:
    """A zip of two good PDFs around one whose stored bytes were changed after the zip was made (bad CRC)."""
    _zip(path, {"a.pdf": good, "b.pdf": good.replace(b"%PDF", b"%PDX", 1), "c.pdf": good})
    data = path.read_bytes()
    at = data.index(b"%PDX")
    path.write_bytes(data[:at] + b"%PDF" + data[at + 4 :])  # the data no longer matches b.pdf's CRC
    return path


def test_one_damaged_or_long_named_member_costs_itself_not_the_zips_other_pdfs(tmp_path: Path) -> None:
    """A member with a bad CRC (or encrypted, or Deflate64 from Windows' Explorer), or a name over 255 bytes (~86
    CJK characters), made the whole zip "cannot be unpacked", its good PDFs thrown away with it."""
    good = pdf_from_images(tmp_path / "good.pdf", [text_page()]).read_bytes()
    damaged = _damaged_member(tmp_path / "damaged.zip", good)
    long = "報" * 100 + ".pdf"  # 304 bytes
    named = _zip(tmp_path / "named.zip", {"a.pdf": good, f"1890/{long}": good})
    names, problems = gather_uploads([damaged, named], tmp_path / "work", max_unpacked=2**24)
    assert list(names.values()) == [
        "damaged.zip › a.pdf",
        "damaged.zip › c.pdf",
        "named.zip › a.pdf",
        f"named.zip › 1890/{long}",
    ]
    assert problems == ["damaged.zip › b.pdf: cannot be unpacked (Bad CRC-32 for file 'b.pdf')"]
    assert all(check_pdf(path) == 1 for path in names)


def test_a_zip_of_too_many_pdfs_is_refused_before_a_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million empty members took minutes and 1.4 GB unpacking before a limit said no."""
    monkeypatch.setattr(source_module, "MAX_MEMBERS", 5)
    many = _zip(tmp_path / "many.zip", {f"{n}.pdf": b"" for n in range(6)})
    with pytest.raises(PdfError, match=r"many\.zip: holds 6 PDFs, more than 5 in one zip"):
        unpack_pdfs(many, tmp_path / "out", max_bytes=2**20)
    assert not (tmp_path / "out").exists()


def test_when_nothing_is_usable_ten_reasons_are_named_and_the_rest_counted(tmp_path: Path) -> None:
    """300,000 empty members made a 9 MB error message."""
    empties = _zip(tmp_path / "empties.zip", {f"{n}.pdf": b"" for n in range(25)})
    with pytest.raises(PdfError) as refused:
        gather_uploads([empties], tmp_path / "work", max_unpacked=2**20)
    assert str(refused.value).count("the file is empty") == 10 and str(refused.value).endswith("; and 15 more")


def test_a_members_name_stays_on_one_line_of_the_summary(tmp_path: Path) -> None:
    good = pdf_from_images(tmp_path / "good.pdf", [text_page()]).read_bytes()
    tricky = _zip(tmp_path / "tricky.zip", {"evil\nbox9.zip › fake.pdf: 500 pages\nx.pdf": good})
    names, _ = gather_uploads([tricky], tmp_path / "work", max_unpacked=2**20)
    assert list(names.values()) == ["tricky.zip › evil box9.zip › fake.pdf: 500 pages x.pdf"]


def test_uploads_are_named_by_their_resolved_paths_as_the_run_names_them(tmp_path: Path) -> None:
    """Reached through a symlink (macOS's /var is /private/var), the names did not match the run's own paths, and the
    Space's summary lost "archive.zip ›" from every member."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    good = pdf_from_images(tmp_path / "real" / "good.pdf", [text_page()])
    _zip(tmp_path / "real" / "box.zip", {"issue.pdf": good.read_bytes()})
    names, _ = gather_uploads(
        [tmp_path / "link" / "good.pdf", tmp_path / "link" / "box.zip"], tmp_path / "link" / "work", 2**20
    )
    assert all(path == path.resolve() for path in names) and list(names.values()) == ["good.pdf", "box.zip › issue.pdf"]


def test_gather_uploads_names_every_reason_when_nothing_is_usable(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_text("text")
    empty = _zip(tmp_path / "empty.zip", {"a.txt": b"x"})
    with pytest.raises(PdfError, match=r"empty\.zip: the zip holds no PDF; bad\.pdf: not a PDF"):
        gather_uploads([bad, empty], tmp_path / "work", max_unpacked=2**20)


def _bomb(path: Path, unpacked: int, members: int = 1) -> Path:
    """A zip bomb: ``.pdf`` members of a PDF header and zeros, ``unpacked`` bytes in all, about 1,000× smaller."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for number in range(members):
            with archive.open(f"issue-{number}.pdf", "w", force_zip64=True) as member:
                member.write(b"%PDF-1.4\n")
                for _ in range(unpacked // members // 2**20):
                    member.write(bytes(2**20))
    return path


def _on_disk(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0


def test_three_bombs_in_one_request_share_its_unpack_budget(tmp_path: Path) -> None:
    """Each bomb unpacks to 5× the budget: before, each zip had the whole budget to itself (3× on disk)."""
    budget = 8 * 2**20
    bombs = [_bomb(tmp_path / f"bomb{n}.zip", 40 * 2**20) for n in range(3)]
    assert all(b.stat().st_size < 100_000 for b in bombs)
    work, peak, done = tmp_path / "work", [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _on_disk(work))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with pytest.raises(PdfError) as error:
            gather_uploads(bombs, work, max_unpacked=budget)
    finally:
        done.set()
        sampler.join()
    assert max(peak[0], _on_disk(work)) <= budget, f"{max(peak[0], _on_disk(work)) / 2**20:.1f} MB on disk"
    assert _on_disk(work) == 0, "a refused zip's partial members are left on disk"
    reasons = str(error.value).split("; ")
    assert reasons[0] == "bomb0.zip: its PDFs would take more than 8 MB unpacked"
    left = r"its PDFs would take more than the 1\.0 MB left of this request's 8 MB unpacked"  # 1 MB chunks
    assert re.fullmatch(rf"bomb1\.zip: {left}", reasons[1]) and re.fullmatch(rf"bomb2\.zip: {left}", reasons[2])
    assert len(reasons) == 3


def test_a_request_unpacks_at_most_max_zips_archives(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "one.pdf", [text_page()]).read_bytes()
    zips = [_zip(tmp_path / f"z{n:02d}.zip", {"a.pdf": pdf}) for n in range(3)]
    names, problems = gather_uploads(zips, tmp_path / "work", max_unpacked=2**20, max_zips=2)
    assert list(names.values()) == ["z00.zip › a.pdf", "z01.zip › a.pdf"]
    assert problems == ["z02.zip: not unpacked, more than 2 zips in one request"]
    assert MAX_ZIPS == 20


def test_many_empty_members_are_charged_against_the_budget(tmp_path: Path) -> None:
    """Zero-byte members cost a file and a folder each: 1,000 of them do not fit in 1 MB."""
    bundle = _zip(tmp_path / "empty.zip", {f"{n}.pdf": b"" for n in range(1000)})
    with pytest.raises(PdfError, match=r"empty\.zip: its PDFs would take more than 1 MB unpacked"):
        unpack_pdfs(bundle, tmp_path / "out", max_bytes=2**20)
    assert not list((tmp_path / "out").iterdir())
