"""Inputs from URLs (fsspec): PDFs served by a loopback HTTP server, fetched ahead, deleted after, disk bounded."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest
from factories import ARTICLE, ARTICLE_CLI, engraving, pdf_from_images, serve, text_page

from pipeline import Execution, Options, fetch, find_pdfs, run, source

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)  # a prefetch slot never freed hangs the run: fail, do not wait 10 min
OPTIONS = Options(**ARTICLE, size=64)


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
    """``http://127.0.0.1:PORT`` serving ``archive`` (directory listings included) and the hostile prefixes."""
    with serve(archive) as url:
        yield url


def _contents(path: Path) -> tuple[bytes, dict[str, bytes]]:
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        files = {name: archive.read(name) for name in archive.namelist() if name.endswith((".jpg", ".txt"))}
        return archive.read("manifest.csv"), files


@pytest.fixture
def scratch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own temporary folder, where the run's copies go (none of another run's are counted).

    A short path in the system's temporary folder, not under ``tmp_path``: a CLI run with ``TMPDIR`` there puts
    multiprocessing's forkserver socket in it, and a Unix socket's path may not pass 107 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="scratch-"))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _copies(folder: Path | None = None) -> list[Path]:
    """Fetched copies (whole or partial) in ``folder`` (default: the temporary folder), whatever run made them."""
    return [p for p in Path(folder or tempfile.gettempdir()).glob("pipeline-*/**/*") if p.is_file()]


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
    assert "issue-b.pdf,,false,,,,,,,,,,http://127.0.0.1:" in manifest  # the error, 13th column
    assert "/flaky/issue-b.pdf: cannot be fetched (HTTP 500 the storage back-end failed)" in manifest
    assert "issue 1890_p0001.jpg" in names and summary.pages == 6 and summary.errors == 1
    assert summary.files[urls[0]].error.endswith(")") and summary.files[urls[1]].pages == 6


