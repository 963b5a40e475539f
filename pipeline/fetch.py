"""Remote PDFs (any fsspec URL) copied to local temporary files just ahead of their pages.

MuPDF needs random access to a file, so a remote PDF is fetched whole before its pages are processed, and
deleted once its last page is committed. At most ``limit`` copies are on local disk at once (downloads wait
for a free slot), so an archive larger than the disk can be processed; peak local disk (the copies plus the
output) is measured as the run goes. Every download is bounded: a read timeout, and the run's time budget.

A run's copies live in one run folder (``pipeline-run-<pid>-<host>-…`` in the temporary folder), removed when
the run ends, on SIGTERM too (:func:`sigterm_as_exit`); a run killed with ``kill -9`` leaves its folder, and
the next run on this machine removes every folder whose process is gone (:func:`sweep_run_folders`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from types import FrameType

from pipeline import source
from pipeline.source import failure_text, is_http, remote_name

CHUNK = 1 << 20
DISK_RESERVE = 512 << 20
"""Free disk a download never takes: an endless or huge remote file filled the disk before it failed, and a page
committed then would have found no room for the output."""
RUN_PREFIX = "pipeline-run-"
GRACE = 2.0
"""Seconds past the run's deadline that :meth:`Fetcher.get` still waits for a download to stop by itself."""


class FetchError(Exception):
    """A remote PDF that could not be copied here; the message names the URL and the reason."""


class FetchStopped(FetchError):
    """A download cut short by the run's time budget: not the file's fault, so no error row (a rerun fetches it)."""


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", ".", socket.gethostname())[:40] or "host"


def make_run_folder() -> Path:
    """A new folder for this run's temporary files, after removing those of runs whose process is gone."""
    sweep_run_folders()
    return Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-{_host()}-"))


