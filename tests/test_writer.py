import contextlib
import csv
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipeline.fit import encode_jpeg
from pipeline.journal import ResumeMismatch
from pipeline.layout import FolderLayout, ZipLayout, layout_for
from pipeline.manifest import COLUMNS, PageRecord
from pipeline.tasks import PageImage
from pipeline.writer import FolderWriter, OutputError, ZipWriter, read_images

JPEG = encode_jpeg(Image.fromarray(np.zeros((16, 16, 3), np.uint8)), 90)


def _manifest(archive: zipfile.ZipFile) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))


def _open(output: Path, run_id: str, resume: bool = True) -> ZipWriter | FolderWriter:
    return layout_for(output).open(run_id, resume)


def _commit(writer, page: int, kept: bool = True) -> None:
    name = f"doc_p{page:04d}.jpg"
    record = PageRecord("doc.pdf", page, kept=kept, score=float(page), outputs=[name] if kept else [])
    images = [PageImage(name, JPEG, "0" * 32 + ":" + "0" * 16, (16, 16), False, None, None)] if kept else []
    writer.commit(("/x/doc.pdf", page), record, images, [f"caption {page}"] * len(images))


def test_zip_stores_images_uncompressed_and_manifest_at_root(tmp_path: Path) -> None:
    writer = _open(tmp_path / "out.zip", "run")
    assert isinstance(writer, ZipWriter)
    _commit(writer, 1)
    _commit(writer, 2, kept=False)
    writer.close(complete=True, files={})
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        assert archive.getinfo("doc_p0001.jpg").compress_type == zipfile.ZIP_STORED
        assert archive.read("doc_p0001.jpg") == JPEG
        assert archive.read("doc_p0001.txt") == b"caption 1"
        assert json.loads(archive.read("metadata.jsonl"))["text"] == "caption 1"
        rows = _manifest(archive)
    assert list(rows[0]) == list(COLUMNS)
    assert (rows[0]["source"], rows[0]["page"], rows[0]["kept"], rows[0]["score"]) == ("doc.pdf", "1", "true", "1.0000")
    assert rows[0]["outputs"] == "doc_p0001.jpg" and rows[0]["error"] == ""
    assert rows[1]["kept"] == "false" and rows[1]["outputs"] == ""
    assert not (tmp_path / "out.zip.progress").exists()  # a complete run leaves only the output


def test_the_same_pages_give_the_same_zip_byte_for_byte(tmp_path: Path) -> None:
    """No clock in the zip: a dataset can be checked by its hash, and two runs compared by theirs."""
    for name in ("a.zip", "b.zip"):
        writer = _open(tmp_path / name, "run")
        _commit(writer, 1)
        writer.close(complete=True, files={"report.html": ["<html></html>"]})
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


def test_folder_writer_flushes_each_manifest_row(tmp_path: Path) -> None:
    writer = _open(tmp_path / "dataset", "run")
    assert isinstance(writer, FolderWriter)
    writer.commit(("/x/a.pdf", None), PageRecord("a.pdf", None, error="a.pdf: not a PDF"), [], [])
    rows = list(csv.DictReader((tmp_path / "dataset" / "manifest.csv").open()))
    assert rows == [dict.fromkeys(COLUMNS, "") | {"source": "a.pdf", "kept": "false", "error": "a.pdf: not a PDF"}]
    writer.close(complete=True, files={"report.html": ["<html>", "</html>"]})
    assert sorted(p.name for p in (tmp_path / "dataset").iterdir()) == ["manifest.csv", "metadata.jsonl", "report.html"]
    assert (tmp_path / "dataset" / "report.html").read_text() == "<html></html>"


@pytest.mark.parametrize("output", ["out.zip", "dataset/"])
def test_an_interrupted_output_resumes_without_losing_or_repeating_pages(tmp_path: Path, output: str) -> None:
    first = _open(tmp_path / output, "run")
    for page in (1, 2, 3):
        _commit(first, page, kept=page != 2)
    # Simulate kill -9: the process dies without close(); a torn line may end the progress file.
    progress = first.journal.path
    first.journal._file.close()
    with progress.open("a") as handle:
        handle.write('{"key": ["/x/doc.pdf", 4], "ro')
    second = _open(tmp_path / output, "run")
    assert second.journal.done == {("/x/doc.pdf", 1), ("/x/doc.pdf", 2), ("/x/doc.pdf", 3)}
    _commit(second, 4)
    second.close(complete=True, files={})
    if output.endswith(".zip"):
        with zipfile.ZipFile(tmp_path / output) as archive:
            assert archive.testzip() is None
            images = sorted(name for name in archive.namelist() if name.endswith(".jpg"))
            assert images == ["doc_p0001.jpg", "doc_p0003.jpg", "doc_p0004.jpg"]
            metadata = [json.loads(line)["file_name"] for line in archive.read("metadata.jsonl").splitlines()]
            assert metadata == images
            rows = _manifest(archive)
    else:
        rows = list(csv.DictReader((tmp_path / output / "manifest.csv").open()))
    assert [row["page"] for row in rows] == ["1", "2", "3", "4"]
    assert not progress.exists()


def test_resuming_a_different_run_is_refused(tmp_path: Path) -> None:
    writer = _open(tmp_path / "out.zip", "run-a")
    _commit(writer, 1)
    writer.close(complete=False, files={})
    with pytest.raises(ResumeMismatch, match="--no-resume"):
        _open(tmp_path / "out.zip", "run-b")
    fresh = _open(tmp_path / "out.zip", "run-b", resume=False)
    assert fresh.journal.done == set()
    fresh.close(complete=True, files={})


