"""The PDF job in its own process (``space/job.py``): the server keeps serving whatever happens to a job.

The job's side is driven directly (no Gradio in the request, nothing of the page), and through the real app
(launched in this process, called with ``gradio_client``): a job's process killed with SIGKILL mid-run, and one that
crashes on a PDF. Each time the caller is told which file, ``/classify`` answers within 2 s during and after, the
next job succeeds, and nothing of the dead job is left on disk. The job's test hooks make it crash
(``SPACE_TEST_CRASH_ON``: SIGSEGV, as MuPDF crashing does) or hang (``SPACE_TEST_HANG_ON``: as a page that never
ends) when it starts the pages of the file of that name, so that a job is still running, whatever the machine's
speed, when it is killed, cancelled or timed out.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest
from factories import mixed_page, pdf_from_images, text_page
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from test_models import LABELS

from pipeline import Execution, Options

if TYPE_CHECKING:
    from space.job import Job

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client(app: ModuleType) -> Client:
    return Client(app.demo.local_url, verbose=False)


@pytest.fixture(autouse=True)
def _no_job_left(app: ModuleType) -> Iterator[None]:
    """A test that fails with a job still running (hung on ``stuck``) leaves none to the next test."""
    yield
    app.job.Job.stop_all()


@pytest.fixture
def stuck(files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PDF on whose pages the job's process hangs (a copy of the 2-page gazette)."""
    path = Path(shutil.copy(files["pdf"], tmp_path / "stuck.pdf"))
    monkeypatch.setenv("SPACE_TEST_HANG_ON", path.name)
    return path


def _messages(job: Job, timeout: float = 120) -> Iterator[tuple[object, ...]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = job.receive(1.0)
        if message is not None:
            yield message
            if message[0] in ("done", "refused", "failed"):
                return
    raise AssertionError("the job sent no last message")


def test_a_job_runs_the_pipeline_in_a_process_of_its_own(app: ModuleType, tmp_path: Path) -> None:
    """Messages in order (the uploads read, each file before it is opened, each page), the summary at the end;
    the process is another one, reaped once stopped, and its temporary folder is inside the job's."""
    plates = pdf_from_images(tmp_path / "plates.pdf", [mixed_page(1000, 1400, seed=1)])
    columns = pdf_from_images(tmp_path / "columns.pdf", [text_page(seed=2)])
    work = tmp_path / "work"
    work.mkdir()
    request = app.job.Request([str(plates), str(columns)], work, "out.zip", Options(), Execution(resume=False), 2**30)
    job = app.job.Job(request)
    try:
        assert job.process.pid != os.getpid() and (work / "tmp").is_dir()
        messages = list(_messages(job))
    finally:
        job.stop(wait=5)
    kinds = [message[0] for message in messages]
    assert kinds[0] == "reading" and kinds[-1] == "done", kinds
    files = [Path(message[1]).name for message in messages if message[0] == "file"]
    assert files == ["plates.pdf", "columns.pdf", "plates.pdf", "columns.pdf"], "counted, then their pages"
    pages = [message[1:3] for message in messages if message[0] == "page"]
    assert pages == [("plates.pdf", 1), ("columns.pdf", 1)]
    summary = messages[-1][1]
    assert summary.output == work / "out.zip" and zipfile.is_zipfile(summary.output)
    assert summary.describe().startswith("2 pages seen, 1 kept")
    assert job.process.returncode == 0 and job not in app.job.Job.running


def test_the_jobs_process_imports_no_gradio_torch_models_or_app() -> None:
    """What the process imports to run a job (its module, and the per-page work it loads lazily)."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import space.job, pipeline.worker, pipeline.orchestrator, pipeline.source
        heavy = {{"gradio", "torch", "models", "app", "spaces", "transformers"}}
        print(sorted(name for name in sys.modules if name.split(".")[0] in heavy))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_request_of_anything_but_plain_data_is_refused(
    app: ModuleType, files: dict[str, Path], tmp_path: Path
) -> None:
    """Gradio hands a handler its file paths as ``NamedString``: pickled as they are, they would import Gradio in
    the job's process (2 s, and the server's whole stack); the process refuses them instead."""
    from gradio.utils import NamedString

    uploads = [NamedString(files["pdf"])]
    job = app.job.Job(app.job.Request(uploads, tmp_path, "out.zip", Options(), Execution(resume=False), 2**30))
    try:
        *_, last = _messages(job)
    finally:
        job.stop(wait=5)
    assert last[0] == "failed" and "gradio.utils.NamedString" in last[1], last


def test_the_jobs_process_ends_when_the_server_dies(stuck: Path, tmp_path: Path) -> None:
    """A server killed with SIGKILL runs no cleanup: its job's process, hung on a page, ends by itself (the
    lifeline), not at its next message."""
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from pipeline import Execution, Options
        from space.job import Job, Request
        job = Job(Request([{str(stuck)!r}], Path({str(tmp_path)!r}), "out.zip", Options(), Execution(), 2**30))
        files = 0
        while files < 2 and (message := job.receive(30)) is not None:  # counted, then its pages started
            files += message[0] == "file"
        print(job.process.pid, flush=True)
        os.kill(os.getpid(), 9)
    """)
    server = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert server.returncode == -signal.SIGKILL, server.stderr
    pid = int(server.stdout.split()[0])
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the job's process outlived its server"


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie waiting for an init to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