def sweep_run_folders() -> int:
    """Remove the run folders of this machine's runs that are no longer running (killed with ``kill -9``, or
    the machine lost power); returns how many. Another host's folders (a shared temporary folder) are left."""
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob(f"{RUN_PREFIX}*-{_host()}-*"):
        pid = folder.name.removeprefix(RUN_PREFIX).split("-", 1)[0]
        if pid.isdigit() and folder.is_dir() and not _running(int(pid), folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def _running(pid: int, folder: Path) -> bool:
    """Whether the run that made ``folder`` may still be running: process ``pid`` exists and is not younger
    than the folder (a pid reused by a later process does not keep a dead run's folder)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        pass
    try:
        import psutil
    except ImportError:
        return True
    try:
        return psutil.Process(pid).create_time() <= folder.stat().st_mtime + 1
    except psutil.NoSuchProcess:
        return False
    except (OSError, psutil.Error):
        return True


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """While the block runs, SIGTERM ends this process as ``SystemExit(143)`` does, so ``finally`` blocks
    run (the output closed resumable, the run folder removed) instead of the process vanishing mid-write.

    Only in the main thread of a process that has no SIGTERM handler of its own; a process forked meanwhile
    (that inherits the handler) still dies of SIGTERM at once.
    """
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) not in (
        signal.SIG_DFL,
        None,
    ):
        yield
        return
    owner = os.getpid()

    def handler(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Fetcher:
    """Copies ``urls`` in order, one at a time in a background thread, with at most ``limit`` on disk.

    ``deadline`` (a :func:`time.monotonic` time, the run's time budget) bounds every download, and
    ``read_timeout`` (default :data:`pipeline.source.READ_TIMEOUT`) how long one waits for its next byte.
    """

    def __init__(
        self, urls: Sequence[str], limit: int, deadline: float | None = None, read_timeout: float | None = None
    ) -> None:
        self.folder = make_run_folder()
        """This run's folder, removed by :meth:`close`."""
        self._deadline = deadline
        self._read_timeout = source.READ_TIMEOUT if read_timeout is None else read_timeout
        self._slots = threading.Semaphore(limit)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._held: dict[str, int] = {}
        self._on_disk = 0
        self.output_bytes = 0
        self.peak_bytes = 0
        """Most bytes on local disk at once: copies (whole or being written) plus the output."""
        self.out_of_time = False
        """Whether a download was cut short by the time budget (the run stops; the file is left for a rerun)."""
        self._copies = {url: self.folder / f"{number:05d}" / remote_name(url) for number, url in enumerate(urls)}
        self._futures: dict[str, Future[Path]] = {url: Future() for url in urls}
        # a daemon thread, not a pool: a read stuck in a back-end must not hold the process at exit
        self._thread = threading.Thread(target=self._fetch_all, name="fetch", daemon=True)
        self._thread.start()

    def copy_path(self, url: str) -> Path:
        """Where ``url``'s local copy is (or would be)."""
        return self._copies[url]

    def ready(self, url: str) -> bool:
        """Whether ``url``'s copy is complete (or failed), so :meth:`get` would not wait."""
        return self._futures[url].done()

    def get(self, url: str) -> Path:
        """``url``'s local copy, waiting for it; ``FetchError`` when it could not be fetched, ``FetchStopped``
        when the time budget ran out first."""
        wait = None if self._deadline is None else max(0.0, self._deadline - time.monotonic()) + GRACE
        try:
            return self._futures[url].result(wait)
        except FutureTimeout:  # a back-end without timeouts of its own: stop waiting, close() abandons it
            self.out_of_time = True
            raise FetchStopped(f"{url}: not fetched within the run's time budget") from None
        except FetchStopped:
            self.out_of_time = True
            raise

    def release(self, url: str) -> None:
        """Delete ``url``'s copy (its last page is committed) and free its slot for the next download."""
        with self._lock:
            size = self._held.pop(url, None)
            if size is None:
                return
            self._on_disk -= size
        shutil.rmtree(self._copies[url].parent, ignore_errors=True)  # its numbered folder too: none left empty
        self._slots.release()

    def note_output(self, size: int) -> None:
        """The output's size now, for the peak."""
        with self._lock:
            self.output_bytes = size
            self.peak_bytes = max(self.peak_bytes, self._on_disk + size)

    def close(self) -> None:
        """Stop downloading and delete every copy and the run folder (also on an interrupted run: resume
        fetches again). A download stuck in a read is not waited for beyond a moment."""
        self._closed.set()
        for future in self._futures.values():
            future.cancel()
        self._thread.join(GRACE)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _fetch_all(self) -> None:
        for url, future in self._futures.items():
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(self._fetch(url))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller of get()
                future.set_exception(exc)

    def _left(self) -> float | None:
        """Seconds left of the run's time budget (``None``: no budget); ``FetchStopped`` when none is left."""
        if self._closed.is_set():
            raise FetchStopped("not fetched, the run stopped")
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise FetchStopped("not fetched within the run's time budget")
        return left

    def _fetch(self, url: str) -> Path:
        while not self._slots.acquire(timeout=0.1):
            if self._closed.is_set():
                raise FetchStopped(f"{url}: not fetched, the run stopped")
        with self._lock:
            self._held[url] = 0
        target = self._copies[url]
        try:
            target.parent.mkdir()
            with self._open(url) as remote, target.open("wb") as local:
                while True:
                    self._left()
                    chunk = remote.read(CHUNK)
                    if not chunk:
                        break
                    if shutil.disk_usage(target.parent).free - len(chunk) < DISK_RESERVE:
                        raise OSError(f"it would leave less than {DISK_RESERVE >> 20} MB of disk free for the output")
                    local.write(chunk)
                    self._grow(url, len(chunk))
        except FetchStopped as exc:
            self.release(url)
            raise FetchStopped(f"{url}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any back-end's failure (HTTP, S3, auth) skips this file only
            self.release(url)
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise FetchStopped(f"{url}: not fetched within the run's time budget") from None
            reason = failure_text(exc)
            if reason == "timed out":
                reason = f"no data for {self._read_timeout:g} s"
            raise FetchError(f"{url}: cannot be fetched ({reason})") from None
        return target

    def _open(self, url: str) -> contextlib.AbstractContextManager:
        """``url`` opened for one sequential read: on HTTP bounded by the read timeout and the time left."""
        import fsspec

        if not is_http(url):
            return fsspec.open(url, "rb")
        fs, path = fsspec.core.url_to_fs(url)
        return source.open_http(fs, path, self._read_timeout, self._left())

    def _grow(self, url: str, size: int) -> None:
        with self._lock:
            self._held[url] += size
            self._on_disk += size
            self.peak_bytes = max(self.peak_bytes, self._on_disk + self.output_bytes)
