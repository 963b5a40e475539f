import base64
import csv
import io
import math
import re
import zipfile
from pathlib import Path

import cv2
import numpy as np
import pymupdf
import pytest
from factories import (
    ARTICLE,
    blank_page,
    corrupt_page,
    encrypted_pdf,
    engraving,
    mixed_page,
    pdf_from_images,
    text_page,
    zero_page_pdf,
)
from page_kinds import synthetic_photo
from PIL import Image

from pipeline import Execution, NothingToDo, Options, ShardsLayout, run, run_pages
from pipeline.judges.sigma import SigmaJudge
from pipeline.kinds import candidate_kind
from pipeline.orchestrator import PAGES_PER_TASK, _task_size
from pipeline.tasks import Task
from pipeline.worker import process_task


def _read(zip_path: Path) -> tuple[list[dict[str, str]], zipfile.ZipFile]:
    archive = zipfile.ZipFile(zip_path)
    return list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode()))), archive


def _direct_sigma(pdf: Path, index: int) -> float:
    """The article's σ, computed independently: PyMuPDF at Matrix(2, 2), Pillow's grey conversion."""
    with pymupdf.open(pdf) as doc:
        pix = doc[index].get_pixmap(matrix=pymupdf.Matrix(2, 2))
        grey = Image.frombytes("RGB", (pix.width, pix.height), pix.samples).convert("L")
    return float(np.asarray(grey).std())


@pytest.fixture
def issue(tmp_path: Path) -> Path:
    pages = [text_page(seed=1), engraving(800, 1100, seed=2), blank_page(), mixed_page(seed=3), text_page(ink=0.05)]
    return pdf_from_images(tmp_path / "issue 1890.pdf", pages)


def test_sigma_run_writes_a_row_per_page_matching_the_articles_decisions(tmp_path: Path, issue: Path) -> None:
    summary = run([issue], tmp_path / "out.zip", Options(**ARTICLE, threshold=45))
    rows, archive = _read(tmp_path / "out.zip")
    assert [row["page"] for row in rows] == ["1", "2", "3", "4", "5"]
    for index, row in enumerate(rows):
        sigma = _direct_sigma(issue, index)
        # σ of the decoded scan is near MuPDF's drawing's; near the threshold it is MuPDF's drawing's.
        near = abs(sigma - 45) < SigmaJudge.exact_within
        assert float(row["score"]) == pytest.approx(sigma, abs=0.05 if near else SigmaJudge.exact_within)
        assert row["kept"] == ("true" if sigma > 45 else "false")
        assert row["outputs"] == (f"issue 1890_p{index + 1:04d}.jpg" if sigma > 45 else "")
        assert row["source"] == "issue 1890.pdf" and row["error"] == ""
    kept = [row["outputs"] for row in rows if row["kept"] == "true"]
    assert {"issue 1890_p0002.jpg", "issue 1890_p0004.jpg"} <= set(kept)
    assert "issue 1890_p0003.jpg" not in kept  # the blank page
    assert sorted(n for n in archive.namelist() if n.endswith(".jpg")) == sorted(kept)
    assert (summary.pages, summary.kept, summary.errors) == (5, len(kept), 0)
    for name in kept:
        info = archive.getinfo(name)
        assert info.compress_type == zipfile.ZIP_STORED
        with Image.open(archive.open(name)) as image:
            assert (image.format, image.size, image.mode) == ("JPEG", (1024, 1024), "RGB")


def test_size_and_quality_are_options(tmp_path: Path, issue: Path) -> None:
    run([issue], tmp_path / "small.zip", Options(**ARTICLE, size=256, quality=40))
    run([issue], tmp_path / "fine.zip", Options(**ARTICLE, size=256, quality=95))
    _, small = _read(tmp_path / "small.zip")
    _, fine = _read(tmp_path / "fine.zip")
    name = "issue 1890_p0002.jpg"
    assert Image.open(small.open(name)).size == (256, 256)
    assert small.getinfo(name).file_size < fine.getinfo(name).file_size


