"""What a worker does with a range of pages of one PDF: judge each from a cheap view, then render at full
resolution, fit and encode only what is kept. Runs in worker processes: it opens the PDF by path itself."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pymupdf

from pipeline.cleanup import Cleanup
from pipeline.distributor import PageResult, Task
from pipeline.fit import encode_jpeg, fit_square
from pipeline.judges import Box, Judge, make_judge
from pipeline.manifest import PageRecord
from pipeline.options import Options
from pipeline.render import is_grayscale, render, zoom_to_cover
from pipeline.source import PdfError, open_pdf

MAX_ZOOM = 8.0
"""Upper bound on the output render scale (576 dpi): beyond it MuPDF only interpolates a scan."""


def process_task(task: Task, options: Options) -> list[PageResult]:
    """Process ``task``'s pages in order; a file that cannot be opened gives one error result."""
    try:
        doc = open_pdf(task.path)
    except PdfError as exc:
        return [PageResult(PageRecord(source=task.path.name, page=None, error=str(exc)))]
    judge, cleanup = _judge(options.filter, options.threshold), _cleanup(options.gc_every)
    results = []
    with doc:
        for index in task.pages:
            results.append(process_page(doc, index, judge, options, task.stem))
            cleanup.after_page()
    return results


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
        gray = is_grayscale(page)
        regions: Sequence[Box | None] = verdict.boxes if options.crop and verdict.boxes else (None,)
        images = []
        for number, box in enumerate(regions, start=1):
            image = _full_resolution(page, view, gray, box, options.size)
            fitted = fit_square(image, options.size).convert("RGB")
            name = f"{stem}_p{index + 1:04d}" + (f"_r{number}" if box is not None else "") + ".jpg"
            images.append((name, encode_jpeg(fitted, options.quality)))
        record.outputs = [name for name, _ in images]
        return PageResult(record, images)
    except Exception as exc:  # noqa: BLE001 - one unreadable page must not end an archive run
        record.kept, record.outputs = False, []
        record.error = f"page {index + 1}: {type(exc).__name__}: {exc}"
        return PageResult(record)


def _full_resolution(page: pymupdf.Page, view: np.ndarray, gray: bool, box: Box | None, size: int) -> np.ndarray:
    """Reuse the judge's view when it already covers the output (the article's 2× render does) and has the
    page's colours; otherwise render the page or region just large enough, grey for grey scans."""
    if box is None and min(view.shape[:2]) >= size and (view.ndim == 3 or gray):
        return view
    zoom = min(zoom_to_cover(page, size, box), MAX_ZOOM)
    return render(page, zoom, "gray" if gray else "rgb", box)


@cache
def _judge(name: str, threshold: float | None) -> Judge:
    return make_judge(name, threshold)


@cache
def _cleanup(every: int) -> Cleanup:
    """One cleanup cadence per worker process, counted across its tasks."""
    return Cleanup(every)
