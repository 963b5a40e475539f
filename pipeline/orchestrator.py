"""Compose the steps: source → judge (cheap view) → full-resolution render of what is kept → fit → writer."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pymupdf

from pipeline.cleanup import Cleanup
from pipeline.fit import encode_jpeg, fit_square
from pipeline.judges import Box, Judge, make_judge
from pipeline.manifest import PageRecord
from pipeline.options import Options
from pipeline.render import render, zoom_to_cover
from pipeline.source import PdfError, check_pdf, find_pdfs, open_pdf
from pipeline.writer import open_writer

MAX_ZOOM = 8.0
"""Upper bound on the output render scale (576 dpi): beyond it MuPDF only interpolates a scan."""

OnPage = Callable[[PageRecord, int, int], None]
"""Progress callback: ``(record, pages_done, pages_total)``."""


class NothingToDo(Exception):
    """The run cannot start: no PDF among the inputs."""


@dataclass
class PageResult:
    """A page's manifest record and its encoded images ``(name, jpeg bytes)``."""

    record: PageRecord
    images: list[tuple[str, bytes]] = field(default_factory=list)


@dataclass
class Summary:
    """What a run did, for the CLI's last line and the Space's summary."""

    pages: int = 0
    kept: int = 0
    images: int = 0
    errors: int = 0
    seconds: float = 0.0
    output: Path = Path()


def run(
    inputs: Sequence[str | Path],
    output: str | Path,
    options: Options = Options(),
    on_page: OnPage | None = None,
) -> Summary:
    """Process every page of every PDF among ``inputs`` into ``output`` (``*.zip`` or a folder).

    Bad files and bad pages are recorded in the manifest and skipped; the writer is closed even when
    the run is interrupted, so everything written so far stays readable.
    """
    pdfs = find_pdfs(inputs)
    if not pdfs:
        raise NothingToDo(f"no PDF found in {', '.join(map(str, inputs)) or 'the inputs'}")
    judge = make_judge(options.filter, options.threshold)
    total = sum(_page_count(path) for path in pdfs)
    writer = open_writer(output)
    summary = Summary(output=writer.path)
    start = time.perf_counter()
    done = 0
    try:
        for path, stem in zip(pdfs, _unique_stems(pdfs), strict=True):
            for result in process_pdf(path, judge, options, stem):
                for name, data in result.images:
                    writer.add_image(name, data)
                writer.add_record(result.record)
                _count(summary, result)
                done += 1
                if on_page is not None:
                    on_page(result.record, done, total)
                del result
    finally:
        writer.close()
        summary.seconds = time.perf_counter() - start
    return summary


def process_pdf(path: Path, judge: Judge, options: Options, stem: str) -> Iterator[PageResult]:
    """Yield one result per page, opening the PDF by path; a file that cannot be opened yields one error row."""
    try:
        doc = open_pdf(path)
    except PdfError as exc:
        yield PageResult(PageRecord(source=path.name, page=None, error=str(exc)))
        return
    cleanup = Cleanup(options.gc_every)
    with doc:
        for index in range(doc.page_count):
            yield process_page(doc, index, judge, options, stem)
            cleanup.after_page()


def process_page(doc: pymupdf.Document, index: int, judge: Judge, options: Options, stem: str) -> PageResult:
    """Judge one page from its cheap view; render, fit and encode only what is kept."""
    record = PageRecord(source=Path(doc.name).name, page=index + 1)
    try:
        page = doc.load_page(index)
        view = render(page, judge.zoom, judge.colorspace)
        verdict = judge(view)
        record.score, record.boxes, record.kept = verdict.score, verdict.boxes, verdict.keep
        if not verdict.keep:
            return PageResult(record)
        regions: Sequence[Box | None] = verdict.boxes if options.crop and verdict.boxes else (None,)
        images = []
        for number, box in enumerate(regions, start=1):
            image = _full_resolution(page, view, judge, box, options.size)
            name = f"{stem}_p{index + 1:04d}" + (f"_r{number}" if box is not None else "") + ".jpg"
            images.append((name, encode_jpeg(fit_square(image, options.size), options.quality)))
        record.outputs = [name for name, _ in images]
        return PageResult(record, images)
    except Exception as exc:  # noqa: BLE001 - one unreadable page must not end an archive run
        record.kept, record.outputs = False, []
        record.error = f"page {index + 1}: {type(exc).__name__}: {exc}"
        return PageResult(record)


def _full_resolution(page: pymupdf.Page, view: np.ndarray, judge: Judge, box: Box | None, size: int) -> np.ndarray:
    """Reuse the judge's view when it already covers the output size (the article's 2× render does)."""
    if box is None and judge.colorspace == "rgb" and min(view.shape[:2]) >= size:
        return view
    zoom = min(zoom_to_cover(page, size, box), MAX_ZOOM)
    return render(page, zoom, "rgb", box)


def _page_count(path: Path) -> int:
    try:
        return check_pdf(path)
    except PdfError:
        return 1  # the file's error row


def _unique_stems(pdfs: Sequence[Path]) -> list[str]:
    """Image name prefixes: the PDF's stem, suffixed ``~2``, ``~3``… when two inputs share a stem."""
    seen: dict[str, int] = {}
    stems = []
    for path in pdfs:
        seen[path.stem] = seen.get(path.stem, 0) + 1
        stems.append(path.stem if seen[path.stem] == 1 else f"{path.stem}~{seen[path.stem]}")
    return stems


def _count(summary: Summary, result: PageResult) -> None:
    record = result.record
    summary.pages += record.page is not None
    summary.kept += record.kept
    summary.images += len(result.images)
    summary.errors += bool(record.error)