def test_bad_files_and_pages_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    inputs = tmp_path / "archive"
    inputs.mkdir()
    (inputs / "a_text.pdf").write_text("I am not a PDF")
    encrypted_pdf(inputs / "b_locked.pdf")
    zero_page_pdf(inputs / "c_empty.pdf")
    good = pdf_from_images(inputs / "d_good.pdf", [engraving(600, 800, seed=s) for s in range(3)])
    corrupt_page(good, 1)
    whole = pdf_from_images(tmp_path / "whole.pdf", [engraving(600, 800, seed=9)] * 2).read_bytes()
    (inputs / "e_truncated.pdf").write_bytes(whole[: len(whole) * 2 // 3])
    pdf_from_images(inputs / "f_after.pdf", [engraving(600, 800, seed=7)])

    summary = run([inputs], tmp_path / "out.zip", Options(**ARTICLE, size=128))
    rows, archive = _read(tmp_path / "out.zip")
    by_source = {}
    for row in rows:
        by_source.setdefault(row["source"], []).append(row)
    assert "not a PDF" in by_source["a_text.pdf"][0]["error"]
    assert "encrypted" in by_source["b_locked.pdf"][0]["error"]
    assert "no pages" in by_source["c_empty.pdf"][0]["error"]
    good_rows = by_source["d_good.pdf"]
    assert [r["page"] for r in good_rows] == ["1", "2", "3"]
    assert good_rows[1]["kept"] == "false" and "page 2" in good_rows[1]["error"]
    assert [r["kept"] for r in (good_rows[0], good_rows[2])] == ["true", "true"]
    assert all(r["error"] or r["page"] for r in by_source["e_truncated.pdf"])
    repaired = [r for r in by_source["e_truncated.pdf"] if r["page"] and not r["error"]]
    assert repaired and all("repaired" in r["warning"] for r in repaired)  # processed, but flagged
    assert all(r["warning"] == "" for r in by_source["f_after.pdf"] + [good_rows[0], good_rows[2]])
    assert by_source["f_after.pdf"][0]["kept"] == "true"
    assert {"d_good_p0001.jpg", "d_good_p0003.jpg", "f_after_p0001.jpg"} <= set(archive.namelist())
    assert summary.errors >= 4 and summary.warnings == len(repaired)


def test_interrupted_run_keeps_what_was_written(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "long.pdf", [engraving(300, 400, seed=s) for s in range(8)])

    def stop_after_three(record, progress):
        assert progress.total == 8
        if progress.done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run([pdf], tmp_path / "out.zip", Options(**ARTICLE, size=64), on_page=stop_after_three)
    rows, archive = _read(tmp_path / "out.zip")
    assert [row["page"] for row in rows] == ["1", "2", "3"]
    assert archive.testzip() is None
    assert {"long_p0001.jpg", "long_p0003.jpg"} <= set(archive.namelist())


def test_same_stem_in_two_folders_gets_distinct_names(tmp_path: Path) -> None:
    for folder in ("1890", "1891"):
        (tmp_path / folder).mkdir()
        pdf_from_images(tmp_path / folder / "issue.pdf", [engraving(300, 400)])
    run([tmp_path / "1890", tmp_path / "1891"], tmp_path / "out", Options(**ARTICLE, size=64))
    assert sorted(p.name for p in (tmp_path / "out").glob("*.jpg")) == ["issue_p0001.jpg", "issue~2_p0001.jpg"]


def test_no_pdf_among_inputs_is_nothing_to_do(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(NothingToDo):
        run([tmp_path], tmp_path / "out.zip")


@pytest.mark.parametrize("offset", [-1.0, 1.0])
def test_sigma_near_the_threshold_is_judged_on_mupdfs_drawing(tmp_path: Path, offset: float) -> None:
    # An engraving scanned at 300 dpi: at Matrix(2, 2) its decoded scan's σ is ~6 off the drawn page's.
    issue = pdf_from_images(tmp_path / "300dpi.pdf", [text_page(seed=1), engraving(800, 1100, seed=2)], dpi=300)
    sigma = _direct_sigma(issue, 1)
    run([issue], tmp_path / "out.zip", Options(**ARTICLE, threshold=sigma + offset))
    row = _read(tmp_path / "out.zip")[0][1]
    assert float(row["score"]) == pytest.approx(sigma, abs=0.05)
    assert row["kept"] == ("true" if offset < 0 else "false")


def test_small_runs_are_split_so_that_every_worker_gets_several_tasks() -> None:
    assert _task_size(32, 2) == 4  # 8 tasks for 2 workers, not 4 tasks of 8 pages
    assert _task_size(3, 4) == 1
    assert _task_size(100_000, 2) == PAGES_PER_TASK  # large runs: full ranges, few PDF opens


def test_a_page_whose_scan_is_truncated_is_processed_and_flagged(tmp_path: Path) -> None:
    _, jpeg = cv2.imencode(".jpg", engraving(600, 800, seed=3), [cv2.IMWRITE_JPEG_QUALITY, 90])
    doc = pymupdf.open()
    for data in (jpeg.tobytes(), jpeg.tobytes()[: len(jpeg) // 2]):  # page 2: half of its scan is missing
        page = doc.new_page(width=432, height=576)
        page.insert_image(page.rect, stream=data)
    doc.save(tmp_path / "cut.pdf")
    summary = run([tmp_path / "cut.pdf"], tmp_path / "out.zip", Options(**ARTICLE))
    rows, _ = _read(tmp_path / "out.zip")
    assert [r["error"] for r in rows] == ["", ""] and rows[0]["warning"] == ""
    assert rows[1]["warning"] and summary.warnings == 1


def test_closing_run_pages_stops_the_run_and_keeps_it_resumable(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "long.pdf", [engraving(300, 400, seed=s) for s in range(8)])
    options = Options(**ARTICLE, size=64)
    pages = run_pages([pdf], tmp_path / "out.zip", options)
    seen = [next(pages)[0].page for _ in range(2)]
    pages.close()  # what the Space's Cancel does
    rows, archive = _read(tmp_path / "out.zip")
    assert seen == [1, 2] and [row["page"] for row in rows] == ["1", "2"]
    assert archive.testzip() is None
    assert (tmp_path / "out.zip.progress").exists(), "an unfinished run stays resumable"

    summary = run([pdf], tmp_path / "out.zip", options)
    assert summary.resumed == 2 and summary.pages == 6
    assert [row["page"] for row in _read(tmp_path / "out.zip")[0]] == [str(n) for n in range(1, 9)]


def test_summary_counts_each_file(tmp_path: Path) -> None:
    pictures = pdf_from_images(tmp_path / "a.pdf", [engraving(300, 400, seed=1), engraving(300, 400, seed=2)])
    text = pdf_from_images(tmp_path / "b.pdf", [text_page()])
    (tmp_path / "c.pdf").write_text("no PDF")
    summary = run([pictures, text, tmp_path / "c.pdf"], tmp_path / "out.zip", Options(**ARTICLE, size=64, threshold=45))
    files = {path.name: file for path, file in summary.files.items()}
    assert list(files) == ["a.pdf", "b.pdf", "c.pdf"]
    assert (files["a.pdf"].pages, files["a.pdf"].kept, files["a.pdf"].images) == (2, 2, 2)
    assert files["a.pdf"].describe() == "2 pages, 2 kept (2 images), no errors"
    assert files["b.pdf"].pages == 1 and files["b.pdf"].images == files["b.pdf"].kept
    assert files["c.pdf"].describe().startswith("skipped (c.pdf: not a PDF")
    assert summary.describe().startswith(f"3 pages seen, {summary.kept} kept ({summary.images} images), 1 error,")


def test_max_pages_refuses_a_run_before_any_page(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "long.pdf", [text_page(300, 400, seed=s) for s in range(5)])
    with pytest.raises(NothingToDo, match="5 pages in all, more than the limit of 4"):
        run([pdf], tmp_path / "out.zip", Options(**ARTICLE), Execution(max_pages=4))
    assert not (tmp_path / "out.zip").exists()
    assert run([pdf], tmp_path / "out.zip", Options(**ARTICLE, size=64), Execution(max_pages=5)).pages == 5


def test_max_seconds_stops_with_what_is_done_and_resumes(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "long.pdf", [engraving(300, 400, seed=s) for s in range(12)])
    options = Options(**ARTICLE, size=64)
    summary = run([pdf], tmp_path / "out.zip", options, Execution(max_seconds=0))
    assert 0 < summary.pages < 12 and summary.stopped.startswith("stopped after the time budget of 0 s")
    assert f"{summary.pages} of 12 pages done" in summary.describe()
    rows, archive = _read(tmp_path / "out.zip")
    assert len(rows) == summary.pages and archive.testzip() is None
    rest = run([pdf], tmp_path / "out.zip", options)
    assert rest.resumed == summary.pages and not rest.stopped
    assert [row["page"] for row in _read(tmp_path / "out.zip")[0]] == [str(n) for n in range(1, 13)]


@pytest.mark.parametrize(
    ("crop", "expected"),
    [
        ("auto", ["plate_p0001.jpg", "plate_p0002_r1.jpg"]),  # the plate whole, the cut on a text page alone
        ("always", ["plate_p0001_r1.jpg", "plate_p0002_r1.jpg"]),
        ("never", ["plate_p0001.jpg", "plate_p0002.jpg"]),
        (True, ["plate_p0001_r1.jpg", "plate_p0002_r1.jpg"]),
    ],
)
def test_crop_auto_writes_a_small_picture_alone_and_a_plate_whole(tmp_path: Path, crop: str | bool, expected) -> None:
    plate = np.full((1400, 1000), 240, np.uint8)
    plate[100:1200, 80:920] = engraving(840, 1100, seed=4)  # the picture covers ~73 % of the page
    pdf = pdf_from_images(tmp_path / "plate.pdf", [plate, mixed_page(1000, 1400, seed=1)])  # ~35 %
    run([pdf], tmp_path / "out.zip", Options(crop=crop))
    rows, _ = _read(tmp_path / "out.zip")
    assert [row["outputs"] for row in rows] == expected


def test_crop_refuses_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="crop must be one of auto, always, never"):
        Options(crop="sometimes")


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"threshold": math.nan}, "threshold must be a finite number, got nan"),
        ({"threshold": math.inf}, "threshold must be a finite number, got inf"),
        ({"dedupe": 64}, "dedupe threshold must be between 0 and 63 bits, got 64"),
        ({"dedupe": -1}, "dedupe threshold must be between 0 and 63 bits, got -1"),
    ],
)
def test_options_no_run_could_finish_with_are_refused_when_built(setting: dict, said: str) -> None:
    """They were taken, every page judged, and the run then failed at its end (the report's histogram of a NaN
    threshold, the duplicate index's 63-bit limit): hours of an archive's pages for an error."""
    with pytest.raises(ValueError, match=said):
        Options(**setting)


