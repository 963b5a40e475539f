"""Compose the run: find PDFs → fetch remote ones → plan page ranges → engine (judge, render kept, fit) →
writer, in order."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.captions import DATASET_CONFIG, DEFAULT_TEMPLATE, Captioner, CaptionTemplate
from pipeline.dedupe import DuplicateIndex, Fingerprint
from pipeline.execution import Execution
from pipeline.fetch import Fetcher, FetchError, FetchStopped, sigterm_as_exit
from pipeline.judges import threshold_of
from pipeline.layout import Layout, layout_for
from pipeline.manifest import PageRecord
from pipeline.names import StemRegistry
from pipeline.options import Options
from pipeline.report import REPORT, Borderline, Counts, Kinds, NotWritten, render_report
from pipeline.source import PdfError, check_pdf, find_pdfs, remote_name
from pipeline.tasks import PageImage, PageResult, Task
from pipeline.writer import Writer

PAGES_PER_TASK = 8
"""Most pages a worker takes at once: few enough to keep results small; fewer when a run has few pages, so
that every worker gets at least four tasks (pages differ 10× in cost: one heavy range would end the run alone)."""


@dataclass
class Progress:
    """Where the run stands after a page, for progress bars."""

    done: int
    total: int
    kept: int
    output_bytes: int


OnPage = Callable[[PageRecord, Progress], None]


class NothingToDo(Exception):
    """The run cannot start: no PDF among the inputs, or more pages than the caller allows."""


@dataclass
class Summary(Counts):
    """What a run did, for the CLI's last line and the Space's summary: the counts of this session's pages
    (``warnings``: processed with MuPDF warnings, some may be incomplete; ``too_small``: pictures the judge kept
    that were not written, their shorter side below ``min_side``), and the run's own facts."""

    resumed: int = 0
    """Pages already done by an interrupted earlier run and not processed again."""
    seconds: float = 0.0
    min_side: int = 0
    threshold: float = 0.0
    borderline: Borderline | None = None
    """Thumbnails of the pages nearest the threshold, on both sides (this session's pages)."""
    not_written: NotWritten | None = None
    """The largest of the kept pictures not written (too small), with thumbnails and reasons (this session's)."""
    kinds: Kinds | None = None
    """This session's pages by the kind of the judge's best candidate on them: kept, dropped, near the threshold."""
    output: Path = Path()
    output_bytes: int = 0
    files: dict[Path | str, FileSummary] = dataclasses.field(default_factory=dict)
    """What happened to each input PDF (path, or URL for a remote one), in input order (this session's pages)."""
    total: int = 0
    """Pages of all inputs (an unreadable file counts one); a remote file's count joins once it is fetched."""
    remote: int = 0
    """Input PDFs read from URLs (fetched to local copies)."""
    peak_disk: int = 0
    """Most local disk the run held at once: fetched copies plus the output (the output alone without URLs)."""
    stopped: str = ""
    """Why the run stopped before its last page (its time budget), or empty when it did not."""
    ocr_pages: int = 0
    """Pages Tesseract read words on (this session's)."""
    ocr_seconds: float = 0.0
    """Worker time it took on them: what ``--no-ocr`` would save."""

    def ocr_text(self) -> str:
        """OCR's cost in words, empty when it read no page."""
        if not self.ocr_pages:
            return ""
        return f"OCR read {plural(self.ocr_pages, 'page')} in {self.ocr_seconds:.1f} s of worker time"

    def describe(self) -> str:
        """The run in one paragraph for people (the Space's summary)."""
        text = (
            f"{plural(self.pages, 'page')} seen, {self.kept} kept ({plural(self.images, 'image')}), "
            f"{plural(self.errors, 'error')}, {self.warnings} with MuPDF warnings (the manifest's warning column), "
            f"{self.seconds:.1f} s."
        )
        if self.ocr_pages:
            text += f" {self.ocr_text()}."
        dropped = [self.too_small_text("“Smallest picture side”")] if self.too_small else []
        if self.duplicates:
            dropped.append(plural(self.duplicates, "duplicate"))
        if dropped:
            text += f" Kept but not written: {', '.join(dropped)}."
        if self.pages and not self.kept:
            text += " No page passed the filter: try a lower threshold."
        lost = self.kinds.warnings() if self.kinds is not None else []
        if lost:
            text += f" Pictures likely lost: {'; '.join(lost)}: check the threshold or the filter (see the report)."
        if self.stopped:
            text += f" Incomplete: {self.stopped}."
        return text

    def too_small_text(self, control: str) -> str:
        """``5 pictures too small (shorter side below --min-side 512 px; lower it to keep them)``, ``control``
        naming the setting as the reader knows it (the CLI's option, the Space's slider)."""
        return (
            f"{plural(self.too_small, 'picture')} too small "
            f"(shorter side below {control} {self.min_side} px; lower it to keep them)"
        )