def _killed(output: Path, pages: int = 3) -> Path:
    """An output whose run was killed after ``pages`` pages (nothing closed, nothing finished); its progress file."""
    writer = _open(output, "run")
    for page in range(1, pages + 1):
        _commit(writer, page)
    _kill(writer)
    return writer.journal.path


def _kill(writer: ZipWriter | FolderWriter) -> None:
    """Let go of ``writer``'s files as a killed process does: the zip's directory never written, the lock gone."""
    writer.journal._file.close()
    if isinstance(writer, ZipWriter):
        writer._zip.fp = None  # or the ZipFile, garbage-collected, would finish the zip
        writer._file.close()
    else:
        writer._manifest.close()


class _KilledRewriting(type(Path())):
    """A path whose process is killed as soon as it opens a progress file anew ("w": emptied, nothing written)."""

    def open(self, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = super().open(mode, *args, **kwargs)
        if mode == "w" and self.name.endswith("progress"):
            handle.close()
            raise _Killed
        return handle


class _Killed(Exception):
    """The process died here."""


@pytest.mark.parametrize("layout", [ZipLayout, FolderLayout])
def test_a_rerun_killed_as_it_starts_keeps_the_progress_of_the_run_before(tmp_path: Path, layout: type) -> None:
    """A resume rewrote the whole progress file (emptied, then written): killed in between, the next rerun started
    the archive over. Now only a torn tail is cut off."""
    output = tmp_path / ("out.zip" if layout is ZipLayout else "dataset")
    progress = _killed(output)
    with progress.open("a") as handle:
        handle.write('{"key": ["/x/doc.pdf", 4], "ro')  # torn by the kill
    with contextlib.suppress(_Killed):
        _kill(layout(_KilledRewriting(output)).open("run", True))  # the rerun is killed as it starts
    third = layout(output).open("run", True)
    assert third.journal.done == {("/x/doc.pdf", 1), ("/x/doc.pdf", 2), ("/x/doc.pdf", 3)}
    _commit(third, 4)
    third.close(complete=True, files={})
    assert len(read_images(output)) == 4


@pytest.mark.parametrize("output", ["out.zip", "dataset/"])
def test_a_second_run_on_the_same_output_is_refused_while_the_first_writes(tmp_path: Path, output: str) -> None:
    """Two runs at once on one output made a corrupt zip that the first one reported as done."""
    first = _open(tmp_path / output, "run")
    _commit(first, 1)
    with pytest.raises(OutputError, match="another run is writing this output now"):
        _open(tmp_path / output, "run")
    with pytest.raises(OutputError, match="another run is writing this output now"):
        _open(tmp_path / output, "run", resume=False)
    _commit(first, 2)
    first.close(complete=True, files={})
    assert len(read_images(tmp_path / output)) == 2


@pytest.mark.parametrize("damage", ["missing", "shorter"])
def test_a_zip_without_the_pages_its_progress_file_lists_is_not_resumed(tmp_path: Path, damage: str) -> None:
    """Resumed, it declared entries with no data behind them: exit 0 and a corrupt zip."""
    _killed(tmp_path / "out.zip")
    if damage == "missing":
        (tmp_path / "out.zip").unlink()
    else:
        data = (tmp_path / "out.zip").read_bytes()
        (tmp_path / "out.zip").write_bytes(data[: len(data) // 2])
    with pytest.raises(OutputError, match=f"out.zip is {'missing' if damage == 'missing' else 'shorter'}.*--no-resume"):
        _open(tmp_path / "out.zip", "run")
    fresh = _open(tmp_path / "out.zip", "run", resume=False)
    _commit(fresh, 1)
    fresh.close(complete=True, files={})
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        assert archive.testzip() is None


@pytest.mark.parametrize(
    ("damage", "line"),
    [(lambda lines: [lines[0], b'{"key": ["/x/doc.pdf", 1], "row": {]}\n', *lines[2:]], 2),
     (lambda lines: [b'{"run": "r\x01"}\n', *lines[1:]], 1),
     (lambda lines: [lines[0], b'{"key": 7}\n', *lines[2:]], 2),
     (lambda lines: [lines[0], b"\xff\n", *lines[2:]], None)],
)  # fmt: skip
def test_a_damaged_progress_file_is_named_with_what_to_do(tmp_path: Path, damage, line: int | None) -> None:
    progress = _killed(tmp_path / "out.zip")
    progress.write_bytes(b"".join(damage(progress.read_bytes().splitlines(keepends=True))))
    where = f" at line {line} " if line else " "
    with pytest.raises(ResumeMismatch, match=f"out.zip.progress is damaged{where}.*pass --no-resume to start over"):
        _open(tmp_path / "out.zip", "run")


def test_manifest_records_boxes_as_page_fractions() -> None:
    row = PageRecord("a.pdf", 3, kept=True, score=0.9, boxes=((0.1, 0.2, 0.5, 0.6), (0, 0, 1, 0.25))).row()
    assert row["boxes"] == "0.1000 0.2000 0.5000 0.6000;0.0000 0.0000 1.0000 0.2500"


def test_unwritable_output_raises_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="cannot write"):
        _open(blocker / "out.zip", "run")


def test_read_images_returns_jpegs_with_names(tmp_path: Path) -> None:
    writer = _open(tmp_path / "out.zip", "run")
    for page in range(3):
        _commit(writer, page)
    writer.close(complete=True, files={})
    images = read_images(tmp_path / "out.zip", limit=2)
    assert [name for _, name in images] == ["doc_p0000.jpg", "doc_p0001.jpg"]
    assert images[0][0].size == (16, 16)
