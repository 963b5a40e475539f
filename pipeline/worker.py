"""What a worker does with a range of pages of one PDF: judge each from a cheap view, then render at the
resolution the output needs, fit, encode and fingerprint only what is kept. Runs in worker processes: it
opens the PDF by path itself."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Literal

import cv2
import numpy as np
import pymupdf

from pipeline.budget import check_page, check_view
from pipeline.cleanup import Cleanup
from pipeline.dedupe import fingerprint, local_features
from pipeline.fit import Fit, TooSmall, encode_jpeg, fit, render_scale
from pipeline.judges import Box, Judge, Verdict, make_judge
from pipeline.kinds import candidate_kind, picture_kind
from pipeline.manifest import PageRecord
from pipeline.names import safe_text
from pipeline.ocr import DEFAULT_LANG, OcrFailed, read_words
from pipeline.options import AUTO_CROP_COVERAGE, Options
from pipeline.render import is_grayscale, native_zoom, render
from pipeline.report import THUMBNAIL_SIDE, thumbnail_jpeg
from pipeline.scale import line_pitch, true_zoom
from pipeline.scan import Scan, decoder_warnings, find_scan, scan_view
from pipeline.source import PdfError, open_pdf
from pipeline.tasks import DroppedImage, PageImage, PageResult, Task
from pipeline.words import layer_words_near

# MuPDF's complaints about damaged files go to each page's ``warning`` in the manifest, not to stderr (where
# they would tear through the progress bar and be lost).
pymupdf.TOOLS.mupdf_display_errors(False)
pymupdf.TOOLS.mupdf_display_warnings(False)


def process_task(task: Task, options: Options, gc_every: int = 1) -> list[PageResult]:
    """Process ``task``'s pages in order, cleaning up every ``gc_every`` pages; a file that cannot be fetched
    or opened gives one error result."""
    try:
        if task.error:
            raise PdfError(task.error)
        doc = _open(task.path)
    except PdfError as exc:
        return [PageResult(PageRecord(source=safe_text(task.path.name), page=None, error=str(exc)))]
    judge, cleanup = _judge(options.filter, options.threshold), _cleanup(gc_every)
    results = []
    try:
        for index in task.pages:
            results.append(process_page(doc, index, judge, options, task))
            cleanup.after_page()
    finally:
        judge.release()
        if task.origin:  # a fetched copy is deleted once its pages are committed: hold no disk after that
            _close(task.path)
    return results


_opened: dict[Path, pymupdf.Document] = {}


def _open(path: Path) -> pymupdf.Document:
    """The PDF, kept open for the worker's next task, which is usually the next page range of the same file:
    opening a 320-page PDF and finding a page in it costs ~50 ms, more than a small page takes to judge."""
    if path not in _opened:
        for doc in _opened.values():
            doc.close()
        _opened.clear()
        _opened[path] = open_pdf(path)
    return _opened[path]


def _close(path: Path) -> None:
    doc = _opened.pop(path, None)
    if doc is not None:
        doc.close()


def process_page(doc: pymupdf.Document, index: int, judge: Judge, options: Options, task: Task) -> PageResult:
    """Judge one page from its cheap view; render, fit, encode and fingerprint only what is kept."""
    record = PageRecord(source=safe_text(task.path.name), page=index + 1)
    pymupdf.TOOLS.reset_mupdf_warnings()
    decoder_warnings()  # forget an earlier page's
    try:
        page = doc.load_page(index)
        verdict, view, view_zoom, scan, gray = judge_page(page, judge)
        record.score, record.boxes, record.kept = verdict.score, verdict.boxes, verdict.keep
        record.kind = _candidate_kind(view, verdict, judge)
        result = PageResult(record)
        if abs(verdict.score - judge.threshold) < task.thumbnail_within[verdict.keep]:
            result.thumbnail = thumbnail_jpeg(_shrunk(view, 2 * THUMBNAIL_SIDE))
        notes: list[str] = []
        if verdict.keep:
            boxes = verdict.boxes if _crops(options.crop, verdict.boxes) else ()
            scale = view_zoom / judge.zoom  # the page's real size over its declared one
            held, view = [view], None  # _outputs lets go of the view once the last picture is fitted
            result.images, result.dropped = _outputs(
                page, scan, held, (view_zoom, scale), gray, boxes, options, task, record, notes
            )
        record.warning = _page_warnings(doc, notes)
        result.ocr_seconds = _OCR_CLOCK.take()
        return result
    except Exception as exc:  # noqa: BLE001 - one unreadable page must not end an archive run
        record.kept = False
        record.error = f"page {index + 1}: {type(exc).__name__}: {exc}"
        return PageResult(record)


def _candidate_kind(view: np.ndarray, verdict: Verdict, judge: Judge) -> str:
    """The kind of the judge's best candidate on the page, kept or dropped, measured on the view (no render):
    ``""`` when there is none. Colour is told only where the judge's view has the page's colours (the structure
    judge sees grey)."""
    if verdict.best is None:
        return ""
    return candidate_kind(_crop(view, verdict.best), colour=judge.colorspace == "rgb")


def judge_page(page: pymupdf.Page, judge: Judge) -> tuple[Verdict, np.ndarray, float, Scan | None, bool]:
    """The judge's verdict from the cheapest faithful view of ``page``; also the view, the zoom (of the
    declared page) it was drawn at, the page's scan (if it is one) and whether it is grey, for rendering what
    is kept."""
    check_page(page, judge.zoom)  # before anything is decoded or drawn
    scan = find_scan(page)
    gray = scan.gray if scan is not None else is_grayscale(page)
    # A grey scan rendered in RGB is three equal channels: render it grey (a third of the work); judges
    # that ask for RGB accept a grey view, and their grey conversion of it is the identity.
    colorspace = "gray" if gray else judge.colorspace
    view, zoom = judge_view(page, scan, judge, colorspace)
    verdict = judge(view)
    if scan is not None and abs(verdict.score - judge.threshold) < judge.exact_within:
        del view  # before MuPDF draws the page: two page-sized views at once are the worker's peak
        view = render(page, zoom, colorspace)  # too close to call on the decoded scan: MuPDF's drawing
        verdict = judge(view)
    return verdict, view, zoom, scan, gray


def judge_view(
    page: pymupdf.Page, scan: Scan | None, judge: Judge, colorspace: Literal["gray", "rgb"]
) -> tuple[np.ndarray, float]:
    """The view ``judge`` asks for and the zoom of the declared page it is drawn at: ``judge.zoom``, or for a
    judge that measures in millimetres (``judge.real_size``) the zoom that shows the page at its real size
    when its text says the declared size is wrong (:mod:`pipeline.scale`). A scan's text is measured on its
    decoded pixels (often finer than the view) before they are reduced, so no second decode is needed unless
    the page must be drawn again."""
    pitches: list[float | None] = []

    def measure(pixels: np.ndarray, view_per_pixel: float) -> None:
        pitch = line_pitch(pixels)
        pitches.append(pitch * view_per_pixel if pitch is not None else None)

    if scan is not None:
        view = scan_view(page, scan, judge.zoom, colorspace, inspect=measure if judge.real_size else None)
    else:
        view = render(page, judge.zoom, colorspace)
    if not judge.real_size:
        return view, judge.zoom
    zoom = true_zoom(pitches[0] if pitches else line_pitch(view), judge.zoom)
    if zoom != judge.zoom:
        check_page(page, zoom)
        del view
        view = render(page, zoom, colorspace, scan=scan)
    return view, zoom


def _outputs(
    page: pymupdf.Page,
    scan: Scan | None,
    held: list[np.ndarray],
    zooms: tuple[float, float],
    gray: bool,
    boxes: Sequence[Box],
    options: Options,
    task: Task,
    record: PageRecord,
    notes: list[str],
) -> tuple[list[PageImage], list[DroppedImage]]:
    """Render each kept region (or the page) no larger than the fit needs, and never past the scan's pixels;
    the regions too small to write are returned apart, with why and (maybe) a thumbnail from the view.
    ``held``: the judge's view, alone in a list that is emptied once the last picture is fitted, so that the
    view (17-33 MB for a newspaper page) is freed before the kind, keypoints and hashes are computed (the
    caller holds no other reference). ``zooms``: the view's zoom and the page's real size over its declared
    one; ``notes`` gets what went wrong reading a picture's words (for the page's warning)."""
    view = held[0]
    spec, native = _fit_spec(options), native_zoom(page)
    view_zoom, scale = zooms
    images, dropped = [], []
    regions: Sequence[Box | None] = boxes or (None,)
    for number, box in enumerate(regions, start=1):
        name = f"{task.stem}_p{record.page:04d}" + (f"_r{number}" if box is not None else "") + ".jpg"
        x0, y0, x1, y1 = box or (0.0, 0.0, 1.0, 1.0)
        width, height = page.rect.width * (x1 - x0) * native, page.rect.height * (y1 - y0) * native
        region = number if box is not None else None
        try:
            zoom = native * render_scale(width, height, spec)
        except TooSmall:
            record.too_small.append(name)
            dropped.append(_dropped(name, region, box, (round(width), round(height)), spec, view, task))
            continue
        check_view(page.rect.width * (x1 - x0) * zoom, page.rect.height * (y1 - y0) * zoom, "the image to write")
        reusable = box is None and view_zoom >= zoom and (view.ndim == 3 or gray)
        image = view if reusable else render(page, zoom, "gray" if gray else "rgb", box, scan)
        try:
            fitted = fit(image, spec)
        except TooSmall:
            record.too_small.append(name)
            dropped.append(_dropped(name, region, box, (image.shape[1], image.shape[0]), spec, view, task))
            continue
        del image
        if number == len(regions):  # nothing below needs the page's view
            view = None
            held.clear()
        picture = fitted.image.convert("RGB")
        data = encode_jpeg(picture, options.quality)
        words = _words(page, (box,) if box is not None else record.boxes, scan, scale, options, notes)
        kind = picture_kind(fitted.image) if "kind" in _fields(options) else ""
        features = local_features(picture) if options.dedupe is not None else None
        images.append(
            PageImage(
                name,
                data,
                str(fingerprint(picture)),
                fitted.size,
                fitted.undersized,
                box,
                region,
                words,
                features,
                kind,
            )
        )
    return images, dropped


def _dropped(
    name: str, region: int | None, box: Box | None, size: tuple[int, int], spec: Fit, view: np.ndarray, task: Task
) -> DroppedImage:
    """A region too small to write: the size it would have had, why, and a thumbnail cut from the judge's
    view when the report's collector may keep it (a few kB; ``view`` is cropped without a copy)."""
    reason = f"too small: {size[0]}×{size[1]} px < min side {spec.min_side}"
    thumbnail = None
    if min(size) > task.dropped_over:
        thumbnail = thumbnail_jpeg(_shrunk(_crop(view, box), 2 * THUMBNAIL_SIDE))
    return DroppedImage(name, region, size, reason, thumbnail)


