"""The local engine: run tasks in worker processes (MuPDF is not thread-safe), in order, with bounded memory.

Results come back in task order whatever finishes first, so the output is deterministic; at most
``2 × workers`` tasks are in flight; workers are replaced after a number of tasks so that any slow
growth inside MuPDF or the allocator cannot accumulate; a worker that crashes (a page that kills MuPDF)
costs only its task's pages, recorded as errors, never the run.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from typing import TypeVar

from pipeline.options import Options
from pipeline.tasks import PageResult, Task, crashed

T = TypeVar("T")
R = TypeVar("R")

CRASHED = "the worker process crashed on this range of pages (MuPDF failure)"
OCR_CRASHED = (
    "the worker crashed on these pages with OCR on; processed again without it (no words read from the pixels)"
)


def process_task(task: Task, options: Options, gc_every: int = 1) -> list[PageResult]:
    """Run ``task`` (in a worker). The rendering stack is imported here, not in the main process."""
    from pipeline.worker import process_task as process

    return process(task, options, gc_every)


class Distributor:
    """Worker processes for one run (``workers <= 1``: everything in this process, the least memory).

    Use as a context manager; ``map`` spreads small jobs (page counts), ``run`` streams the page tasks.
    """

    def __init__(self, workers: int, tasks_per_worker: int = 50, ocr_lang: str | None = None) -> None:
        self.workers = workers
        self._tasks_per_pool = tasks_per_worker * workers
        self._submitted = 0
        self._ocr_lang = ocr_lang
        # forkserver: workers start clean (nothing inherited from this process); the server preloads only the
        # OCR engine of a run that reads words (``ocr_lang``), shared by the workers it forks (pipeline.preload).
        self._context = multiprocessing.get_context("forkserver")
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Distributor:
        if self.workers > 1:
            _start_forkserver(self._ocr_lang)
            self._pool = self._new_pool()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[function(item) for item in items]``, in the workers when there are any."""
        if self._pool is None:
            return [function(item) for item in items]
        return list(self._pool.map(function, items))

    def run(
        self, tasks: Iterable[Task | None], options: Options, gc_every: int = 1
    ) -> Iterator[tuple[Task, list[PageResult]]]:
        """Yield ``(task, results)`` in task order.

        ``tasks`` may yield ``None`` while tasks are in flight: nothing more can start until those are
        committed (a file still being fetched); what is in flight is handed out before it is asked again."""
        if self._pool is None:
            for task in tasks:
                yield task, process_task(task, options, gc_every)
            return
        queue = PeekableTasks(tasks)
        pending: deque[tuple[Task, Future]] = deque()
        self._refill(pending, queue, options, gc_every)
        while pending or queue.has_more():
            if not pending:
                self._recycle()
                self._refill(pending, queue, options, gc_every)
                continue
            task, future = pending.popleft()
            try:
                results = future.result()
            except BrokenProcessPool:
                # A task in flight killed its worker and the pool with it: run each of them alone on a fresh
                # pool; the one that breaks it again is the culprit and only its pages are lost.
                suspects = [task, *(queued for queued, _ in pending)]
                pending.clear()
                self._restart()
                for suspect in suspects:
                    yield suspect, self._alone(suspect, options, gc_every)
                self._refill(pending, queue, options, gc_every)
                continue
            self._refill(pending, queue, options, gc_every)
            yield task, results

    def _alone(self, task: Task, options: Options, gc_every: int) -> list[PageResult]:
        """A suspect task run alone on a fresh pool; when it breaks that one too and it reads words with OCR (a
        crash inside Tesseract, in the worker's own process since it is kept loaded), once more without OCR: the
        pages lose their OCR words, not their pictures. Error rows when it breaks the pool every time."""
        tries = [options, replace(options, ocr=False)] if options.ocr else [options]
        for attempt in tries:
            try:
                results = self._pool.submit(process_task, task, attempt, gc_every).result()
            except BrokenProcessPool:
                self._restart()
                continue
            if attempt is not options:
                for result in results:
                    result.record.warning = "; ".join(filter(None, (OCR_CRASHED, result.record.warning)))
            return results
        return crashed(task, CRASHED)

    def _new_pool(self) -> ProcessPoolExecutor:
        # Recycling is done by restarting the pool (``_recycle``), not with ``max_tasks_per_child``: on
        # CPython 3.11 an executor whose workers exit after their quota can fail to replace them and hang.
        self._submitted = 0
        return ProcessPoolExecutor(self.workers, mp_context=self._context, initializer=_start_worker)

    def _restart(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._new_pool()

    def _recycle(self) -> None:
        """Once the pool has run its quota and drained, replace its workers."""
        if self._submitted >= self._tasks_per_pool:
            self._restart()

    def _refill(self, pending: deque, queue: PeekableTasks, options: Options, gc_every: int) -> None:
        while len(pending) < 2 * self.workers and self._submitted < self._tasks_per_pool:
            task = queue.next()
            if task is None:
                return
            self._submitted += 1
            try:
                future = self._pool.submit(process_task, task, options, gc_every)
            except BrokenProcessPool as exc:
                # a worker died between two results: the task waits its turn as a suspect (see ``run``)
                future = Future()
                future.set_exception(exc)
            pending.append((task, future))


class PeekableTasks:
    """An iterator of tasks that can say whether another one is coming without losing it.

    Asked while nothing is in flight, a task source never says wait, so ``has_more`` is a real answer."""

    def __init__(self, tasks: Iterable[Task | None]) -> None:
        self._tasks = iter(tasks)
        self._head: Task | None = None

    def has_more(self) -> bool:
        if self._head is None:
            self._head = next(self._tasks, None)
        return self._head is not None

    def next(self) -> Task | None:
        """The next task, or ``None`` at the end or while the source says wait."""
        task = self._head if self._head is not None else next(self._tasks, None)
        self._head = None
        return task


WORKER_TUNABLES = "glibc.malloc.mmap_threshold=4194304:glibc.malloc.hugetlb=1"
"""glibc's allocator in the workers: blocks of 4 MB and more (a page's decoded scan, its view, a rendering: 7-31 MB
each) are mapped on their own and handed back to the system when freed, instead of coming from the heap, whose
threshold glibc otherwise raises to 32 MB after the first such block is freed, so a worker's RSS stayed at its
page's high-water mark until the page's cleanup (``malloc_trim``); transparent huge pages for them (where the
system allows them on request) keep the mapping cheap. Two workers, the article's options, 32 real pages: tree peak
RSS 398-399 → 369-375 MB, PSS 272-294 → 253-271 MB, the same speed (the threshold without huge pages: ~25 ms
more system time per page, a page fault per 4 kB)."""


def _start_forkserver(ocr_lang: str | None = None) -> None:
    """Start the forkserver (if this process has none yet) with :data:`WORKER_TUNABLES` in its environment: glibc
    reads them only when a program starts, and the workers are forked from the server. The run's own process is not
    affected; a user's ``GLIBC_TUNABLES`` come after ours, so theirs win. ``ocr_lang``: the server starts Tesseract
    with these packs before it forks (:mod:`pipeline.preload`); a server already running keeps what it has."""
    import multiprocessing.forkserver

    from pipeline.preload import LANG_VARIABLE

    saved = os.environ.get("GLIBC_TUNABLES")
    os.environ["GLIBC_TUNABLES"] = ":".join(filter(None, (WORKER_TUNABLES, saved)))
    if ocr_lang:
        os.environ[LANG_VARIABLE] = ocr_lang
        multiprocessing.forkserver.set_forkserver_preload(["pipeline.preload"])
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        os.environ.pop(LANG_VARIABLE, None)
        if saved is None:
            del os.environ["GLIBC_TUNABLES"]
        else:
            os.environ["GLIBC_TUNABLES"] = saved


def _start_worker() -> None:
    """Worker initializer: :func:`_die_with_parent`, and OpenCV in one thread. The workers already fill the cores;
    OpenCV's own pool would add a thread per core to each, with its stack and heap (9 MB more peak per worker,
    measured on the real newspaper pages), only to contend for the same cores. The allocator's tunables stay with
    the worker, not with the programs it runs (Tesseract)."""
    import cv2

    cv2.setNumThreads(1)
    tunables = os.environ.get("GLIBC_TUNABLES", "").removeprefix(WORKER_TUNABLES).lstrip(":")
    if tunables:
        os.environ["GLIBC_TUNABLES"] = tunables
    else:
        os.environ.pop("GLIBC_TUNABLES", None)
    _die_with_parent()


def _die_with_parent() -> None:
    """End this worker as soon as the run's process is gone, even after ``kill -9``.

    A pool's workers otherwise wait forever on a queue nobody writes to (4 orphans holding 234 MB were seen a
    minute after the CLI was killed). ``parent_process().sentinel`` becomes readable when the process that
    started the run dies (with forkserver, the run's process, not the server that forked the worker).
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)  # no cleanup to run: the run's own process is gone, nothing reads our results

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()