@dataclass
class FileSummary(Counts):
    """One input PDF's share of a run: for the Space's per-file summary."""

    error: str = ""
    """Why the whole file was skipped (not a PDF, encrypted, damaged), when it was."""

    def describe(self) -> str:
        """One line for people: ``3 pages, 1 kept (2 images), 1 page error``, or why the file was skipped."""
        if self.error:
            return f"skipped ({self.error})"
        errors = plural(self.errors, "page error") if self.errors else "no errors"
        return f"{plural(self.pages, 'page')}, {self.kept} kept ({plural(self.images, 'image')}), {errors}"


def plural(count: int, noun: str) -> str:
    """``1 page``, ``2 pages``: summaries are read by people."""
    return f"{count} {noun}{'s' * (count != 1)}"


def run(
    inputs: Sequence[str | Path],
    layout: Layout | str | Path,
    options: Options = Options(),
    execution: Execution = Execution(),
    on_page: OnPage | None = None,
    captioner: Captioner | None = None,
) -> Summary:
    """Process every page of every PDF among ``inputs`` into ``layout`` (a path means :func:`layout_for` of it:
    ``*.zip`` a zip, anything else a folder).

    Bad files and pages are recorded in the manifest and skipped. Each page is committed to the output
    before the next one, so an interrupted run (even ``kill -9``) rerun with the same arguments continues
    where it stopped (``Execution(resume=False)`` starts over). How the run goes — workers, engine (the same
    output, in the same order, whichever), downloads of URL inputs (``s3://``, ``hf://``, ``https://``…: each
    copied here just before its pages, deleted after), page and time limits — is ``execution``'s, and never
    changes a byte of the output. ``max_pages`` refuses a run of more pages (``NothingToDo``, before any page
    is processed); ``max_seconds`` stops it after the page that passes that time, with the pages done so far
    written and the reason in ``Summary.stopped``.

    ``captioner`` fills the captions' ``{caption}`` (``models.captioner`` makes one from the model that
    ``options.captioner`` names, which must then be set): it is called here, in this process, once per page
    with the page's images that are written (duplicates left out).
    """
    with sigterm_as_exit():  # SIGTERM ends the run as Ctrl-C does: output closed resumable, temp copies removed
        pages = run_pages(inputs, layout, options, execution, captioner)
        try:
            while True:
                try:
                    record, progress = next(pages)
                except StopIteration as finished:
                    return finished.value
                if on_page is not None:
                    on_page(record, progress)
        finally:
            pages.close()