def test_a_kept_picture_below_min_side_is_reported_not_written(tmp_path: Path) -> None:
    """The judge keeps the engraving (680×493 px at the scan's resolution), --min-side 512 drops it: the manifest,
    the summary and the report say which, why, with its thumbnail; a lower floor writes it."""
    pdf = pdf_from_images(tmp_path / "cut.pdf", [mixed_page(800, 1100, seed=1)], dpi=150)
    summary = run([pdf], tmp_path / "out.zip", Options(crop="always", min_side=512))
    rows, archive = _read(tmp_path / "out.zip")
    assert [(r["kept"], r["outputs"], r["too_small"]) for r in rows] == [("true", "", "cut_p0001_r1.jpg")]
    assert (summary.kept, summary.images, summary.too_small, summary.min_side) == (1, 0, 1, 512)
    assert "Kept but not written: 1 picture too small (shorter side below “Smallest picture side” 512 px; lower it" in (
        summary.describe()
    )
    (dropped,) = summary.not_written.pictures()
    assert dropped.label == "cut.pdf p1 r1" and summary.not_written.total == 1
    width, height = (int(n) for n in re.fullmatch(r"too small: (\d+)×(\d+) px < min side 512", dropped.reason).groups())
    assert abs(width - 680) <= 16 and abs(height - 493) <= 16 and dropped.side == height  # the box, not the page
    with Image.open(io.BytesIO(dropped.jpeg)) as thumbnail:
        assert max(thumbnail.size) == 200 and thumbnail.size[0] > thumbnail.size[1], "the region, not the page"
    report = archive.read("report.html").decode().split("<h2>Kept pictures not written</h2>", 1)[1]
    assert report.startswith("<p class='not-written'>1 picture kept by the judge was not written")
    assert f"cut.pdf p1 r1<br>{dropped.reason.replace('<', '&lt;')}</figcaption>" in report
    assert base64.b64encode(dropped.jpeg).decode() in report

    lower = run([pdf], tmp_path / "low.zip", Options(crop="always", min_side=256))
    assert (lower.images, lower.too_small, lower.not_written.pictures()) == (1, 0, [])
    assert "not written" not in lower.describe()


