"""manifest.csv opened in a spreadsheet: text from outside never starts a formula (OWASP's CSV injection)."""

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from factories import ARTICLE, engraving, mixed_page, pdf_from_images, text_page

from pipeline import Options, run
from pipeline.dedupe import DEFAULT_THRESHOLD
from pipeline.journal import Journal
from pipeline.manifest import COLUMNS, FORMULA_STARTS, PageRecord, csv_text
from pipeline.orchestrator import run_pages
from pipeline.report import NOT_RECORDED
from pipeline.writer import read_manifest, read_text

HOSTILE = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


@pytest.mark.parametrize("text", HOSTILE)
def test_text_that_starts_like_a_formula_gets_a_quote(text: str) -> None:
    assert csv_text(text) == "'" + text
    assert csv_text(csv_text(text)) == csv_text(text), "idempotent: a row read back on resume is written unchanged"


def test_other_text_is_unchanged() -> None:
    assert [csv_text(t) for t in ("issue 1890.pdf", "'quoted", "a=b", "", " =x")] == [
        "issue 1890.pdf", "'quoted", "a=b", "", " =x"
    ]  # fmt: skip


def test_a_row_quotes_text_cells_but_not_numbers() -> None:
    record = PageRecord(
        "=cmd|'/C calc'!A0.pdf", 1, score=-0.25, boxes=((-0.01, 0.0, 1.0, 1.0),), error="-bad", warning="@warn"
    )
    row = record.row()
    assert (row["source"], row["error"], row["warning"]) == ("'=cmd|'/C calc'!A0.pdf", "'-bad", "'@warn")
    assert row["score"] == "-0.2500" and row["boxes"] == "-0.0100 0.0000 1.0000 1.0000", "numbers stay numbers"


def test_a_resumed_journal_writes_the_same_manifest(tmp_path: Path) -> None:
    """The journal keeps each row as written and keys pages by their path, which is never quoted: a resumed run
    finds its pages done and writes their rows unchanged (no second quote)."""
    records = [PageRecord("=x.pdf", page, kept=True, score=0.5, error="+e" if page == 2 else "") for page in (1, 2)]
    first = Journal(tmp_path / "progress", "run", resume=False)
    for record in records:
        first.commit(("/in/=x.pdf", record.page), record.row())
    first.close(remove=False)
    second = Journal(tmp_path / "progress", "run", resume=True)
    assert second.done == {("/in/=x.pdf", 1), ("/in/=x.pdf", 2)}
    assert list(second.rows()) == [record.row() for record in records]
    assert [(row["source"], row["error"]) for row in second.rows()] == [("'=x.pdf", ""), ("'=x.pdf", "'+e")]


def _cells(output: Path) -> list[list[str]]:
    """Every cell of manifest.csv as a spreadsheet reads it (header first)."""
    if output.is_dir():
        text = (output / "manifest.csv").read_text(encoding="utf-8")
    else:
        with zipfile.ZipFile(output) as archive:
            text = archive.read("manifest.csv").decode()
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("output", ["out.zip", "out"])
def test_a_run_over_formula_named_pdfs_writes_no_formula_cell(tmp_path: Path, output: str) -> None:
    names = ["=1+1.pdf", "+cmd.pdf", "-2.pdf", "@SUM(A1).pdf", "\tx.pdf"]
    pdfs = [pdf_from_images(tmp_path / name, [engraving(300, 400, seed=seed)]) for seed, name in enumerate(names)]
    (tmp_path / "=broken.pdf").write_text("not a PDF")  # its error row starts with its name
    run([*pdfs, tmp_path / "=broken.pdf"], tmp_path / output, Options(**ARTICLE, size=64))
    header, *rows = _cells(tmp_path / output)
    assert header == list(COLUMNS) and len(rows) == 6
    formulas = [cell for row in rows for cell in row if cell.startswith(FORMULA_STARTS)]
    assert formulas == [], "no cell a spreadsheet would run"
    by_column = [dict(zip(header, row, strict=True)) for row in rows]
    assert [row["source"] for row in by_column] == ["'" + name for name in (*names, "=broken.pdf")]
    assert by_column[-1]["error"].startswith("'=broken.pdf: not a PDF")
    outputs = [row["outputs"] for row in by_column[:-1]]
    assert outputs == ["_=1+1_p0001.jpg", "_+cmd_p0001.jpg", "_-2_p0001.jpg", "_@SUM(A1)_p0001.jpg", "_x_p0001.jpg"]


def test_a_resumed_run_over_formula_named_pdfs_matches_a_whole_one(tmp_path: Path) -> None:
    """Stopped after two pages and resumed (deduplication on: its outputs are read back by name)."""
    pdf = pdf_from_images(tmp_path / "=issue.pdf", [engraving(300, 400, seed=s) for s in range(4)])
    options = Options(**{**ARTICLE, "dedupe": DEFAULT_THRESHOLD}, size=64)
    run([pdf], tmp_path / "whole.zip", options)
    pages = run_pages([pdf], tmp_path / "resumed.zip", options)
    for _ in range(2):
        next(pages)
    pages.close()
    assert (tmp_path / "resumed.zip.progress").exists()
    summary = run([pdf], tmp_path / "resumed.zip", options)
    assert summary.resumed == 2
    assert _cells(tmp_path / "resumed.zip") == _cells(tmp_path / "whole.zip")
    assert {row[0] for row in _cells(tmp_path / "whole.zip")[1:]} == {"'=issue.pdf"}


def test_a_run_begun_before_page_kind_resumes_with_the_column_empty_for_its_pages(tmp_path: Path) -> None:
    """The progress rows of a run interrupted by a release without ``page_kind`` lack it: the resumed run writes
    the column (empty for those pages, measured for its own) and the report counts their kind as not recorded."""
    pdf = pdf_from_images(tmp_path / "issue.pdf", [mixed_page(seed=1), text_page(seed=2), mixed_page(seed=3)])
    options = Options(min_side=1, ocr=False)
    pages = run_pages([pdf], tmp_path / "out", options)
    next(pages)
    pages.close()
    progress = tmp_path / "out" / ".progress"
    header, *lines = progress.read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    assert [entry["row"].pop("page_kind") for entry in entries] == ["line art"]
    progress.write_text("\n".join([header, *map(json.dumps, entries)]) + "\n", encoding="utf-8")
    summary = run([pdf], tmp_path / "out", options)
    assert summary.resumed == 1
    rows = read_manifest(tmp_path / "out")
    assert list(rows[0]) == list(COLUMNS)
    assert [row["page_kind"] for row in rows] == ["", "", "line art"]
    report = read_text(tmp_path / "out", "report.html")
    assert f"<tr><th>{NOT_RECORDED}</th><td>1</td><td>0</td><td>0</td></tr>" in report
    assert "<tr><th>line art</th><td>1</td><td>0</td><td>0</td></tr>" in report