def run_pages(
    inputs: Sequence[str | Path],
    layout: Layout | str | Path,
    options: Options = Options(),
    execution: Execution = Execution(),
    captioner: Captioner | None = None,
) -> Generator[tuple[PageRecord, Progress], None, Summary]:
    """:func:`run` as a generator: yields ``(record, progress)`` after each committed page, returns the summary.

    For callers that must be able to stop a run between pages (the Space's Cancel button): closing the
    generator stops the workers and closes the output with the pages committed so far (resumable).
    """
    _check_captioner(options, captioner)
    if isinstance(layout, (str, Path)):
        layout = layout_for(layout)
    pdfs = [path if isinstance(path, str) else path.resolve() for path in find_pdfs(inputs)]
    if not pdfs:
        raise NothingToDo(f"no PDF found in {', '.join(map(str, inputs)) or 'the inputs'}")
    urls = [pdf for pdf in pdfs if isinstance(pdf, str)]
    prefetch, max_pages, max_seconds = execution.prefetch, execution.max_pages, execution.max_seconds
    if urls and prefetch < 1:
        raise ValueError(f"--prefetch must be at least 1 (got {prefetch}): a remote PDF is read from a local copy")
    if urls and max_pages is not None:
        raise NothingToDo("--max-pages needs local inputs: a remote PDF's pages are counted only once it is fetched")
    kohya = layout.kohya_config(options.size) if options.kohya_config else None
    threshold = threshold_of(options.filter, options.threshold)
    with execution.make_engine(options.reading_lang()) as runner:
        local = [pdf for pdf in pdfs if isinstance(pdf, Path)]
        counts = dict(zip(local, runner.map(_page_count, local), strict=True))
        total = sum(max(count, 1) for count in counts.values())
        if max_pages is not None and total > max_pages:
            raise NothingToDo(f"{total:,} pages in all, more than the limit of {max_pages:,} pages per run")
        writer = layout.open(_run_id(pdfs, options), execution.resume)
        done = writer.journal.done
        summary = Summary(resumed=len(done), threshold=threshold, borderline=Borderline(threshold), output=writer.path)
        summary.not_written, summary.min_side, summary.kinds = NotWritten(), options.min_side, Kinds(threshold)
        summary.files = {path: FileSummary() for path in pdfs}
        summary.remote = len(urls)
        duplicates = _duplicate_index(writer, options.dedupe)
        captions = options.captions()
        summary.total = total
        progress = Progress(done=len(done), total=total, kept=0, output_bytes=writer.size())
        deadline = None if max_seconds is None else time.monotonic() + max_seconds  # bounds downloads too
        fetcher = Fetcher(urls, prefetch, deadline) if urls else None
        flow = Flow()
        start = time.perf_counter()
        complete = False
        try:
            size = _task_size(total - len(done), runner.workers)
            plan = _plan(
                pdfs,
                counts,
                done,
                summary.borderline,
                summary.not_written,
                size,
                fetcher,
                flow,
                runner.workers,
                progress,
            )
            for task, results in runner.run(plan, options, execution.gc_every):
                for result in results:
                    summary.ocr_pages += result.ocr_seconds > 0
                    summary.ocr_seconds += result.ocr_seconds
                    record = _commit(writer, task, result, duplicates, captions, summary, captioner)
                    progress.done += 1
                    progress.kept += record.kept
                    progress.output_bytes = writer.size()
                    yield record, progress
                del results
                if flow.committed(task) and fetcher is not None:
                    fetcher.release(task.origin)
                if fetcher is not None:
                    fetcher.note_output(writer.size())
                late = max_seconds is not None and time.perf_counter() - start > max_seconds
                if late and progress.done < progress.total:
                    summary.stopped = (
                        f"stopped after the time budget of {max_seconds:g} s, "
                        f"{progress.done:,} of {progress.total:,} pages done"
                    )
                    break
            if fetcher is not None and fetcher.out_of_time and not summary.stopped:
                summary.stopped = (
                    f"stopped after the time budget of {max_seconds:g} s during a download, "
                    f"{progress.done:,} of {progress.total:,} pages done"
                )
            complete = not summary.stopped
        finally:
            writer.close(complete, _extra_files(writer, options, summary, kohya))
            summary.seconds = time.perf_counter() - start
            summary.output_bytes = os.path.getsize(writer.path) if writer.path.is_file() else writer.size()
            summary.total = progress.total
            summary.peak_disk = summary.output_bytes
            if fetcher is not None:
                fetcher.note_output(summary.output_bytes)
                summary.peak_disk = fetcher.peak_bytes
                fetcher.close()
    return summary


class Flow:
    """Tasks handed to the engine and not yet committed, per file: the plan must not wait for a download
    while any are (the download may wait for their file's deletion), and a file is released with its last."""

    def __init__(self) -> None:
        self.in_flight = 0
        self._left: dict[str, int] = {}

    def planned(self, key: str, tasks: int) -> None:
        self._left[key] = tasks

    def handed_out(self) -> None:
        self.in_flight += 1

    def committed(self, task: Task) -> bool:
        """Count ``task`` as committed; whether it was its file's last."""
        self.in_flight -= 1
        self._left[task.key] -= 1
        return self._left[task.key] == 0


