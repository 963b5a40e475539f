"""--shard-size: numbered shards with their own manifests, an index, uploads to an fsspec URL, resume."""

import csv
import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import fsspec
import pytest
from factories import ARTICLE, engraving, pdf_from_images, text_page

from pipeline import Execution, Options, OutputError, ShardsLayout, run

OPTIONS = Options(**ARTICLE, size=64, threshold=45)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("archive")
    for number in range(2):
        pages = [engraving(300, 400, seed=s + 7 * number) if s % 3 else text_page(300, 400, seed=s) for s in range(7)]
        pdf_from_images(folder / f"issue{number}.pdf", pages)
    return folder


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory, archive: Path) -> tuple[list[dict], dict[str, bytes]]:
    """The same run unsharded: the rows and files every sharded run must add up to."""
    out = tmp_path_factory.mktemp("whole") / "out.zip"
    run([archive], out, OPTIONS)
    return _zip(out.read_bytes())


def _zip(data: bytes) -> tuple[list[dict], dict[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        rows = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))
        files = {name: archive.read(name) for name in archive.namelist() if name.endswith((".jpg", ".txt"))}
        return rows, files


def _shards(read, names: list[str]) -> tuple[list[dict], dict[str, bytes], list[int]]:
    rows, files, pages = [], {}, []
    for name in names:
        shard_rows, shard_files = _zip(read(name))
        rows += shard_rows
        pages.append(len(shard_rows))
        assert not set(files) & set(shard_files), "an image in two shards"
        files |= shard_files
    return rows, files, pages


def test_zip_shards_add_up_to_the_unsharded_output_with_an_index(tmp_path: Path, archive: Path, whole) -> None:
    summary = run([archive], ShardsLayout(str(tmp_path / "out.zip"), 5), OPTIONS)
    names = ["out-00000.zip", "out-00001.zip", "out-00002.zip"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*names, "out.index.json", "out.report.html"])
    rows, files, pages = _shards(lambda name: (tmp_path / name).read_bytes(), names)
    assert (rows, files) == whole and pages == [5, 5, 4]
    index = json.loads((tmp_path / "out.index.json").read_text())
    assert [shard["name"] for shard in index["shards"]] == names
    assert index["pages"] == 14 and index["images"] == summary.images == len(files) // 2
    assert [shard["bytes"] for shard in index["shards"]] == [(tmp_path / name).stat().st_size for name in names]


def test_folder_shards_load_as_one_imagefolder_dataset(tmp_path: Path, archive: Path, whole) -> None:
    datasets = pytest.importorskip("datasets")
    run([archive], ShardsLayout(str(tmp_path / "dataset"), 5), OPTIONS)
    assert sorted(p.name for p in (tmp_path / "dataset").iterdir()) == [
        "00000", "00001", "00002", "index.json", "report.html"
    ]  # fmt: skip
    loaded = datasets.load_dataset("imagefolder", data_dir=str(tmp_path / "dataset"), split="train")
    captions = {name: data.decode() for name, data in whole[1].items() if name.endswith(".txt")}
    assert len(loaded) == len(captions)
    assert sorted(loaded["text"]) == sorted(captions.values())