def _crop(view: np.ndarray, box: Box | None) -> np.ndarray:
    """The part of ``view`` under ``box`` (page fractions), at least one pixel; a view, not a copy."""
    if box is None:
        return view
    height, width = view.shape[:2]
    x0, y0, x1, y1 = box
    left, top = min(int(x0 * width), width - 1), min(int(y0 * height), height - 1)
    return view[top : max(top + 1, math.ceil(y1 * height)), left : max(left + 1, math.ceil(x1 * width))]


WARNING_CHARS = 300
"""Longest warning text kept per page in the manifest (MuPDF repeats itself)."""


def _page_warnings(doc: pymupdf.Document, notes: Sequence[str] = ()) -> str:
    """What MuPDF and the JPEG decoder reported since the page began (distinct lines, in order), and whether
    MuPDF repaired the file: a damaged page still renders, often partly blank or with grey blocks, so the
    manifest says so instead of staying silent. ``notes``: the page's own (OCR that failed)."""
    reported = [line for line in pymupdf.TOOLS.mupdf_warnings().splitlines() if line.strip()]
    lines = dict.fromkeys([*reported, *decoder_warnings(), *notes])
    if doc.is_repaired:
        lines = {"the file is damaged or truncated; MuPDF repaired it": None} | lines
    text = "; ".join(lines)
    return text if len(text) <= WARNING_CHARS else text[: WARNING_CHARS - 1] + "…"


