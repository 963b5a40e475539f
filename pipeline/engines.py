"""Engines: where page ranges run. One interface (as img2dataset's distributors), two engines:

- ``local``: this machine's worker processes (:class:`pipeline.distributor.Distributor`);
- ``ray``: Ray tasks on a cluster (``--ray-address auto|HOST:PORT``) or on a Ray started for the run.

Both run the very same per-page function (``pipeline.worker.process_task``) and hand results back in task
order to the same writer, so the output does not depend on the engine.
"""

from __future__ import annotations

import logging
import socket
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from pipeline.distributor import Distributor, process_task
from pipeline.options import Options
from pipeline.tasks import PageResult, Task, crashed

T = TypeVar("T")
R = TypeVar("R")

ENGINES = ("local", "ray")
RAY_RETRIES = 3
"""Times Ray reruns a task whose worker process or node died, before its pages are recorded as errors."""
RAY_CRASHED = f"the Ray worker running this range of pages died {RAY_RETRIES + 1} times (MuPDF failure or lost node)"


class Engine(Protocol):
    """Runs a run's jobs; a context manager that owns its workers for the run."""

    workers: int
    """Tasks it runs at once (processes, or the Ray cluster's CPUs): the plan sizes page ranges from it."""

    def __enter__(self) -> Engine: ...

    def __exit__(self, *exc: object) -> None: ...

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[function(item) for item in items]``, in the workers."""

    def run(
        self, tasks: Iterable[Task | None], options: Options, gc_every: int = 1
    ) -> Iterator[tuple[Task, list[PageResult]]]:
        """Yield ``(task, results)`` in task order (``None`` from ``tasks``: wait, see ``Distributor.run``);
        workers clean up every ``gc_every`` pages."""


def make_engine(name: str, workers: int, ray_address: str | None = None, ocr_lang: str | None = None) -> Engine:
    """The engine called ``name``; ``workers`` sizes the local engine and a Ray started for the run; ``ocr_lang``:
    the packs the run's OCR reads with (the local engine's workers fork with Tesseract loaded)."""
    if name == "local":
        if ray_address is not None:
            raise ValueError("--ray-address needs --engine ray")
        return Distributor(workers, ocr_lang=ocr_lang)
    if name == "ray":
        return RayEngine(workers, ray_address)
    raise ValueError(f"unknown engine {name!r}: choose one of {', '.join(ENGINES)}")


def ray_init_args(num_cpus: int | None = None) -> dict[str, Any]:
    """``ray.init`` arguments: no dashboard, and this package shipped to the workers (``py_modules``), so a
    cluster that does not have it installed runs the same code as this process."""
    args: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": logging.WARNING,  # not its INFO lines through the progress bar
        "runtime_env": {"py_modules": [str(Path(__file__).resolve().parent)]},
    }
    if num_cpus is not None:
        args["num_cpus"] = num_cpus
    return args


class RayEngine:
    """Page ranges as Ray tasks: at most two per cluster CPU in flight, results collected in task order.

    A task whose worker dies is rerun by Ray (``max_retries``); one that keeps dying costs its pages only.
    Connects to ``address`` (``auto``: the cluster this machine belongs to), or, without one, to a Ray this
    process started already, or starts a local Ray of ``workers`` CPUs for the run and stops it afterwards.
    Workers open local PDFs by path: on a cluster of several nodes those must be on storage every node mounts.
    A remote PDF's copy is on this machine's disk only, so with ``ship`` (default: when the cluster has more
    than one node) it is put in Ray's object store once and each task writes it to its own node's disk.
    """

    def __init__(self, workers: int, address: str | None = None, ship: bool | None = None) -> None:
        self.workers = max(1, workers)
        self._address = address
        self._ship = ship
        self._started = False

    def __enter__(self) -> RayEngine:
        try:
            import ray
        except ImportError:
            raise ValueError("--engine ray needs Ray: pip install 'ray>=2.9'") from None
        self._ray = ray
        if self._address is not None:
            _check_reachable(self._address)
            try:
                ray.init(address=self._address, **ray_init_args())
            except ConnectionError as exc:
                raise ValueError(f"no Ray cluster at {self._address}: {exc}") from None
            self._started = True
        elif not ray.is_initialized():
            ray.init(**ray_init_args(self.workers))
            self._started = True
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._process = ray.remote(max_retries=RAY_RETRIES)(process_task)
        self._process_shipped = ray.remote(max_retries=RAY_RETRIES)(process_shipped)
        if self._ship is None:
            self._ship = sum(node["Alive"] for node in ray.nodes()) > 1
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            self._ray.shutdown()

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> list[R]:
        remote = self._ray.remote(max_retries=RAY_RETRIES)(function)
        return self._ray.get([remote.remote(item) for item in items])

    def run(
        self, tasks: Iterable[Task | None], options: Options, gc_every: int = 1
    ) -> Iterator[tuple[Task, list[PageResult]]]:
        ray = self._ray
        source, options_ref = iter(tasks), ray.put(options)
        pending: deque[tuple[Task, Any]] = deque()
        shipped: dict[str, Any] = {}  # the remote PDF whose tasks are being handed out, in the object store
        ended = False

        def submit(task: Task) -> Any:
            if not (self._ship and task.origin and not task.error):
                return self._process.remote(task, options_ref, gc_every)
            if task.origin not in shipped:
                shipped.clear()  # the previous file's object lives on while tasks in flight hold it
                shipped[task.origin] = ray.put(np.fromfile(task.path, dtype=np.uint8))
            # only the name travels: the driver's path means nothing on another node
            return self._process_shipped.remote(
                replace(task, path=Path(task.path.name)), options_ref, shipped[task.origin], gc_every
            )

        def refill() -> None:
            nonlocal ended
            while not ended and len(pending) < 2 * self.workers:
                task = next(source, _END)
                if task is _END:
                    ended = True
                if task is None or task is _END:
                    return
                pending.append((task, submit(task)))

        while True:
            if not pending:
                refill()
                if not pending:
                    return
            task, ref = pending.popleft()
            try:
                results = ray.get(ref)
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.OutOfMemoryError):
                results = crashed(task, RAY_CRASHED)
            refill()  # before handing results out: the cluster works while this process writes
            yield task, results


_END = object()


def process_shipped(task: Task, options: Options, data: np.ndarray, gc_every: int = 1) -> list[PageResult]:
    """A Ray task on a PDF shipped through the object store: written to this node's disk under its own name
    (MuPDF reads by path), processed as any task, deleted."""
    with tempfile.TemporaryDirectory(prefix="pipeline-shipped-") as folder:
        copy = Path(folder) / task.path.name
        copy.write_bytes(data.data)
        return process_task(replace(task, path=copy), options, gc_every)


def _check_reachable(address: str) -> None:
    """Refuse a ``HOST:PORT`` nobody listens on at once: Ray itself retries such an address for minutes."""
    host, _, port = address.rpartition(":")
    if address == "auto" or address.startswith("ray://") or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ValueError(f"no Ray cluster at {address}: {exc.strerror or exc}") from None
