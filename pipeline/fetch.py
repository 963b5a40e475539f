"""Remote PDFs (any fsspec URL) copied to local temporary files just ahead of their pages.

MuPDF needs random access to a file, so a remote PDF is fetched whole before its pages are processed, and
deleted once its last page is committed. At most ``limit`` copies are on local disk at once (downloads wait
for a free slot), so an archive larger than the disk can be processed; peak local disk (the copies plus the
output) is measured as the run goes.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from pipeline.source import remote_name

CHUNK = 1 << 20


class FetchError(Exception):
    """A remote PDF that could not be copied here; the message names the URL and the reason."""


class Fetcher:
    """Copies ``urls`` in order, one at a time in a background thread, with at most ``limit`` on disk."""

    def __init__(self, urls: Sequence[str], limit: int) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="pipeline-fetch-"))
        self._slots = threading.Semaphore(limit)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._held: dict[str, int] = {}
        self._on_disk = 0
        self.output_bytes = 0
        self.peak_bytes = 0
        """Most bytes on local disk at once: copies (whole or being written) plus the output."""
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="fetch")
        self._copies = {url: self._folder / f"{number:05d}" / remote_name(url) for number, url in enumerate(urls)}
        self._futures: dict[str, Future[Path]] = {url: self._pool.submit(self._fetch, url) for url in urls}

    def copy_path(self, url: str) -> Path:
        """Where ``url``'s local copy is (or would be)."""
        return self._copies[url]

    def ready(self, url: str) -> bool:
        """Whether ``url``'s copy is complete (or failed), so :meth:`get` would not wait."""
        return self._futures[url].done()

    def get(self, url: str) -> Path:
        """``url``'s local copy, waiting for it; ``FetchError`` when it could not be fetched."""
        return self._futures[url].result()

    def release(self, url: str) -> None:
        """Delete ``url``'s copy (its last page is committed) and free its slot for the next download."""
        with self._lock:
            size = self._held.pop(url, None)
            if size is None:
                return
            self._on_disk -= size
        self._copies[url].unlink(missing_ok=True)
        self._slots.release()

    def note_output(self, size: int) -> None:
        """The output's size now, for the peak."""
        with self._lock:
            self.output_bytes = size
            self.peak_bytes = max(self.peak_bytes, self._on_disk + size)

    def close(self) -> None:
        """Stop downloading and delete every copy (also on an interrupted run: resume fetches again)."""
        self._closed.set()
        for future in self._futures.values():
            future.cancel()
        self._pool.shutdown(wait=True)
        shutil.rmtree(self._folder, ignore_errors=True)

    def _fetch(self, url: str) -> Path:
        while not self._slots.acquire(timeout=0.1):
            if self._closed.is_set():
                raise FetchError(f"{url}: not fetched, the run stopped")
        with self._lock:
            self._held[url] = 0
        target = self._copies[url]
        target.parent.mkdir()
        try:
            import fsspec

            with fsspec.open(url, "rb") as remote, target.open("wb") as local:
                while chunk := remote.read(CHUNK):
                    if self._closed.is_set():
                        raise FetchError(f"{url}: not fetched, the run stopped")
                    local.write(chunk)
                    self._grow(url, len(chunk))
        except FetchError:
            self.release(url)
            raise
        except Exception as exc:  # noqa: BLE001 - any back-end's failure (HTTP, S3, auth) skips this file only
            self.release(url)
            raise FetchError(f"{url}: cannot be fetched ({type(exc).__name__}: {exc})") from None
        return target

    def _grow(self, url: str, size: int) -> None:
        with self._lock:
            self._held[url] += size
            self._on_disk += size
            self.peak_bytes = max(self.peak_bytes, self._on_disk + self.output_bytes)