def test_shards_are_uploaded_to_a_url_as_they_close(
    tmp_path: Path, archive: Path, whole, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the staging folder goes here
    fs = fsspec.filesystem("memory")
    closed = []

    def watch(record, progress) -> None:
        closed.append(len(fs.glob("/uploads/out-*.zip")))

    run([archive], ShardsLayout("memory://uploads/out.zip", 5), OPTIONS, on_page=watch)
    names = [f"out-{n:05d}.zip" for n in range(3)]
    rows, files, _ = _shards(lambda name: fs.cat(f"/uploads/{name}"), names)
    assert (rows, files) == whole
    assert json.loads(fs.cat("/uploads/out.index.json"))["pages"] == 14
    assert closed[3:5] == [0, 1] and closed[8:10] == [1, 2], "a shard uploaded as soon as its last page is in"
    assert not list(tmp_path.glob("pipeline-shards-*")), "staging left behind"
    fs.rm("/uploads", recursive=True)

    run([archive], ShardsLayout("memory://uploads/dataset/", 5), OPTIONS)
    uploaded = sorted(path.removeprefix("/uploads/dataset/") for path in fs.find("/uploads/dataset"))
    assert uploaded == sorted(
        ["index.json", "report.html"]
        + [f"{n:05d}/{name}" for n in range(3) for name in ("manifest.csv", "metadata.jsonl")]
        + [f"{n:05d}/{name}" for n, names in enumerate(_names_by_shard(whole[0], 5)) for name in names]
    ), "folder shards: their files, no progress file"
    fs.rm("/uploads", recursive=True)


def _names_by_shard(rows: list[dict], size: int) -> list[list[str]]:
    """The images and captions each shard of ``size`` pages holds, from the unsharded manifest's rows."""
    shards = [rows[start : start + size] for start in range(0, len(rows), size)]
    return [[f"{name[:-4]}{ext}" for row in shard for name in _split(row["outputs"]) for ext in (".jpg", ".txt")]
            for shard in shards]  # fmt: skip


def _split(cell: str) -> list[str]:
    return cell.split(";") if cell else []


def test_an_interrupted_sharded_run_resumes_to_the_same_shards(tmp_path: Path, archive: Path, whole) -> None:
    first = run([archive], ShardsLayout(str(tmp_path / "out.zip"), 3), OPTIONS, Execution(max_seconds=0))
    assert first.stopped and 3 < first.pages < 14, "stopped with a shard closed and the next one open"
    assert (tmp_path / "out-00000.zip").exists() and (tmp_path / "out.zip.shards").exists()
    rest = run([archive], ShardsLayout(str(tmp_path / "out.zip"), 3), OPTIONS)
    assert rest.resumed == first.pages and not rest.stopped
    names = [f"out-{n:05d}.zip" for n in range(5)]
    rows, files, pages = _shards(lambda name: (tmp_path / name).read_bytes(), names)
    assert (rows, files) == whole and pages == [3, 3, 3, 3, 2]
    assert not list(tmp_path.glob("*.progress")) and not (tmp_path / "out.zip.shards").exists()


KILLED_CLOSING_A_SHARD = """
import os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from factories import ARTICLE
from pipeline import Options, ShardsLayout, run, shards

def killed_while_closing(self):
    self.current.close(False, {})  # the shard's zip is complete; its line in the state file is never written
    os._exit(137)

shards.ShardedWriter._close_shard = killed_while_closing
run([Path(sys.argv[1])], ShardsLayout(sys.argv[2], 3), Options(**ARTICLE, size=64, threshold=45))
"""


def test_a_run_killed_while_closing_a_shard_resumes_to_the_same_shards(tmp_path: Path, archive: Path, whole) -> None:
    """Killed after a shard's zip closed and before the state file listed it, the rerun kept that shard open with
    its full count of pages, never closed it again, and wrote every later page into it."""
    out = str(tmp_path / "out.zip")
    command = [sys.executable, "-c", KILLED_CLOSING_A_SHARD, str(archive), out, str(Path(__file__).parent)]
    killed = subprocess.run(command, cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=300)
    assert killed.returncode == 137, killed.stderr
    rest = run([archive], ShardsLayout(out, 3), OPTIONS)
    assert rest.resumed == 3
    names = [f"out-{n:05d}.zip" for n in range(5)]
    rows, files, pages = _shards(lambda name: (tmp_path / name).read_bytes(), names)
    assert (rows, files) == whole and pages == [3, 3, 3, 3, 2]


def test_an_output_url_needs_shards(archive: Path) -> None:
    with pytest.raises(OutputError, match=r"memory://x/out\.zip: an output URL needs --shard-size"):
        run([archive], "memory://x/out.zip", OPTIONS)
    with pytest.raises(ValueError, match="--shard-size must be at least 1 page"):
        run([archive], ShardsLayout("memory://x/out.zip", 0), OPTIONS)
    with pytest.raises(ValueError, match="--kohya-config and --shard-size"):
        run([archive], ShardsLayout("memory://x/out.zip", 5), Options(**ARTICLE, kohya_config=True))