def test_a_download_that_would_fill_the_disk_is_stopped_and_its_file_skipped(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endless or huge remote file filled the disk before it failed (then a page's commit could find no room)."""
    monkeypatch.setattr(fetch, "DISK_RESERVE", shutil.disk_usage(tmp_path).free)  # no room for one more chunk
    url = f"{server}/issue%201890.pdf"
    summary = run([url], tmp_path / "out.zip", OPTIONS)
    assert summary.errors == 1 and summary.pages == 0
    assert summary.files[url].error.endswith("of disk free for the output)"), summary.files[url].error


@pytest.mark.parametrize("listed", ["endless/", "endless/*.pdf"])
def test_a_folder_listing_that_never_ends_is_refused_not_read_into_memory(
    server: str, monkeypatch: pytest.MonkeyPatch, listed: str
) -> None:
    """fsspec reads an HTTP listing whole: one that never ended took 4 GB in 6 s and went on growing."""
    monkeypatch.setattr(source, "MAX_LISTING", 4 << 20)
    with pytest.raises(FileNotFoundError, match=r"endless/.*: its listing is larger than 4 MB"):
        find_pdfs([f"{server}/{listed}"])


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
    """Each PDF comes 0.6 s after it is asked for: the 1.5 s budget ends in the third download (prefetch 2),
    which leaves no row (the rerun fetches it again)."""
    first = run([f"{server}/late/"], tmp_path / "remote.zip", OPTIONS, Execution(max_seconds=1.5))
    assert first.stopped and 0 < first.pages < 18
    rest = run([f"{server}/late/"], tmp_path / "remote.zip", OPTIONS)
    assert rest.resumed == first.pages + first.errors and not rest.stopped
    run([archive], tmp_path / "local.zip", OPTIONS)
    assert _contents(tmp_path / "remote.zip") == _contents(tmp_path / "local.zip")
    with pytest.raises(ValueError, match="--prefetch must be at least 1"):
        run([f"{server}/"], tmp_path / "other.zip", OPTIONS, Execution(prefetch=0))


def test_a_remote_file_fetched_in_time_is_still_cut_by_the_time_budget_between_its_pages(tmp_path: Path) -> None:
    """One served file of 400 small pages (one scan, so ~100 kB): fetched in milliseconds, its pages take seconds.
    The 0.5 s budget stops the run between tasks, its pages counted with the fetched file's (the download deadline
    alone cannot stop it: nothing is left to download)."""
    folder = tmp_path / "served"
    folder.mkdir()
    single = pdf_from_images(tmp_path / "page.pdf", [engraving(400, 500, seed=1)])
    with pymupdf.open(single) as page, pymupdf.open() as doc:
        for _ in range(400):
            doc.insert_pdf(page)
        doc.save(folder / "annual.pdf", garbage=4)  # the 400 pages share one scan
    with serve(folder) as url:
        summary = run([f"{url}/annual.pdf"], tmp_path / "remote.zip", OPTIONS, Execution(max_seconds=0.5))
    assert summary.stopped.startswith("stopped after the time budget of 0.5 s, "), summary.stopped
    assert 0 < summary.pages < 400


def test_a_presigned_url_is_read_by_its_path(server: str, scratch: Path, tmp_path: Path) -> None:
    """``https://host/a.pdf?X-Amz-Signature=…``: a PDF by its path, whatever its query (was: dropped, or a glob)."""
    signed = f"{server}/issue-b.pdf?X-Amz-Expires=60&X-Amz-Signature=abc%3D"
    assert find_pdfs([signed]) == [signed]
    summary = run([signed, f"{server}/issue%201890.pdf"], tmp_path / "out.zip", OPTIONS)
    assert [file.pages for file in summary.files.values()] == [6, 6]
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        names = [name for name in archive.namelist() if name.endswith(".jpg")]
    assert names and all(name.startswith(("issue-b_p", "issue 1890_p", "issue_1890_p")) for name in names), names


def test_a_drip_fed_download_is_stopped_by_the_time_budget(tmp_path: Path, server: str, scratch: Path) -> None:
    """1 byte a second of a declared 10 MB: the 3 s budget stops the download itself (was: aiohttp's 300 s,
    then an empty error), and the file gets no row, so a rerun fetches it again."""
    start = time.perf_counter()
    summary = run([f"{server}/drip/big.pdf"], tmp_path / "out.zip", OPTIONS, Execution(max_seconds=3))
    seconds = time.perf_counter() - start
    assert seconds < 3 + 10, f"the drip held the run {seconds:.0f} s"
    assert summary.stopped.startswith("stopped after the time budget of 3 s during a download")
    assert summary.pages == summary.errors == 0 and (tmp_path / "out.zip.progress").exists()
    assert not _copies(scratch), "copies left behind"


def test_a_stalled_download_gives_up_after_the_read_timeout(
    tmp_path: Path, server: str, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headers, then nothing: the read timeout names the silence; the next file is processed."""
    monkeypatch.setattr(source, "READ_TIMEOUT", 1.0)
    urls = [f"{server}/stall/a.pdf", f"{server}/issue-b.pdf"]
    start = time.perf_counter()
    summary = run(urls, tmp_path / "out.zip", OPTIONS)
    assert time.perf_counter() - start < 20
    assert summary.files[urls[0]].error == f"{urls[0]}: cannot be fetched (no data for 1 s)"
    assert summary.files[urls[1]].pages == 6 and not summary.stopped


def test_http_failures_are_named_by_their_status(server: str) -> None:
    """A 500 or a redirect loop was reported as "no such file or folder"."""
    with pytest.raises(
        FileNotFoundError, match=r"/broken/a\.pdf: cannot be reached \(HTTP 500 Internal Server Error\)$"
    ):
        find_pdfs([f"{server}/broken/a.pdf"])
    with pytest.raises(FileNotFoundError, match=r"/loop/a\.pdf: cannot be reached \(too many redirects\)$"):
        find_pdfs([f"{server}/loop/a.pdf"])
    with pytest.raises(FileNotFoundError, match=r"/missing\.pdf: no such file or folder$"):
        find_pdfs([f"{server}/missing.pdf"])


def _cli_until_a_copy(url: str, out: Path, scratch: Path) -> subprocess.Popen:
    """The CLI fetching ``url`` with its temporary folder in ``scratch``, once part of the copy is on disk."""
    command = [sys.executable, "-m", "pipeline", url, "-o", str(out), *ARTICLE_CLI, "--size", "64", "--workers", "1"]
    env = {**os.environ, "TMPDIR": str(scratch)}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    give_up = time.monotonic() + 60
    while not any(copy.stat().st_size for copy in _copies(scratch)):
        assert process.poll() is None, process.communicate()[1].decode()
        assert time.monotonic() < give_up, "no copy appeared"
        time.sleep(0.05)
    return process


def test_copies_of_a_killed_run_are_removed_by_the_next_run(tmp_path: Path, server: str, scratch: Path) -> None:
    """``kill -9`` mid-download leaves the run folder (nothing can remove it then); the rerun removes it."""
    url = f"{server}/slow/issue-b.pdf"  # about 4 s to fetch
    process = _cli_until_a_copy(url, tmp_path / "out.zip", scratch)
    process.kill()
    process.wait()
    assert _copies(scratch), "the killed run should have left its partial copy"
    rerun = subprocess.run(
        [sys.executable, "-m", "pipeline", url, "-o", tmp_path / "out.zip", *ARTICLE_CLI, "--size", "64"],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "6 pages, " in rerun.stdout
    assert not _copies(scratch) and not list(scratch.iterdir()), list(scratch.rglob("*"))


def test_sigterm_ends_a_run_with_its_copies_removed(tmp_path: Path, server: str, scratch: Path) -> None:
    """SIGTERM runs the cleanup Ctrl-C runs: exit status 143, no copy left, the output resumable."""
    process = _cli_until_a_copy(f"{server}/slow/issue-b.pdf", tmp_path / "out.zip", scratch)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 143, err.decode()
    assert "Traceback" not in err.decode()
    assert not list(scratch.iterdir()), list(scratch.rglob("*"))
    assert (tmp_path / "out.zip.progress").exists()


def test_only_folders_of_runs_that_are_gone_are_swept(scratch: Path) -> None:
    """The folder of a dead process goes; this process's and another host's (a shared folder) stay."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = fetch._host()
    folders = [scratch / f"pipeline-run-{pid}-{name}-x1" for pid, name in [(gone.pid, host), (os.getpid(), host)]]
    folders.append(scratch / f"pipeline-run-{gone.pid}-other.host-x2")
    for folder in folders:
        (folder / "00000").mkdir(parents=True)
        (folder / "00000" / "a.pdf").write_bytes(b"%PDF-")
    assert fetch.sweep_run_folders() == 1
    assert [folder.exists() for folder in folders] == [False, True, True]
