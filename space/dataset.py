"""The PDF tab's job: uploaded PDFs and zips of PDFs → one dataset zip, with its summary, chart and galleries.

The pipeline runs in a process of its own (:mod:`space.job`): a PDF that crashes MuPDF ends that job with an error
naming the file, and the server goes on serving every other visitor. The handler is a generator that follows the
process's messages, so the page sees each page done and **Cancel** (Gradio closing the generator) kills the process.
"""

import spaces  # first: on ZeroGPU it must set up CUDA handling before torch is imported

# isort: split
import html
import io
import shutil
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import gradio as gr
from PIL import Image

from models import captioner
from pipeline import Execution, Options, Summary
from pipeline.captions import CaptionTemplate
from pipeline.judges import DEFAULT_JUDGE, parse_threshold
from pipeline.report import REPORT, histogram, histogram_svg
from pipeline.writer import read_images, read_manifest, read_text
from space import disk, settings
from space.job import Job, JobDied, Request

GALLERY_LIMIT = 12
HEARTBEAT_S = 5.0
"""Longest the handler waits for its process without yielding (the last status again): Gradio can close the
generator (Cancel) only between yields, so a slow range of pages still ends within this once cancelled."""
AFTER_DONE_S = 5.0
"""How long a job's process may take to exit after its last message before it is killed."""

if settings.CAPTIONER:
    captioner.check_captioner(settings.CAPTIONER)  # a wrong id fails at start, not in a visitor's job


@spaces.GPU(duration=settings.CAPTION_GPU_DURATION)
def describe(jpegs: list[bytes]) -> list[str]:
    """What ``CAPTIONER`` says each of a page's written images shows: loaded, asked and freed within the call, as
    the classifier is (nothing held on the shared GPU between pages or jobs). Called here, in the server, for the
    job's process: the GPU slot is the server's."""
    return captioner.caption_jpegs(jpegs, settings.CAPTIONER)


def pdf_to_dataset(
    pdfs: list[str] | None,
    threshold: str = "",
    size: int = Options().size,
    filter_name: str = DEFAULT_JUDGE,
    fit: str = Options().fit,
    crop: str = Options().crop,
    trigger: str = Options().trigger,
    caption: str = Options().caption,
    dedupe: int = Options().dedupe,
    min_side: int = Options().min_side,
    ocr: bool = Options().ocr,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio's documented way to inject progress
) -> Iterator[tuple[object, ...]]:
    """Run the pipeline on the uploaded PDFs and zips of PDFs as one run into one zip (CPU only, in a process of
    its own).

    A generator, so that **Cancel** can stop it: Gradio closes it, which kills the job's process and frees the
    queue's slot. Yields a running status after each page; the last yield is the zip, a per-file summary, the score
    histogram, some kept images, the rejected pages nearest the threshold, the report and the kept pictures not
    written (too small for ``min_side``), so the threshold and the smallest picture side can be judged before
    downloading.
    """
    if not pdfs:
        raise pdf_error("No PDF: upload one or more scanned PDFs (or a .zip of PDFs), then press Build dataset.")
    try:
        template = caption or Options().caption
        describes = bool(settings.CAPTIONER) and "caption" in CaptionTemplate(template).fields
        options = Options(
            filter=filter_name,
            threshold=parse_threshold(threshold),
            size=int(size),
            fit=fit,
            crop=crop or Options().crop,
            trigger=trigger or "",
            caption=template,
            captioner=settings.CAPTIONER if describes else None,
            dedupe=None if dedupe is None or dedupe < 0 else int(dedupe),
            min_side=Options().min_side if min_side is None else int(min_side),
            ocr=Options().ocr if ocr is None else bool(ocr),
        )
    except ValueError as exc:
        raise pdf_error(str(exc)) from None
    disk.check_disk()
    work = disk.work_dir()
    limits = Execution(resume=False, max_pages=settings.MAX_PAGES, max_seconds=settings.MAX_JOB_SECONDS)
    uploads = [str(path) for path in pdfs]  # plain str: Gradio's NamedString would import Gradio in the job
    request = Request(uploads, work, zip_name(pdfs), options, limits, settings.MAX_UNPACKED_MB * 2**20, describes)
    try:
        job, finished = Job(request), False
        try:
            summary, names, problems = yield from _follow(job, request, progress)
            finished = True
        finally:  # Cancel (GeneratorExit here), a crash, the timer: the process is killed before its folder goes
            job.stop(wait=AFTER_DONE_S if finished else 0)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)  # cancelled or failed: nothing of it will be downloaded
        raise
    finally:
        shutil.rmtree(work / "unpacked", ignore_errors=True)
        shutil.rmtree(work / "tmp", ignore_errors=True)
    yield results(summary, names, problems)
    shutil.rmtree(work, ignore_errors=True)  # Gradio has made its own copy of the zip: keep one, not two