def _shrunk(view: np.ndarray, side: int) -> np.ndarray:
    """``view`` area-reduced to at most ``side`` pixels on its longer side: Pillow would first copy the whole
    view (33 MB for a colour newspaper page at Matrix(2, 2)) only to make a thumbnail of it."""
    height, width = view.shape[:2]
    scale = side / max(width, height)
    if scale >= 1:
        return view
    step = int(1 / scale) // 2  # every step-th pixel first (no copy): the area resize then reads ~4 per output
    sampled = view[::step, ::step] if step > 1 else view
    return cv2.resize(
        sampled, (max(1, round(width * scale)), max(1, round(height * scale))), interpolation=cv2.INTER_AREA
    )


@cache
def _judge(name: str, threshold: float | None) -> Judge:
    return make_judge(name, threshold)


def _crops(mode: str, boxes: Sequence[Box]) -> bool:
    """Whether to write the picture regions: always, never, or (auto) when they cover less than
    :data:`AUTO_CROP_COVERAGE` of the page, so a newspaper's cartoon is written alone and a plate whole."""
    if mode == "auto":
        return bool(boxes) and sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes) < AUTO_CROP_COVERAGE
    return mode == "always"


@cache
def _fields(options: Options) -> frozenset[str]:
    """The caption's placeholders: a page's words are read, and a picture's kind measured, only when used."""
    return options.captions().fields


def _words(
    page: pymupdf.Page,
    boxes: Sequence[Box],
    scan: Scan | None,
    scale: float,
    options: Options,
    notes: list[str],
) -> str:
    """The words printed in and around ``boxes`` (the whole page without), for ``{words}``: the text layer's,
    or where it has none there, Tesseract's (a failure is noted for the page's warning, and leaves none)."""
    if "words" not in _fields(options):
        return ""
    words = layer_words_near(page, boxes)
    if words is not None:
        return words
    lang = options.reading_lang()
    if lang is None:
        return ""
    start = time.perf_counter()
    try:
        return read_words(page, boxes, lang, scan, scale, narrow=options.ocr_lang == DEFAULT_LANG)
    except OcrFailed as exc:
        notes.append(str(exc))
        return ""
    finally:
        _OCR_CLOCK.spent += time.perf_counter() - start


class _Clock:
    """Seconds spent in OCR since the page began (its pictures' bands), taken by the page's result."""

    spent = 0.0

    def take(self) -> float:
        spent, self.spent = self.spent, 0.0
        return spent


_OCR_CLOCK = _Clock()


@cache
def _fit_spec(options: Options) -> Fit:
    return options.fit_spec()


@cache
def _cleanup(every: int) -> Cleanup:
    """One cleanup cadence per worker process, counted across its tasks."""
    return Cleanup(every)
