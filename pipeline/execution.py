"""How a run goes — workers, engine, downloads ahead, resume, limits, cleanup cadence — never what it produces.

Every :class:`Execution` gives the same bytes for the same inputs, :class:`pipeline.options.Options` and layout;
that is why these settings are kept apart from the options (and left out of the run's identity, so a run
resumed with more workers or another engine continues). Field metadata carries each setting's command-line
help, so the CLI is built from the fields and never repeats a default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pipeline.engines import ENGINES, Engine, make_engine
from pipeline.settings import setting


def default_workers() -> int:
    """The machine's cores available to this process."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Execution:
    """How a run goes. The library's defaults take the least memory (one process); the CLI's ``--workers``
    defaults to the machine's cores."""

    workers: int = setting(
        1,
        "worker processes over page ranges (default: the machine's cores, here %(default)s; 1 = least memory)",
        metavar="N",
        cli_default=default_workers(),
    )
    engine: str | Engine = setting(
        "local",
        "where page ranges run: local (default): --workers processes on this machine; ray: Ray tasks, on the "
        "cluster at --ray-address or on a local Ray of --workers CPUs started for the run (same output)",
        choices=ENGINES,
    )
    """An engine's name, or an engine made by the caller (``RayEngine(..., ship=True)``)."""
    ray_address: str | None = setting(
        None,
        "with --engine ray: 'auto' (the cluster this machine belongs to) or HOST:PORT of a Ray head",
        metavar="ADDR",
    )
    prefetch: int = setting(
        2,
        "remote inputs (s3://, hf://, https://...): at most N PDFs copied to local disk at once, each deleted "
        "once its pages are written (default: %(default)s)",
        metavar="N",
    )
    resume: bool = setting(
        True,
        "continue an interrupted run of the same command from its progress file (OUT.zip.progress or "
        "DIR/.progress, removed when a run completes); --no-resume starts over (default: --resume)",
    )
    max_pages: int | None = setting(
        None,
        "refuse a run of more than N pages in all, before processing any (default: no limit)",
        metavar="N",
    )
    max_seconds: float | None = setting(
        None,
        "stop after S seconds with what is done written (rerun the command to continue; default: no limit)",
        metavar="S",
    )
    gc_every: int = setting(
        1,
        "collect garbage and empty MuPDF's cache every N pages (default: %(default)s, the article's per-page cleanup)",
        metavar="N",
    )

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"--workers must be at least 1, got {self.workers}")
        if self.gc_every < 1:
            raise ValueError(f"--gc-every must be at least 1, got {self.gc_every}")
        if isinstance(self.engine, str) and self.engine not in ENGINES:
            raise ValueError(f"unknown engine {self.engine!r}: choose one of {', '.join(ENGINES)}")

    def make_engine(self, ocr_lang: str | None = None) -> Engine:
        """The engine this run's page ranges go to (the caller's own, when it gave one); ``ocr_lang``: the packs
        its OCR reads with, loaded once before the workers fork."""
        if isinstance(self.engine, str):
            return make_engine(self.engine, self.workers, self.ray_address, ocr_lang)
        return self.engine