def _commit(
    writer: Writer,
    task: Task,
    result: PageResult,
    duplicates: DuplicateIndex | None,
    captions: CaptionTemplate,
    summary: Summary,
    captioner: Captioner | None = None,
) -> PageRecord:
    """Drop the page's duplicate images, write the rest with captions (the captioning model's among them, asked
    here, after deduplication, so it describes only what is written), record the page, count it."""
    record, images = result.record, []
    for image in result.images:
        duplicate = (
            duplicates.check(image.name, Fingerprint.parse(image.fingerprint), image.features)
            if duplicates is not None
            else None
        )
        if duplicate is not None:
            record.duplicates.append(f"{image.name}={duplicate.of}")
            continue
        images.append(image)
        record.outputs.append(image.name)
        record.sizes.append(image.size)
        record.fingerprints.append(image.fingerprint)
        if image.undersized:
            record.undersized.append(image.name)
    source = Path(record.source).stem
    described = _described(captioner, images, record)  # no captioner without {caption} (Options checks)
    texts = [
        captions.caption(source, record.page, image.region, image.words, image.kind, text)
        for image, text in zip(images, described, strict=True)
    ]
    writer.commit((task.key, record.page), record, images, texts)
    if result.thumbnail is not None and summary.borderline is not None:
        summary.borderline.offer(record.score, record.kept, f"{record.source} p{record.page}", result.thumbnail)
    if summary.not_written is not None:
        for dropped in result.dropped:
            label = f"{record.source} p{record.page}" + (f" r{dropped.region}" if dropped.region is not None else "")
            summary.not_written.offer(min(dropped.size), label, dropped.reason, dropped.thumbnail)
    row = record.row()
    summary.add(row)
    if summary.kinds is not None:
        summary.kinds.add(row)
    file = summary.files.setdefault(task.origin or task.path, FileSummary())
    file.add(row)
    if record.page is None:
        file.error = record.error
    return record


def _check_captioner(options: Options, captioner: Captioner | None) -> None:
    """A captioning model is named in the options (the run's identity) and handed over loaded, or neither."""
    if options.captioner is not None and captioner is None:
        raise ValueError(
            f"the options name the captioning model {options.captioner!r} but none was given to run: load it "
            "(models.captioner.loaded_captioner) and pass it as captioner="
        )
    if captioner is not None and options.captioner is None:
        raise ValueError("a captioner was given but the options name no model: set Options(captioner=MODEL_ID)")


CAPTION_REASON_CHARS = 120
"""Longest reason kept for one image the captioning model failed on (the page's warning stays short)."""


def _described(captioner: Captioner | None, images: Sequence[PageImage], record: PageRecord) -> list[str]:
    """What the captioning model says each image shows, in order. One call for the page; when it fails, one per
    image, so that a bad image (or a batch too many for the GPU's memory) costs only its own ``{caption}``:
    empty, and named in the page's ``warning``. The run goes on."""
    if captioner is None or not images:
        return [""] * len(images)
    try:
        results: list[str | Exception] = list(_texts(captioner, [image.data for image in images]))
    except Exception as exc:  # noqa: BLE001 - anything the model raises: find the image(s) below, never stop
        results = [exc] if len(images) == 1 else [_one_text(captioner, image.data) for image in images]
    texts, notes = [], []
    for image, result in zip(images, results, strict=True):
        if isinstance(result, Exception):
            reason = " ".join(str(result).split()) or type(result).__name__
            if len(reason) > CAPTION_REASON_CHARS:
                reason = reason[: CAPTION_REASON_CHARS - 1] + "…"
            notes.append(f"captioner failed on {image.name}: {reason}")
        texts.append("" if isinstance(result, Exception) else result)
    record.warning = "; ".join(filter(None, [record.warning, *notes]))
    return texts


def _one_text(captioner: Captioner, jpeg: bytes) -> str | Exception:
    try:
        return _texts(captioner, [jpeg])[0]
    except Exception as exc:  # noqa: BLE001 - this image's failure, recorded by the caller
        return exc


def _texts(captioner: Captioner, jpegs: list[bytes]) -> list[str]:
    texts = captioner(jpegs)
    if len(texts) != len(jpegs):
        raise ValueError(f"the captioner gave {len(texts)} texts for {len(jpegs)} images")
    return [str(text) for text in texts]


def _duplicate_index(writer: Writer, threshold: int | None) -> DuplicateIndex | None:
    """Deduplication across the whole run; on resume, rebuilt from the pages already written (their images
    read back for their keypoints)."""
    if threshold is None:
        return None
    pairs = (
        (name, fingerprint)
        for row in writer.journal.rows()
        for name, fingerprint in zip(_split(row["outputs"]), _split(row["fingerprints"]), strict=True)
    )
    return DuplicateIndex.from_rows(pairs, threshold, writer.read)


