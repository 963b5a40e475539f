"""Run tasks in worker processes (MuPDF is not thread-safe), in order, with bounded memory.

Results come back in task order whatever finishes first, so the output is deterministic; at most
``2 × workers`` tasks are in flight; workers are replaced after a number of tasks so that any slow
growth inside MuPDF or the allocator cannot accumulate; a worker that crashes (a page that kills MuPDF)
costs only its task's pages, recorded as errors, never the run.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from pipeline.manifest import PageRecord
from pipeline.options import Options
from pipeline.worker import PageResult, Task, process_task


def run_tasks(
    tasks: Iterable[Task], options: Options, workers: int, tasks_per_worker: int = 50
) -> Iterator[tuple[Task, list[PageResult]]]:
    """Yield ``(task, results)`` in task order; ``workers <= 1`` runs in this process (least memory)."""
    if workers <= 1:
        for task in tasks:
            yield task, process_task(task, options)
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["pipeline.worker"])
    queue = iter(tasks)
    pending: deque[tuple[Task, Future]] = deque()

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(workers, mp_context=context, max_tasks_per_child=tasks_per_worker)

    pool = new_pool()
    try:
        _refill(pending, queue, pool, options, workers)
        while pending:
            task, future = pending.popleft()
            try:
                results = future.result()
            except BrokenProcessPool:
                # A task in flight killed its worker and the pool with it: run each of them alone on a fresh
                # pool; the one that breaks it again is the culprit and only its pages are lost.
                suspects = [task, *(queued for queued, _ in pending)]
                pending.clear()
                pool.shutdown(wait=True, cancel_futures=True)
                pool = new_pool()
                for suspect in suspects:
                    try:
                        outcome = pool.submit(process_task, suspect, options).result()
                    except BrokenProcessPool:
                        outcome = _crashed(suspect)
                        pool.shutdown(wait=True, cancel_futures=True)
                        pool = new_pool()
                    yield suspect, outcome
                _refill(pending, queue, pool, options, workers)
                continue
            _refill(pending, queue, pool, options, workers)
            yield task, results
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _refill(pending: deque, queue: Iterator[Task], pool: ProcessPoolExecutor, options: Options, workers: int) -> None:
    while len(pending) < 2 * workers:
        task = next(queue, None)
        if task is None:
            return
        pending.append((task, pool.submit(process_task, task, options)))


def _crashed(task: Task) -> list[PageResult]:
    message = "the worker process crashed on this range of pages (MuPDF failure)"
    return [PageResult(PageRecord(task.path.name, index + 1, error=message)) for index in task.pages]
