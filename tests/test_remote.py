"""Inputs from URLs (fsspec): PDFs served by a loopback HTTP server, fetched ahead, deleted after, disk bounded."""

import functools
import http.server
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from factories import ARTICLE, ARTICLE_CLI, engraving, free_port, pdf_from_images, text_page

from pipeline import Execution, Options, find_pdfs, run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)  # a prefetch slot never freed hangs the run: fail, do not wait 10 min
OPTIONS = Options(**ARTICLE, size=64)


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the archive folder; ``/flaky/…`` is found (its first request succeeds: fsspec's existence check)
    but every download after fails with a server error."""

    requests: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        seen = self.requests[self.path] = self.requests.get(self.path, 0) + 1
        if self.path.startswith("/flaky/"):
            if seen > 1:
                self.send_error(500, "the storage back-end failed")
                return
            self.path = self.path.removeprefix("/flaky")
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three scanned issues and a file that is not a PDF, in a folder and a sub-folder."""
    folder = tmp_path_factory.mktemp("served")
    (folder / "1891").mkdir()
    for number, target in enumerate(["issue 1890.pdf", "issue-b.pdf", "1891/issue-c.pdf"]):
        pages = [engraving(400, 500, seed=s) if s % 2 else text_page(400, 500, seed=s, ink=0.05) for s in range(6)]
        pages[0] = engraving(400, 500, seed=10 + number)
        pdf_from_images(folder / target, pages)
    (folder / "notes.pdf").write_text("not a PDF at all\n" * 50)
    return folder


@pytest.fixture(scope="module")
def server(archive: Path) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving ``archive`` (directory listings included) from a thread."""
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", free_port()), functools.partial(Handler, directory=str(archive))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _contents(path: Path) -> tuple[bytes, dict[str, bytes]]:
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        files = {name: archive.read(name) for name in archive.namelist() if name.endswith((".jpg", ".txt"))}
        return archive.read("manifest.csv"), files


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own temporary folder, where the run's copies go (none of another run's are counted)."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _copies() -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob("pipeline-fetch-*/*/*"))


def test_a_served_folder_with_prefetch_1_gives_the_local_output_on_bounded_disk(
    tmp_path: Path, archive: Path, server: str, scratch: Path
) -> None:
    on_disk = []
    summary = run(
        [f"{server}/"],
        tmp_path / "remote.zip",
        OPTIONS,
        Execution(prefetch=1),
        lambda *_: on_disk.append(len(_copies())),
    )
    run([archive], tmp_path / "local.zip", OPTIONS)
    assert _contents(tmp_path / "remote.zip") == _contents(tmp_path / "local.zip")
    assert summary.remote == 4 and summary.pages == 18 and summary.errors == 1  # notes.pdf: recorded, skipped
    assert max(on_disk) == 1, "more than --prefetch 1 copies on local disk at once"
    assert not list(scratch.iterdir()), "copies left behind"
    archive_bytes = sum(f.stat().st_size for f in archive.rglob("*.pdf"))
    biggest = max(f.stat().st_size for f in archive.rglob("*.pdf"))
    assert summary.output_bytes < summary.peak_disk <= biggest + summary.output_bytes
    assert summary.peak_disk < archive_bytes


def test_remote_inputs_name_their_files_and_skip_what_cannot_be_fetched(tmp_path: Path, server: str) -> None:
    urls = [f"{server}/flaky/issue-b.pdf", f"{server}/issue%201890.pdf"]
    summary = run(urls, tmp_path / "out.zip", OPTIONS)
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        names = archive.namelist()
        manifest = archive.read("manifest.csv").decode()
    assert "issue-b.pdf,,false,,,,,,,,,http://127.0.0.1:" in manifest
    assert "/flaky/issue-b.pdf: cannot be fetched (" in manifest
    assert "issue 1890_p0001.jpg" in names and summary.pages == 6 and summary.errors == 1
    assert summary.files[urls[0]].error.endswith(")") and summary.files[urls[1]].pages == 6


def test_remote_inputs_are_found_by_glob_and_missing_ones_named(server: str) -> None:
    assert find_pdfs([f"{server}/issue*.pdf"]) == [f"{server}/issue%201890.pdf", f"{server}/issue-b.pdf"]
    with pytest.raises(FileNotFoundError, match=r"/missing\.pdf: no such file or folder"):
        find_pdfs([f"{server}/missing.pdf"])
    with pytest.raises(FileNotFoundError, match=r"nosuch://x/a\.pdf: cannot read this kind of URL"):
        find_pdfs(["nosuch://x/a.pdf"])


def test_cli_reports_peak_local_disk_for_remote_inputs(tmp_path: Path, server: str) -> None:
    command = [sys.executable, "-m", "pipeline", f"{server}/1891/", "-o", str(tmp_path / "out.zip")]
    result = subprocess.run(
        [*command, *ARTICLE_CLI, "--size", "64", "--prefetch", "1"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "6 pages, " in result.stdout
    assert "MB (1 remote PDFs fetched + output)" in result.stdout and "; peak local disk " in result.stdout


def test_a_remote_run_stops_on_its_time_budget_and_resumes(tmp_path: Path, archive: Path, server: str) -> None:
    first = run([f"{server}/"], tmp_path / "remote.zip", OPTIONS, Execution(max_seconds=0))
    assert first.stopped and 0 < first.pages < 18
    rest = run([f"{server}/"], tmp_path / "remote.zip", OPTIONS)
    assert rest.resumed == first.pages + first.errors and not rest.stopped
    run([archive], tmp_path / "local.zip", OPTIONS)
    assert _contents(tmp_path / "remote.zip") == _contents(tmp_path / "local.zip")
    with pytest.raises(ValueError, match="--prefetch must be at least 1"):
        run([f"{server}/"], tmp_path / "other.zip", OPTIONS, Execution(prefetch=0))


def test_a_presigned_url_is_read_by_its_path(server: str, scratch: Path, tmp_path: Path) -> None:
    """``https://host/a.pdf?X-Amz-Signature=…``: a PDF by its path, whatever its query (was: dropped, or a glob)."""
    signed = f"{server}/issue-b.pdf?X-Amz-Expires=60&X-Amz-Signature=abc%3D"
    assert find_pdfs([signed]) == [signed]
    summary = run([signed, f"{server}/issue%201890.pdf"], tmp_path / "out.zip", OPTIONS)
    assert [file.pages for file in summary.files.values()] == [6, 6]
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        names = [name for name in archive.namelist() if name.endswith(".jpg")]
    assert names and all(name.startswith(("issue-b_p", "issue 1890_p", "issue_1890_p")) for name in names), names