def _extra_files(writer: Writer, options: Options, summary: Summary, kohya: str | None) -> dict[str, list[str]]:
    """The report (and optionally the kohya config) written beside the manifest at the end."""
    report = render_report(
        list(writer.journal.rows()),
        summary.threshold,
        summary.borderline,
        title="Dataset report",
        judge=options.filter,
        not_written=summary.not_written,
    )
    return {REPORT: [report]} | ({DATASET_CONFIG: [kohya]} if kohya is not None else {})


def _split(cell: str) -> list[str]:
    return cell.split(";") if cell else []


def _task_size(pages: int, workers: int) -> int:
    """Pages per task: :data:`PAGES_PER_TASK`, or fewer so that each worker gets at least four tasks."""
    return max(1, min(PAGES_PER_TASK, -(-pages // (4 * max(1, workers)))))


def _plan(
    pdfs: Sequence[Path | str],
    counts: dict[Path, int],
    done: set,
    borderline: Borderline,
    not_written: NotWritten,
    size: int,
    fetcher: Fetcher | None,
    flow: Flow,
    workers: int,
    progress: Progress,
) -> Iterator[Task | None]:
    """Page ranges of ``size`` pages, in input order, without the pages an earlier run committed.

    Lazy: each task carries the borderline and not-written collectors' state when it is handed out, so
    workers make thumbnails only for pages and pictures that may still enter them. A remote PDF's ranges
    come once its copy is fetched: until then, ``None`` (wait) while tasks are in flight, since the download
    may need the slot of a file whose last pages are among them; with nothing in flight, the plan waits for
    the download itself.
    """
    for path, stem in zip(pdfs, _unique_stems(pdfs), strict=True):
        origin, error = "", ""
        if isinstance(path, str):
            origin = path
            while not fetcher.ready(origin) and flow.in_flight:
                yield None
            try:
                path = fetcher.get(origin)
            except FetchStopped:
                return  # the time budget ran out during its download: no error row, the rerun fetches it
            except FetchError as exc:
                path, error, count = fetcher.copy_path(origin), str(exc), 0
            else:
                count = _page_count(path)  # here: the copy is on this machine's disk, maybe not on a worker's
            progress.total += max(count, 1)
            task_size = _task_size(count, workers)
        else:
            count, task_size = counts[path], size
        key = origin or str(path)
        if count == 0:  # the file cannot be fetched or opened: one task yields its error row
            ranges = [()] if (key, None) not in done else []
        else:
            todo = [index for index in range(count) if (key, index + 1) not in done]
            ranges = [tuple(todo[start : start + task_size]) for start in range(0, len(todo), task_size)]
        flow.planned(key, len(ranges))
        if not ranges and fetcher is not None and origin:
            fetcher.release(origin)
        for pages in ranges:
            flow.handed_out()
            yield Task(path, stem, pages, _within(borderline), origin, error, not_written.over())


def _within(borderline: Borderline) -> tuple[float, float]:
    return borderline.within(kept=False), borderline.within(kept=True)


def _page_count(path: Path) -> int:
    try:
        return check_pdf(path)
    except PdfError:
        return 0


UNCAPTIONED_TEMPLATE = "{trigger}, {kind}, {words}"
"""The default caption template before ``{caption}``: without a model the default writes what it wrote."""


def _run_id(pdfs: Sequence[Path | str], options: Options) -> str:
    """Identifies what a run produces (inputs and options), so only the same run is resumed. Without a captioning
    model the options are hashed as before ``captioner`` and ``{caption}`` existed (they change no byte then), so a
    run interrupted by an earlier version resumes."""
    fields = dataclasses.asdict(options)
    if options.captioner is None:
        del fields["captioner"]
        if options.caption == DEFAULT_TEMPLATE:
            fields["caption"] = UNCAPTIONED_TEMPLATE
    payload = json.dumps({"pdfs": [str(p) for p in pdfs], "options": fields}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _unique_stems(pdfs: Sequence[Path | str]) -> list[str]:
    """Image name prefixes: the PDF's stem made portable, ``~2``, ``~3``… added where it is taken already."""
    registry = StemRegistry()
    return [registry.reserve(Path(remote_name(pdf) if isinstance(pdf, str) else pdf).stem) for pdf in pdfs]
