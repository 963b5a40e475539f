import csv
import io
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import psutil
import pytest
from factories import ARTICLE, ARTICLE_CLI, engraving, pdf_from_images, text_page

from pipeline import Execution, Options, run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("archive")
    for number in range(2):
        pages = [engraving(300, 400, seed=s) if s % 3 else text_page(300, 400, seed=s, ink=0.05) for s in range(30)]
        pdf_from_images(folder / f"issue{number}.pdf", pages)
    return folder


def _contents(zip_path: Path) -> tuple[list[dict[str, str]], dict[str, bytes]]:
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        assert len(names) == len(set(names)), "an entry was written twice"
        assert archive.testzip() is None
        rows = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))
        return rows, {name: archive.read(name) for name in names if name.endswith(".jpg")}


def test_workers_give_the_same_output_in_the_same_order(tmp_path: Path, archive: Path) -> None:
    options = Options(**ARTICLE, size=64)
    run([archive], tmp_path / "one.zip", options, Execution(workers=1))
    run([archive], tmp_path / "two.zip", options, Execution(workers=2))
    assert _contents(tmp_path / "one.zip") == _contents(tmp_path / "two.zip")
    rows, images = _contents(tmp_path / "two.zip")
    assert [(r["source"], r["page"]) for r in rows] == [
        (f"issue{n}.pdf", str(p)) for n in range(2) for p in range(1, 31)
    ]
    assert len(images) == 40


def test_a_worker_killed_mid_run_costs_nothing(tmp_path: Path, archive: Path) -> None:
    killed = []

    def kill_a_worker(record, progress):
        if progress.done == 5 and not killed:
            worker = psutil.Process().children(recursive=True)[-1]
            worker.send_signal(signal.SIGKILL)
            killed.append(worker.pid)

    summary = run([archive], tmp_path / "out.zip", Options(**ARTICLE, size=64), Execution(workers=2), kill_a_worker)
    rows, images = _contents(tmp_path / "out.zip")
    assert killed
    assert len(rows) == 60 and summary.errors == 0
    assert len(images) == 40


def test_kill_9_then_rerun_completes_with_every_page_exactly_once(tmp_path: Path, archive: Path) -> None:
    command = [sys.executable, "-m", "pipeline", str(archive), "-o", str(tmp_path / "out.zip")]
    command += [*ARTICLE_CLI, "--size", "256", "--workers", "2", "--gc-every", "1"]
    progress = tmp_path / "out.zip.progress"
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None:
        if progress.exists() and progress.read_text().count("\n") > 12:
            break
        time.sleep(0.05)
    assert first.poll() is None, "the run finished before it could be killed"
    os.killpg(first.pid, signal.SIGKILL)  # the whole process group: main process and workers
    first.wait()
    done_before = progress.read_text().count("\n") - 1
    assert 0 < done_before < 60

    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert f"(+{done_before} done before)" in second.stdout
    rows, images = _contents(tmp_path / "out.zip")
    assert sorted((r["source"], int(r["page"])) for r in rows) == [
        (f"issue{n}.pdf", p) for n in range(2) for p in range(1, 31)
    ]
    assert sorted(images) == sorted(name for r in rows for name in r["outputs"].split(";") if name)
    assert len(images) == 40
    assert not progress.exists()


def test_workers_are_recycled_and_the_run_still_completes_in_order(tmp_path: Path, archive: Path) -> None:
    from pipeline.distributor import Distributor, Task

    pdf = (archive / "issue0.pdf").resolve()
    tasks = [Task(pdf, "issue0", (page,)) for page in range(12)]
    worker_pids = set()
    with Distributor(2, tasks_per_worker=2) as distributor:
        results = []
        for task, outcome in distributor.run(tasks, Options(**ARTICLE, size=64)):
            results.append((task.pages[0], outcome[0].record.page))
            worker_pids.update(distributor._pool._processes)  # the pool's own workers, not the forkserver
    assert results == [(page, page + 1) for page in range(12)]
    # 12 tasks, a pool recycled after 2 per worker × 2 workers: 3 pools of 2 workers
    assert len(worker_pids) >= 5, f"{len(worker_pids)} worker processes: the pool was not recycled every 4 tasks"


def test_workers_end_with_a_killed_run(tmp_path: Path, archive: Path) -> None:
    """``kill -9`` of the run's process alone (not its group): its workers must not live on as orphans."""
    command = [sys.executable, "-m", "pipeline", str(archive), "-o", str(tmp_path / "out.zip")]
    command += [*ARTICLE_CLI, "--size", "256", "--workers", "2"]
    progress = tmp_path / "out.zip.progress"
    run_process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and run_process.poll() is None:
        if progress.exists() and progress.read_text().count("\n") > 4:
            break
        time.sleep(0.05)
    assert run_process.poll() is None, "the run finished before it could be killed"
    descendants = psutil.Process(run_process.pid).children(recursive=True)
    assert len(descendants) >= 3, "forkserver and two workers (and the resource tracker)"
    run_process.send_signal(signal.SIGKILL)
    run_process.wait()
    _, alive = psutil.wait_procs(descendants, timeout=10)
    for orphan in alive:  # leave nothing behind, even when the test fails
        orphan.kill()
    assert not alive, f"orphans left: {[p.pid for p in alive]}"


def _opencv_threads(_: object) -> int:
    import cv2

    return cv2.getNumThreads()


def test_opencv_runs_single_threaded_in_the_workers() -> None:
    from pipeline.distributor import Distributor

    with Distributor(workers=2) as distributor:
        assert distributor.map(_opencv_threads, range(4)) == [1, 1, 1, 1]


def _large_block_returned(_: object) -> tuple[bool, str | None]:
    """Whether a freed 6 MB array leaves the worker's RSS, even after one was freed before (glibc's dynamic
    threshold would then serve it from the heap and keep it); and what the worker passes on to its programs."""
    import numpy as np

    def rss() -> int:
        return psutil.Process().memory_info().rss

    block = np.ones(6 << 20, np.uint8)
    del block
    block = np.ones(6 << 20, np.uint8)
    before = rss()
    del block
    return before - rss() > 5 << 20, os.environ.get("GLIBC_TUNABLES")


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's tunables")
def test_workers_hand_large_blocks_back_when_freed() -> None:
    from pipeline.distributor import Distributor

    before = os.environ.get("GLIBC_TUNABLES")
    with Distributor(workers=2) as distributor:
        assert distributor.map(_large_block_returned, range(2)) == [(True, before), (True, before)]
    assert os.environ.get("GLIBC_TUNABLES") == before, "the run's own environment is left as it was"