def test_workers_make_thumbnails_only_of_pictures_the_report_may_keep(tmp_path: Path) -> None:
    """A task says how large a dropped picture must be to enter the report's full collector: a smaller one
    is still reported (name, reason), without a thumbnail."""
    pdf = pdf_from_images(tmp_path / "cut.pdf", [mixed_page(800, 1100, seed=1)], dpi=150)
    options = Options(crop="always", min_side=1024)
    for over, has_thumbnail in ((-1, True), (10_000, False)):
        (result,) = process_task(Task(pdf, "cut", (0,), dropped_over=over), options)
        (dropped,) = result.dropped
        assert dropped.name == "cut_p0001_r1.jpg" and dropped.region == 1
        assert dropped.reason.startswith("too small: ") and dropped.reason.endswith(" px < min side 1024")
        assert (dropped.thumbnail is not None) == has_thumbnail
        assert result.record.too_small == ["cut_p0001_r1.jpg"]


def test_a_sharded_run_reports_the_pictures_not_written(tmp_path: Path) -> None:
    pages = [mixed_page(800, 1100, seed=s) for s in (1, 2)]
    pdf = pdf_from_images(tmp_path / "cut.pdf", pages, dpi=150)
    summary = run([pdf], ShardsLayout(str(tmp_path / "out.zip"), 1), Options(crop="always", dedupe=None))
    assert summary.too_small == 2
    report = (tmp_path / "out.report.html").read_text().split("<h2>Kept pictures not written</h2>", 1)[1]
    assert report.startswith("<p class='not-written'>2 pictures kept by the judge were not written")
    assert report.count('<img class="thumbnail"') == 2 and "cut.pdf p2 r1<br>too small: " in report


