"""What an engine carries between the run and its workers: a page range in, page results out.

Both sides import this module (the engines and the per-page work in ``pipeline.worker``), so neither
imports the other; it holds plain data only, cheap to pickle to a process or a Ray node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.manifest import PageRecord

if TYPE_CHECKING:
    from pipeline.dedupe import LocalFeatures


@dataclass(frozen=True)
class Task:
    """Pages of one PDF for one worker call; ``pages`` are 0-based, empty for a file that fails to open."""

    path: Path
    stem: str
    pages: tuple[int, ...]
    thumbnail_within: tuple[float, float] = (math.inf, math.inf)
    """Score distance to the threshold under which a page may be among the report's borderline pages
    (rejected, kept): only those get a thumbnail made in the worker."""
    origin: str = ""
    """The URL a fetched file came from (``path`` is then its local copy), empty for a local file."""
    error: str = ""
    """Why the file could not even be fetched: the worker records it instead of opening ``path``."""
    dropped_over: int = -1
    """Shorter side (px) a region dropped as too small must exceed for the worker to make its thumbnail: the
    report's collector of such regions holds only larger ones once full (-1: every one)."""

    @property
    def key(self) -> str:
        """The file's identity in the progress journal: stable across runs (a local copy's path is not)."""
        return self.origin or str(self.path)


@dataclass(frozen=True)
class PageImage:
    """One encoded output image and what the writer and the deduplicator need to know about it."""

    name: str
    data: bytes
    fingerprint: str
    size: tuple[int, int]
    undersized: bool
    box: tuple[float, float, float, float] | None
    region: int | None
    words: str = ""
    """The words printed in and around the picture (its caption's ``{words}``)."""
    features: LocalFeatures | None = None
    """Its keypoints, to find it again under another box (``None`` when deduplication is off)."""
    kind: str = ""
    """What kind of picture it is (its caption's ``{kind}``, :mod:`pipeline.kinds`; empty when not asked for)."""


@dataclass(frozen=True)
class DroppedImage:
    """A picture the judge kept that was not written (too small), and why, for the report and the Space."""

    name: str
    """The image name it would have had (also in the manifest's ``too_small``)."""
    region: int | None
    """Its region number on the page, ``None`` for the whole page."""
    size: tuple[int, int]
    """``(width, height)`` in pixels it would have had at the scan's resolution."""
    reason: str
    """``too small: 180×95 px < min side 256``."""
    thumbnail: bytes | None = None
    """A small JPEG of it, from the judge's view (``None`` when the report would not keep it)."""


@dataclass
class PageResult:
    """A page's manifest record, its images, the kept pictures not written, and a thumbnail when it may be a
    borderline page."""

    record: PageRecord
    images: list[PageImage] = field(default_factory=list)
    thumbnail: bytes | None = None
    dropped: list[DroppedImage] = field(default_factory=list)
    ocr_seconds: float = 0.0
    """Worker time Tesseract took on the page (0 when it read nothing): the run's last line says OCR's cost."""


def crashed(task: Task, how: str) -> list[PageResult]:
    """Error rows for the pages of a task whose worker died (``how``: the engine's words for it)."""
    return [PageResult(PageRecord(task.path.name, index + 1, error=how)) for index in task.pages]
