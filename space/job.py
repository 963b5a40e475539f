"""The PDF job in a process of its own: a PDF that crashes MuPDF ends that job, never the Space.

The server (:class:`Job`, used by ``space.dataset``) starts ``python -c`` on :func:`main` here, with one end of a
socket pair (pickled messages, ``multiprocessing.connection``) and a lifeline pipe. The process unpacks the uploads
and runs the pipeline exactly as the server used to (``run_pages``, one process, the same options: the same bytes),
telling the server each file it starts and each page it commits. Its temporary files go to the job's own folder
(``TMPDIR``), which the server removes, so a killed job leaves nothing behind.

Not ``multiprocessing``'s spawn or forkserver: both run the parent's ``__main__`` (``app.py``: Gradio, torch, the
page) again in every child started from ``python app.py``. This module imports ``pipeline/`` and the standard
library only, and the process never imports Gradio, torch, ``models/`` or ``app.py``.

The captioning model stays in the server (it holds the ZeroGPU slot): the process asks for ``{caption}`` with a
``describe`` message and waits for the answer.

Test hooks (tests/test_space_job.py), read by the job's process from its environment: ``SPACE_TEST_CRASH_ON=<name>``
makes it kill itself with SIGSEGV, as a MuPDF crash does, and ``SPACE_TEST_HANG_ON=<name>`` makes it hang, as a
page that never ends does, when it starts the pages of the PDF file of that name.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pipeline import Execution, NothingToDo, Options, OutputError, PdfError, ZipLayout, run_pages
from pipeline.distributor import Distributor
from pipeline.source import gather_uploads
from pipeline.tasks import Task

T = TypeVar("T")
R = TypeVar("R")

ROOT = Path(__file__).resolve().parents[1]
CRASH_ON = "SPACE_TEST_CRASH_ON"
"""Test-only: the PDF name on which the job's process crashes itself (see the module's docstring)."""
HANG_ON = "SPACE_TEST_HANG_ON"
"""Test-only: the PDF name on which the job's process hangs."""
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from space.job import main; main()"
"""The job process's program: this checkout's ``space.job`` first on its path, whatever the server's directory."""


@dataclass(frozen=True)
class Request:
    """One PDF job: the uploads, the job's folder, and the run as the server decided it (all plain data)."""

    uploads: list[str]
    work: Path
    """The job's folder: ``unpacked/`` zips, ``tmp/`` (its process's ``TMPDIR``) and the output zip."""
    zip_name: str
    options: Options
    execution: Execution
    max_unpacked: int
    """Bytes of PDFs the uploads' zips may unpack to, together."""
    describes: bool = False
    """Whether pages' images are sent to the server for ``{caption}``."""


class JobDied(Exception):
    """The job's process ended without its last message: killed, crashed (a signal) or exited."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class Job:
    """The server's side of one job: its process, its messages, its end. Stop it (:meth:`stop`) in a ``finally``:
    that kills the process if it still runs, and waits for it, so its folder can be removed."""

    running: ClassVar[set[Job]] = set()
    """Every job whose process was started and not yet stopped (the server's SIGTERM stops them all)."""
    _lock = threading.Lock()

    def __init__(self, request: Request) -> None:
        mine, theirs = socket.socketpair()
        lifeline, self._lifeline = os.pipe()
        tmp = request.work / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "TMPDIR": str(tmp)}
        command = [sys.executable, "-c", BOOT, str(ROOT), str(theirs.fileno()), str(lifeline)]
        try:  # its own session: a Ctrl-C in the server's terminal is the server's, the lifeline ends the job
            self.process = subprocess.Popen(
                command, pass_fds=(theirs.fileno(), lifeline), env=env, start_new_session=True
            )
        except BaseException:
            mine.close()
            os.close(self._lifeline)
            raise
        finally:
            theirs.close()
            os.close(lifeline)
        self._conn = Connection(mine.detach())
        self.file: Path | None = None
        """The file the process said it started last (None until it has said one)."""
        with Job._lock:
            Job.running.add(self)
        self.answer(request)

    def receive(self, timeout: float) -> tuple[Any, ...] | None:
        """The next message, or None when none came within ``timeout`` seconds. Raises :class:`JobDied` once the
        process has ended without its last message."""
        try:
            if not self._conn.poll(max(0.0, timeout)):
                return None
            message = self._conn.recv()
        except (EOFError, OSError):
            raise JobDied(self._how_it_ended()) from None
        if message[0] == "file":
            self.file = message[1]
        return message

    def answer(self, message: object) -> None:
        """Send the process a message (the request, a reply to its ``describe``)."""
        with contextlib.suppress(OSError):  # the process is gone: the next receive says how
            self._conn.send(message)

    def stop(self, wait: float = 0.0) -> None:
        """End the job: give the process ``wait`` seconds to exit (after its last message), then kill it; reap it."""
        try:
            self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._conn.close()
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        with Job._lock:
            Job.running.discard(self)

    @classmethod
    def stop_all(cls) -> None:
        """Kill every running job's process (the server is stopping)."""
        with cls._lock:
            jobs = list(cls.running)
        for job in jobs:
            job.stop()

    def _how_it_ended(self) -> str:
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # it closed its end but runs on: it is no use any more
            self.process.kill()
            code = self.process.wait()
        if code < 0:
            name = signal.Signals(-code).name
            return f"was killed ({name})" if -code == signal.SIGKILL else f"crashed ({name})"
        return f"exited with code {code}"