# ---------------------------------------------------------------- through the real app
def _answers_quickly(client: Client, files: dict[str, Path]) -> None:
    start = time.monotonic()
    verdict, _, _ = client.predict(handle_file(files["photo"]), api_name="/classify")
    took = time.monotonic() - start
    assert verdict["label"].rsplit(" (", 1)[0] in LABELS.values()
    assert took < 2, f"/classify took {took:.1f} s beside the PDF job"


def _new_folders(app: ModuleType, before: set[Path]) -> set[Path]:
    """Work folders made since ``before``, once the job that made them has had 5 s to remove its own."""
    deadline = time.monotonic() + 5
    while (new := set(app.disk.WORK_ROOT.iterdir()) - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    return new


def _running(app: ModuleType, job: object, status: str, timeout: float = 60) -> Job:
    """The job's process, once the job has shown ``status`` (mid-run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(str(output[1]).startswith(status) for output in job.outputs()) and app.job.Job.running:
            (running,) = app.job.Job.running
            return running
        time.sleep(0.05)
    raise AssertionError(f"no {status!r}: {job.status()}")


def _second_job_succeeds(client: Client, files: dict[str, Path]) -> None:
    zip_path, summary, *_ = client.predict([handle_file(files["pdf"])], api_name="/pdf_to_dataset")
    assert zipfile.is_zipfile(zip_path) and summary.startswith("2 pages seen"), summary


def test_a_pdf_job_killed_mid_run_says_so_and_the_space_goes_on(
    app: ModuleType, client: Client, files: dict[str, Path], stuck: Path, tmp_path: Path
) -> None:
    """The PDFs come in a zip, so the job holds copies of them (unpacked in its folder); it is killed once the
    first one's pages are done, on the second's (where it hangs)."""
    bundle = tmp_path / "issues.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.write(files["pdf"], "1890/annual.pdf")
        archive.write(stuck, "1891/stuck.pdf")
    before = set(app.disk.WORK_ROOT.iterdir())
    job = client.submit([handle_file(bundle)], api_name="/pdf_to_dataset")
    running = _running(app, job, "Page 2/4")
    (work,) = set(app.disk.WORK_ROOT.iterdir()) - before
    assert list(work.rglob("stuck.pdf")), "the job's own copy of the PDF"
    environ = Path(f"/proc/{running.process.pid}/environ").read_bytes().split(b"\0")
    assert f"TMPDIR={work / 'tmp'}".encode() in environ, "its temporary files go to its folder"
    _answers_quickly(client, files)  # during the job
    assert running.process.poll() is None, "the job was still running"
    os.kill(running.process.pid, signal.SIGKILL)
    with pytest.raises(AppError) as info:
        job.result(timeout=60)
    message = str(info.value)
    expected = "issues.zip › 1891/stuck.pdf: the PDF job's process was killed (SIGKILL) on this file"
    assert message.startswith(expected), message
    assert "nothing of the run was kept" in message and "\n" not in message and "Traceback" not in message
    _answers_quickly(client, files)  # after it
    assert not _new_folders(app, before), "the killed job's folder (its copies, zip, temporary files) is gone"
    assert running.process.returncode == -signal.SIGKILL and running not in app.job.Job.running
    _second_job_succeeds(client, files)
    assert not _new_folders(app, before)


def test_a_pdf_that_crashes_its_jobs_process_is_named(
    app: ModuleType, client: Client, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three PDFs, the second crashing the process once the first one's pages are done (all three counted by
    then): the second's name, not the first's nor the last counted, and the crash, in one sentence."""
    crash = Path(shutil.copy(files["pdf"], tmp_path / "crash.pdf"))
    later = Path(shutil.copy(files["pdf"], tmp_path / "later.pdf"))
    monkeypatch.setenv("SPACE_TEST_CRASH_ON", crash.name)
    before = set(app.disk.WORK_ROOT.iterdir())
    uploads = [handle_file(files["pdf"]), handle_file(crash), handle_file(later)]
    job = client.submit(uploads, api_name="/pdf_to_dataset")
    _answers_quickly(client, files)  # during the job (or just after it)
    with pytest.raises(AppError) as info:
        job.result(timeout=60)
    message = str(info.value)
    assert message.startswith("crash.pdf: the PDF job's process crashed (SIGSEGV) on this file"), message
    assert "\n" not in message and "Traceback" not in message
    assert any(str(output[1]).startswith("Page 2/6") for output in job.outputs()), "gazette.pdf was done first"
    _answers_quickly(client, files)
    assert not _new_folders(app, before) and not app.job.Job.running
    _second_job_succeeds(client, files)


def test_cancel_kills_the_jobs_process(app: ModuleType, files: dict[str, Path], stuck: Path) -> None:
    """Gradio's Cancel closes the handler's generator: the process is killed there and then, its folder removed,
    even in the middle of a page (the handler yields its last status every ``HEARTBEAT_S`` while it waits)."""
    before = set(app.disk.WORK_ROOT.iterdir())
    updates = app.dataset.pdf_to_dataset([str(files["pdf"]), str(stuck)], progress=lambda *_, **__: None)
    while not next(updates)[1].startswith("Page 2/4"):
        pass
    (running,) = app.job.Job.running
    (work,) = set(app.disk.WORK_ROOT.iterdir()) - before
    assert next(updates)[1].startswith("Page 2/4"), "the heartbeat: the last status again"
    start = time.monotonic()
    updates.close()
    assert time.monotonic() - start < 5, "killed at once, not waited for"
    assert running.process.returncode == -signal.SIGKILL, "killed, not left to finish"
    assert not work.exists() and not app.job.Job.running


def test_the_job_timer_kills_a_job_past_its_grace(
    app: ModuleType, stuck: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job still running ``JOB_GRACE_S`` after ``MAX_JOB_SECONDS`` (a page that never ends, so the job's own
    time budget, checked between page ranges, never stops it) is killed: an error naming the file, nothing left."""
    import gradio as gr

    started: list[Job] = []
    real_job = app.job.Job
    monkeypatch.setattr(app.dataset, "Job", lambda request: started.append(real_job(request)) or started[-1])
    monkeypatch.setattr(app.settings, "MAX_JOB_SECONDS", 0)
    monkeypatch.setattr(app.settings, "JOB_GRACE_S", 1)
    before = set(app.disk.WORK_ROOT.iterdir())
    with pytest.raises(gr.Error) as info:
        list(app.dataset.pdf_to_dataset([str(stuck)], progress=lambda *_, **__: None))
    assert info.value.message.startswith("stuck.pdf: the PDF job was stopped after 1 s, a page never ended")
    (running,) = started
    assert running.process.returncode == -signal.SIGKILL
    assert not _new_folders(app, before) and not app.job.Job.running