def _follow(
    job: Job, request: Request, progress: gr.Progress
) -> Generator[tuple[object, ...], None, tuple[Summary, dict[Path, str], list[str]]]:
    """The job's messages as the page's running updates, until its summary; its refusals, its process's end and
    its time limit as errors that name the file."""
    deadline = time.monotonic() + settings.MAX_JOB_SECONDS + settings.JOB_GRACE_S
    names: dict[Path, str] = {}
    problems: list[str] = []
    status = ""
    try:
        while (left := deadline - time.monotonic()) > 0:
            message = job.receive(min(HEARTBEAT_S, left))
            kind = message[0] if message else None
            if kind is None and status:
                yield _status(status)
            elif kind == "reading":
                _, names, problems = message
                status = f"Reading {len(names)} PDF{'s' * (len(names) != 1)}…"
                yield _status(status)
            elif kind == "page":
                _, source, page, done, total, kept = message
                desc = f"Page {done}/{total}, {kept} kept"
                progress((done, total), desc=desc, unit="pages")
                status = f"{desc} · {source} p{page or '-'}"
                yield _status(status)
            elif kind == "describe":
                job.answer(_described(message[1]))
            elif kind == "done":
                return message[1], names, problems
            elif kind == "refused":
                raise pdf_error(message[1])
            elif kind == "failed":
                raise _job_error(f"{_file(job, names, request)}: the PDF job failed ({message[1]})")
    except JobDied as died:
        raise _job_error(f"{_file(job, names, request)}: the PDF job's process {died.how} on this file") from None
    limit = settings.MAX_JOB_SECONDS + settings.JOB_GRACE_S
    raise _job_error(f"{_file(job, names, request)}: the PDF job was stopped after {limit:g} s, a page never ended")


def _described(jpegs: list[bytes]) -> tuple[str, object]:
    """The reply to the process's ``describe``: the texts, or why the model failed (the page's warning says it)."""
    try:
        return "described", describe(jpegs)
    except Exception as exc:  # noqa: BLE001 - as the pipeline takes a captioner's failure: a warning, the run goes on
        return "failed", " ".join(str(exc).split()) or type(exc).__name__


def _file(job: Job, names: dict[Path, str], request: Request) -> str:
    """The file the job was on, as the visitor knows it (``issues.zip › 1890/gazette.pdf``); the uploads before it
    had said one."""
    if job.file is None:
        return ", ".join(Path(upload).name for upload in request.uploads)
    return names.get(Path(job.file), Path(job.file).name)


def _job_error(message: str) -> gr.Error:
    """A job that ended without its result: logged (a crash is worth an operator's look), nothing kept."""
    return gr.Error(
        f"{message}; nothing of the run was kept. A PDF that crashes MuPDF can be read with the CLI "
        "(python -m pipeline), which records its bad pages as errors and goes on.",
        title="Cannot build dataset",
    )


def _status(text: str) -> tuple[object, ...]:
    """A running update: the summary box, the chart and report unchanged, and the file outputs (zip, galleries) empty,
    as the Build button left them. Not ``gr.skip()`` for those: an update makes Gradio give the session its own copy
    of the component, and files that copy is given are never deleted (``delete_cache`` sees only the page's own)."""
    return None, text, gr.skip(), None, None, gr.skip(), None


def results(summary: Summary, names: dict[Path, str], problems: list[str]) -> tuple[object, ...]:
    """The job's last yield: the zip, the per-file summary, the chart, the galleries and the report."""
    lines = [summary.describe()]
    lines += [f"{names.get(path, path.name)}: {file.describe()}" for path, file in summary.files.items()]
    lines += [f"not processed: {problem}" for problem in problems]
    scores = [float(row["score"]) for row in read_manifest(summary.output) if row["score"]]
    chart = histogram_svg(histogram(scores, summary.threshold), width=480, height=200) if scores else ""
    rejected = [
        (Image.open(io.BytesIO(thumb.jpeg)), f"{thumb.label} · score {thumb.score:.2f}")
        for thumb in summary.borderline.thumbnails(kept=False)
    ]
    report = read_text(summary.output, REPORT)
    viewer = f'<iframe title="Dataset report" class="report" srcdoc="{html.escape(report)}"></iframe>'
    kept = read_images(summary.output, limit=GALLERY_LIMIT)
    not_written = [
        (Image.open(io.BytesIO(picture.jpeg)), f"{picture.label} · {picture.reason}")
        for picture in summary.not_written.pictures()
    ]
    return str(summary.output), "\n".join(lines), chart, kept, rejected, viewer, not_written


def zip_name(uploads: list[str]) -> str:
    """``<first file>_dataset.zip``, ``…_and_N_more_dataset.zip`` for several."""
    stem = Path(uploads[0]).stem
    return f"{stem}_dataset.zip" if len(uploads) == 1 else f"{stem}_and_{len(uploads) - 1}_more_dataset.zip"


def pdf_error(message: str) -> gr.Error:
    """A user mistake, not a server fault: shown to the user, kept out of the server log."""
    return gr.Error(message, title="Cannot build dataset", print_exception=False)


def cleared(run_size: int) -> tuple[object, ...]:
    """Build pressed: Build off, Cancel on, not cancelled, the last run's results and review gone (a cancelled run
    must not seem to have delivered them), and the size kohya's config will be given."""
    return (
        *(gr.Button(interactive=False), gr.Button(interactive=True), False, None, "", None, None, "", None),
        *(None, gr.Column(visible=False), gr.Column(visible=False), run_size),
    )


def ended(was_cancelled: bool) -> tuple[object, ...]:
    """After the run's last message (so a cancelled run's late updates cannot overwrite it): Build on, Cancel off,
    and the summary says a cancelled run kept nothing."""
    said = "Cancelled: the run was stopped; nothing of it was kept." if was_cancelled else gr.skip()
    return gr.Button(interactive=True), gr.Button(interactive=False), said


def cancel() -> tuple[bool, gr.Button]:
    """Cancel pressed: remembered (for :func:`ended`), and the button off."""
    return True, gr.Button(interactive=False)