def test_a_run_started_by_the_release_before_the_captioner_resumes() -> None:
    """The run's identity, as the previous release (71d485e) computed it for the same inputs and options: adding
    ``captioner`` and ``{caption}`` to the default template (no byte of output changed without a model) must not
    refuse to resume a ten-hour archive run begun before the upgrade."""
    from pipeline.orchestrator import _run_id

    assert _run_id([Path("/data/a.pdf"), "https://host/b.pdf"], Options()) == "0db2bb208b7b566c"
    assert _run_id([Path("/data/a.pdf")], Options(trigger="vstnkmd", filter="sigma")) == "696e8d8ab7955b79"
    assert _run_id([Path("/data/a.pdf")], Options(captioner="m")) != _run_id([Path("/data/a.pdf")], Options())


def test_a_pages_kind_is_its_best_candidates_kept_or_dropped_not_the_whole_pages(tmp_path: Path) -> None:
    """A photograph among text columns: the page's ``page_kind`` is the photograph's (continuous tone), measured on
    the judge's view cut to its box, whether the page is kept or dropped; the whole page reads as line art."""
    page = text_page(seed=4)
    photo = synthetic_photo(200, 260, np.random.default_rng(0))
    page[100:300, 100:360] = cv2.cvtColor(np.clip(photo, 0, 255).astype(np.uint8), cv2.COLOR_RGB2GRAY)
    assert candidate_kind(page, colour=False) == "line art", "the premise: text dominates the page"
    pdf = pdf_from_images(tmp_path / "photo.pdf", [page])
    (kept,) = process_task(Task(pdf, "photo", (0,)), Options(min_side=1, ocr=False))
    assert kept.record.kept and kept.record.kind == "continuous tone"
    (dropped,) = process_task(Task(pdf, "photo", (0,)), Options(threshold=0.999, min_side=1, ocr=False))
    assert not dropped.record.kept and dropped.record.kind == "continuous tone"
    assert dropped.record.row()["page_kind"] == "continuous tone"