# ---------------------------------------------------------------- the job's process
def main() -> None:
    """The job's process: read the request, run it, report. Ends as soon as the server is gone."""
    conn = Connection(int(sys.argv[2]))
    threading.Thread(target=_die_with_server, args=(int(sys.argv[3]),), daemon=True).start()
    try:
        request: Request = _Plain(io.BytesIO(conn.recv_bytes())).load()
        conn.send(_run(request, conn))
    except (NothingToDo, OutputError, PdfError) as exc:
        conn.send(("refused", str(exc)))
    except Exception as exc:  # noqa: BLE001 - reported to the server, which names the file; the traceback to the log
        traceback.print_exc()
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
    conn.close()


class _Plain(pickle.Unpickler):
    """The request's unpickler: plain data of the pipeline's only. Anything else (a Gradio ``NamedString`` for a
    path, say) would import its module here, Gradio and all, and is refused instead."""

    def find_class(self, module: str, name: str) -> Any:
        if module in ("pathlib", "space.job") or module.startswith("pipeline."):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the job's request holds {module}.{name}: send plain data")


def _run(request: Request, conn: Connection) -> tuple[Any, ...]:
    """The server's former job, page by page: ``("reading", names, problems)``, then ``("file", path)`` and
    ``("page", ...)`` messages, and the summary returned as ``("done", summary)``."""
    tell = conn.send
    names, problems = gather_uploads(request.uploads, request.work / "unpacked", request.max_unpacked)
    tell(("reading", names, problems))
    execution = replace(request.execution, engine=Telling(tell, os.environ.get(CRASH_ON), os.environ.get(HANG_ON)))
    captioner = _ask_server(conn) if request.describes else None
    layout = ZipLayout(request.work / request.zip_name)
    pages = run_pages(list(names), layout, request.options, execution, captioner)
    try:
        while True:
            try:
                record, where = next(pages)
            except StopIteration as finished:
                return ("done", finished.value)
            tell(("page", record.source, record.page, where.done, where.total, where.kept))
    finally:
        pages.close()


class Telling(Distributor):
    """The local engine in this one process (``workers=1``, as the server ran it: the same pages, the same bytes),
    telling the server each file before it is opened (counted, then each range of its pages), so a crash names
    its file."""

    def __init__(
        self, tell: Callable[[tuple[Any, ...]], None], crash_on: str | None = None, hang_on: str | None = None
    ) -> None:
        super().__init__(1)
        self._tell, self._crash_on, self._hang_on = tell, crash_on, hang_on

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> list[R]:
        return super().map(function, self._told(items, lambda path: path))

    def run(
        self, tasks: Iterable[Task | None], options: Options, gc_every: int = 1
    ) -> Iterator[tuple[Task, list[Any]]]:
        return super().run(self._told(tasks, lambda task: task.path, pages=True), options, gc_every)

    def _told(self, items: Iterable[Any], path_of: Callable[[Any], Path], pages: bool = False) -> Iterator[Any]:
        for item in items:
            if item is not None:
                path = path_of(item)
                self._tell(("file", path))
                if pages and Path(path).name == self._crash_on:  # the test hooks: as MuPDF crashing on this file
                    os.kill(os.getpid(), signal.SIGSEGV)
                while pages and Path(path).name == self._hang_on:  # or never ending a page of it
                    time.sleep(1)
            yield item


class CaptionerFailed(Exception):
    """The server's captioning model failed on a page's images (the page gets a warning, the run goes on)."""


def _ask_server(conn: Connection) -> Callable[[Sequence[bytes]], list[str]]:
    """The pipeline's captioner here: the page's JPEGs to the server's model, its texts back."""

    def describe(jpegs: Sequence[bytes]) -> list[str]:
        conn.send(("describe", list(jpegs)))
        kind, answer = conn.recv()
        if kind != "described":
            raise CaptionerFailed(answer)
        return answer

    return describe


def _die_with_server(lifeline: int) -> None:
    """End this process once the server is gone (even after ``kill -9``): the lifeline's other end is the server's
    only, so reading it returns when the server has closed it or died."""
    while os.read(lifeline, 1):
        pass
    os._exit(1)  # nothing to clean: the server owned the job's folder
