"""The Space: cattle triage on ZeroGPU, scanned PDF → image dataset on the CPU, both callable as an API.

Layout first, then wiring. The work lives in ``models/`` (the classifier and its lifecycle) and
``pipeline/`` (PDF pages → curated zip); the handlers here only translate between Gradio and them,
and turn expected failures into ``gr.Error`` so users see what went wrong and the server keeps serving.

Run: ``python app.py`` (honours ``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT``; ``MODEL_ID``, ``MODEL_POLICY``,
``CONTACTS``, ``CAPTIONER``, ``MAX_FILE_SIZE`` and ``GPU_DURATION`` configure the rest: docs/space.md).
"""

import spaces  # first, unconditionally: on ZeroGPU it must set up CUDA handling before torch is imported

# isort: split
import atexit
import html
import inspect
import io
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import gradio as gr
from gradio import FileData
from gradio.block_function import BlockFunction
from gradio.exceptions import InvalidPathError
from gradio.state_holder import SessionState
from PIL import Image

import models
from models import advice, captioner, contacts, framing, i18n
from models import report as case_pdf  # `report` is the PDF tab's report viewer
from pipeline import Execution, NothingToDo, Options, OutputError, PdfError, Summary, ZipLayout, run_pages
from pipeline.captions import CaptionTemplate
from pipeline.fit import MODES as FIT_MODES
from pipeline.judges import DEFAULT_JUDGE, JUDGES, parse_threshold, threshold_of
from pipeline.options import CROP_MODES
from pipeline.report import REPORT, histogram, histogram_svg
from pipeline.review import TABLE as REVIEW_TABLE
from pipeline.review import (
    DatasetGone,
    Outcome,
    Review,
    ReviewError,
    kohya_folder,
    reviewed_name,
    thumbnails,
    write_review,
)
from pipeline.source import gather_uploads
from pipeline.writer import read_images, read_manifest, read_text

GPU_DURATION = int(os.environ.get("GPU_DURATION", "20"))
"""Seconds of ZeroGPU requested per classify call; quota is charged on this, so keep it tight."""
MAX_FILE_SIZE = os.environ.get("MAX_FILE_SIZE", "100mb")
"""Upload limit for any file (Gradio refuses bigger uploads before a handler runs)."""
MAX_UNPACKED_MB = int(os.environ.get("MAX_UNPACKED_MB", "2048"))
"""Most megabytes of PDFs unpacked from the zips of one request (the Space's disk is shared by everyone)."""
MAX_PAGES = int(os.environ.get("MAX_PAGES", "2000"))
"""Most pages per PDF job: more is refused at once (an archive belongs to the CLI)."""
MAX_JOB_SECONDS = float(os.environ.get("MAX_JOB_SECONDS", "600"))
"""A PDF job stops after this long and returns what it has done, so the queue keeps moving."""
PDF_JOBS = int(os.environ.get("PDF_JOBS", "2"))
"""PDF jobs at once: two, so that a short job is not stuck behind a long one (each uses one core)."""
MIN_FREE_DISK_MB = int(os.environ.get("MIN_FREE_DISK_MB", "2048"))
"""New PDF jobs are refused while the disk has less free space than this."""
CACHE_MAX_AGE_S = int(os.environ.get("CACHE_MAX_AGE_S", "1800"))
"""Uploads and results are deleted this long after they were made (checked every tenth of it)."""
GALLERY_LIMIT = 12
PHOTO_TYPES = ["image", ".heic", ".heif"]
"""Desktop browsers give an iPhone's HEIC photos no image type: without their extensions Gradio refuses them."""
WORK_MAX_AGE_S = 3600
"""Work folders left by a job that ended abnormally are removed after this long; a finished job removes its own."""

CAPTIONER = os.environ.get("CAPTIONER", "").strip()
"""An image-to-text model (a Hub id or a folder: BLIP, GIT, Florence-2) whose words fill ``{caption}`` in the PDF
tab's captions; none by default. Loaded per page of a job inside ``@spaces.GPU`` (:func:`describe`), freed after."""
CAPTION_GPU_DURATION = int(os.environ.get("CAPTION_GPU_DURATION", "30"))
"""Seconds of ZeroGPU requested per page captioned: loading the model is most of it."""
if CAPTIONER:
    captioner.check_captioner(CAPTIONER)  # a wrong id fails at start, not in a visitor's job

CLASSIFIER = models.make_classifier()
"""Per-request by default; with ``MODEL_POLICY=resident`` this line loads the model at import."""
CONTACTS = contacts.from_env()
"""Whom to call about a notifiable disease, per region (``CONTACTS``: ``models.contacts``); empty: how to find them."""
_REPORTS = Path(tempfile.mkdtemp(prefix="space-reports-"))
atexit.register(shutil.rmtree, _REPORTS, ignore_errors=True)

_JUDGE_DEFAULTS = ", ".join(f"{name}: {threshold_of(name):g}" for name in sorted(JUDGES))
_WORK_ROOT = Path(tempfile.mkdtemp(prefix="space-pdf-"))
atexit.register(shutil.rmtree, _WORK_ROOT, ignore_errors=True)


def _model_name(model_id: str) -> str:
    """The model as visitors may see it: a Hub id, or a local folder's name (never a server path)."""
    return Path(model_id).name if Path(model_id).expanduser().exists() else model_id


@spaces.GPU(duration=GPU_DURATION)
def classify(photo: str | None, more_photos: list[str] | None = None) -> tuple[str, dict[str, float] | None, str]:
    """``/classify`` for programs (the page's Classify: :func:`show_case`): one photo plus optional extras; returns
    the (case) headline, the first photo's numbers and the details (advice, per-photo table), in English.

    The headline is its own output: with a notifiable-first operating point it is not always the most probable
    class (no sign of disease needs more confidence than a disease, else *inconclusive*), so a chart's heading
    would contradict it. Runs inside the ZeroGPU handler: everything returned is plain Python (failures:
    :func:`_assess`).
    """
    paths = [photo, *(more_photos or [])]
    case = _assess(paths)
    names = [Path(p).name for p in paths if p]
    return _render(case, names, _model_name(str(CLASSIFIER.model_id)), i18n.ENGLISH, None)


def _render(
    case: models.CaseVerdict, names: list[str], model: str, lang: str, region: str | None, *, page: bool = False
) -> tuple[str, dict[str, float] | None, str]:
    """A case in ``lang``: the headline, the first photo's numbers (chart) and the details (headline, advice, whom
    to call when a notifiable disease is suspected, per-photo table, model). On the ``page`` the verdict box holds
    the headline (with the case's photo count) and the details start with the advice: the headline twice pushed
    the advice below a phone's first screen."""
    first = advice.numbers(case.photos[0], lang) if case.photos else {}
    scores = dict(sorted(first.items(), key=lambda kv: -kv[1])) if first else None
    headline = advice.headline(case, lang)
    title = i18n.text("headline.case", lang, headline=headline, n=len(names)) if len(names) > 1 else headline
    lines = [advice.advice(case, lang)] if page else [f"### {title}", advice.advice(case, lang)]
    if advice.to_report(case):
        lines.append(contacts.markdown(CONTACTS, region, lang))
    lines += [advice.table(case, names, lang), i18n.text("model", lang, name=model)]
    return title if page else headline, scores, "\n\n".join(line for line in lines if line)


def show_case(photo: str | None, more_photos: list[str] | None, lang: str, region: str | None) -> tuple[object, ...]:
    """The page's Classify (outputs: ``shown_case`` and the session's case): the case as data from
    :func:`classify_json`'s GPU handler (kept in the session, so a switch of language or region words it again
    without the model), shown in the visitor's language with its case report; failures are worded in it too."""
    paths = [p for p in (photo, *(more_photos or [])) if p]
    if not paths:
        message = i18n.text("error.no_image", lang, formats=models.classifier.PHOTO_FORMATS)
        raise gr.Error(message, title=i18n.text("problem.title", lang), print_exception=False)
    uploads = [{"path": p, "orig_name": Path(p).name} for p in paths]
    try:
        data = classify_json(uploads[0], uploads[1:])
    except gr.Error as exc:
        message = i18n.translate(exc.message, lang) or i18n.text("problem.other", lang, message=exc.message)
        title = "problem.model" if exc.title == i18n.text("problem.model") else "problem.title"
        raise gr.Error(message, title=i18n.text(title, lang), print_exception=False) from None
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    state = {"case": data, "paths": paths, "version": case_pdf.model_version(str(CLASSIFIER.model_id)), "when": when}
    return (*_reword(lang, region, state), state)


def _view(state: dict[str, Any], lang: str, region: str | None) -> tuple[str, dict[str, float] | None, str, str]:
    """A classified case (``show_case``'s state) worded in ``lang``: the page's outputs and a fresh case report."""
    data = state["case"]
    photos = [models.PhotoVerdict(**{k: v for k, v in p.items() if k != "file"}) for p in data["photos"]]
    case = models.CaseVerdict(data["verdict"], data["probabilities"], photos)
    names = [p["file"] for p in data["photos"]]
    pdf = case_pdf.build(
        case,
        names,
        state["paths"],
        _swept(_REPORTS),  # Gradio keeps its own copy of each served report
        lang=lang,
        model=state["version"],
        when=datetime.fromisoformat(state["when"]),
        configured=CONTACTS,
        region=region,
    )
    return (*_render(case, names, data["model"], lang, region, page=True), str(pdf))


@spaces.GPU(duration=GPU_DURATION)
def classify_json(photo: FileData | None, more_photos: list[FileData] | None = None) -> dict[str, object]:
    """``/classify_json`` (no UI; what it returns: its ``api_description`` below): a program sending a case of
    several photos gets each photo's answer as data instead of parsing ``/classify``'s Markdown table. Their shapes
    were checked before it runs (:class:`_Space`)."""
    uploads = [f for f in (photo, *(more_photos or [])) if f]
    case = _assess([f["path"] for f in uploads])
    return {
        "verdict": case.verdict,
        "probabilities": case.probabilities,
        "photos": [
            {"file": f.get("orig_name") or Path(f["path"]).name, **asdict(p)}
            for f, p in zip(uploads, case.photos, strict=True)
        ],
        "model": _model_name(str(CLASSIFIER.model_id)),
    }


def _assess(paths: list[str | None]) -> models.CaseVerdict:
    """Open the photos and classify them as one case; expected failures become ``gr.Error`` here, inside the GPU
    handler, because only that keeps its message across the ZeroGPU process boundary."""
    try:
        return CLASSIFIER.assess(models.open_images(paths))
    except models.ModelLoadError as exc:  # logged: the operator must act
        raise gr.Error(str(exc), title=i18n.text("problem.model")) from None
    except models.ModelError as exc:
        raise gr.Error(str(exc), title=i18n.text("problem.title"), print_exception=False) from None


@spaces.GPU(duration=CAPTION_GPU_DURATION)
def describe(jpegs: list[bytes]) -> list[str]:
    """What ``CAPTIONER`` says each of a page's written images shows: loaded, asked and freed within the call, as
    the classifier is (nothing held on the shared GPU between pages or jobs)."""
    return captioner.caption_jpegs(jpegs, CAPTIONER)


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
    progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio's documented way to inject progress
) -> Iterator[tuple[object, ...]]:
    """Run the pipeline on the uploaded PDFs and zips of PDFs as one run into one zip (CPU only).

    A generator, so that **Cancel** can stop it between pages: Gradio closes it, which stops the run and
    frees the queue's slot. Yields a running status after each page; the last yield is the zip, a
    per-file summary, the score histogram, some kept images, the rejected pages nearest the threshold,
    the report and the kept pictures not written (too small for ``min_side``), so the threshold and the
    smallest picture side can be judged before downloading.
    """
    if not pdfs:
        raise _pdf_error("No PDF: upload one or more scanned PDFs (or a .zip of PDFs), then press Build dataset.")
    try:
        template = caption or Options().caption
        describes = bool(CAPTIONER) and "caption" in CaptionTemplate(template).fields
        options = Options(
            filter=filter_name,
            threshold=parse_threshold(threshold),
            size=int(size),
            fit=fit,
            crop=crop or Options().crop,
            trigger=trigger or "",
            caption=template,
            captioner=CAPTIONER if describes else None,
            dedupe=None if dedupe is None or dedupe < 0 else int(dedupe),
            min_side=Options().min_side if min_side is None else int(min_side),
        )
    except ValueError as exc:
        raise _pdf_error(str(exc)) from None
    _check_disk()
    work = _work_dir()
    try:
        names, problems = gather_uploads(pdfs, work / "unpacked", MAX_UNPACKED_MB * 2**20)
        yield _status(f"Reading {len(names)} PDF{'s' * (len(names) != 1)}…")
        zip_path = work / _zip_name(pdfs)
        limits = Execution(resume=False, max_pages=MAX_PAGES, max_seconds=MAX_JOB_SECONDS)
        pages = run_pages(list(names), ZipLayout(zip_path), options, limits, describe if describes else None)
        try:
            while True:
                try:
                    record, where = next(pages)
                except StopIteration as finished:
                    summary = finished.value
                    break
                desc = f"Page {where.done}/{where.total}, {where.kept} kept"
                progress((where.done, where.total), desc=desc, unit="pages")
                yield _status(f"{desc} · {record.source} p{record.page or '-'}")
        finally:
            pages.close()  # on Cancel (GeneratorExit here) this stops the run's workers and closes the zip
    except (NothingToDo, OutputError, PdfError) as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise _pdf_error(str(exc)) from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)  # cancelled or failed: nothing of it will be downloaded
        raise
    finally:
        shutil.rmtree(work / "unpacked", ignore_errors=True)
    yield _results(summary, names, problems)
    shutil.rmtree(work, ignore_errors=True)  # Gradio has made its own copy of the zip: keep one, not two


def _status(text: str) -> tuple[object, ...]:
    """A running update: the summary box, the chart and report unchanged, and the file outputs (zip, galleries) empty,
    as the Build button left them. Not ``gr.skip()`` for those: an update makes Gradio give the session its own copy
    of the component, and files that copy is given are never deleted (``delete_cache`` sees only the page's own)."""
    return None, text, gr.skip(), None, None, gr.skip(), None


def _results(summary: Summary, names: dict[Path, str], problems: list[str]) -> tuple[object, ...]:
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


# ---------------------------------------------------------------- review (pipeline/review.py does the work)
def review_open(dataset: str | None, size: int) -> tuple[object, ...]:
    """After a run: the review of its zip, page 1 (hidden when the run wrote no image)."""
    review = _reviewing(Review.open, dataset, size) if dataset else None
    if review is None or not review.items:
        return None, gr.Column(visible=False), "", None, None, gr.Dropdown(choices=[], value=None), gr.skip()
    where, gallery, rows, page = _review_page(review, 1)
    return review, gr.Column(visible=True), where, gallery, rows, page, kohya_folder(dataset)


def review_turn(review: Review | None, rows: list[list[object]] | None, page: int | None, step: int) -> tuple:
    """Another page (``step`` -1, +1, or 0 for the page chosen), once the shown page's edits are taken."""
    review = _review_rows(review, rows)
    return review, *_review_page(review, review.clamp((page or 1) + step)), gr.Column(visible=False)


def review_download(
    review: Review | None, rows: list[list[object]] | None, page: int | None, kohya: bool, kohya_dir: str
) -> tuple[object, ...]:
    """The reviewed zip of the review so far (the shown page's edits taken first), shown with what it holds."""
    review = _review_rows(review, rows)
    folder = kohya_folder(review.dataset, kohya_dir) if kohya else None
    target, outcome = _write_review(
        review.dataset, review.dataset, review.captions, review.dropped, folder, review.size
    )
    note = f"**{target.name}**: {outcome.describe()}"
    return review, str(target), note, review.describe(review.clamp(page)), gr.Column(visible=True)


def review_dataset(
    dataset: FileData | None,
    captions: dict[str, str] | None = None,
    drop: list[str] | None = None,
    kohya_config: bool = False,
    kohya_image_dir: str = "",
    size: int = Options().size,
) -> tuple[FileData, str]:
    """``/review_dataset`` (no UI; see its ``api_description`` below): the review step for programs."""
    if not dataset:
        raise _review_error("No dataset: send the zip /pdf_to_dataset returned, as handle_file(path).")
    name = dataset.get("orig_name") or Path(dataset["path"]).name
    folder = kohya_folder(name, kohya_image_dir) if kohya_config else None
    target, outcome = _write_review(dataset["path"], name, captions or {}, drop or [], folder, int(size))
    return FileData(path=str(target), orig_name=target.name), outcome.describe()


def _write_review(
    dataset: str, name: str, captions: dict[str, str], drop: Iterable[str], kohya_dir: str | None, size: int
) -> tuple[Path, Outcome]:
    """The reviewed zip, written straight into Gradio's cache: served from there without a copy, and deleted with
    the rest of the cache ``CACHE_MAX_AGE_S`` after it was made."""
    _check_disk()
    folder = Path(demo.GRADIO_CACHE) / uuid.uuid4().hex
    folder.mkdir(parents=True)
    target = folder / reviewed_name(name)
    try:
        return target, _reviewing(write_review, dataset, target, captions, drop, kohya_dir, size)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _review_rows(review: Review | None, rows: list[list[object]] | None) -> Review:
    """The review with the shown page's rows taken (an empty kept caption: a ``gr.Error``, nothing taken)."""
    if review is None:
        raise _review_error("Nothing to review: build a dataset first.")
    _reviewing(review.apply, rows or [])
    return review


def _review_page(review: Review, number: int) -> tuple[object, ...]:
    """Page ``number`` for the page: where the review stands, the thumbnails, the table rows, the page menu."""
    rows, items = review.rows(number), review.page(number)
    pictures = _reviewing(thumbnails, review.dataset, [item.name for item in items])
    shown = zip(pictures, items, rows, strict=True)
    gallery = [(picture, f"#{row[0]}{'' if row[1] else ' (left out)'} {item.name}") for picture, item, row in shown]
    return review.describe(number), gallery, rows, gr.Dropdown(choices=review.choices(), value=review.clamp(number))


def _reviewing(action: Any, *args: object) -> Any:
    """``action(*args)`` with the review's failures as sentences for the user."""
    try:
        return action(*args)
    except DatasetGone:
        raise _review_error(
            f"This dataset is no longer on the Space: results are deleted {_age(CACHE_MAX_AGE_S)} after they are "
            "made. Build it again (the review's changes were not kept)."
        ) from None
    except ReviewError as exc:
        raise _review_error(str(exc)) from None


def _age(seconds: int) -> str:
    return f"{seconds // 60} minutes" if seconds >= 120 else f"{seconds} seconds"


def _review_error(message: str) -> gr.Error:
    return gr.Error(message, title="Cannot review", print_exception=False)


def _check_disk() -> None:
    """New work is refused while the disk has less than ``MIN_FREE_DISK_MB`` free (it is shared by every visitor)."""
    free_mb = shutil.disk_usage(_WORK_ROOT).free / 2**20
    if free_mb < MIN_FREE_DISK_MB:
        raise gr.Error(f"The Space's disk is nearly full ({free_mb:,.0f} MB free): please try again later.")


def _gallery(label: str, elem_id: str) -> gr.Gallery:
    """One of the PDF tab's result galleries: four thumbnails a row, whole pictures."""
    return gr.Gallery(label=label, columns=4, height=240, preview=False, object_fit="contain", elem_id=elem_id)


def _zip_name(uploads: list[str]) -> str:
    """``<first file>_dataset.zip``, ``…_and_N_more_dataset.zip`` for several."""
    stem = Path(uploads[0]).stem
    return f"{stem}_dataset.zip" if len(uploads) == 1 else f"{stem}_and_{len(uploads) - 1}_more_dataset.zip"


def _pdf_error(message: str) -> gr.Error:
    """A user mistake, not a server fault: shown to the user, kept out of the server log."""
    return gr.Error(message, title="Cannot build dataset", print_exception=False)


def _work_dir() -> Path:
    """A fresh folder for one request's zip (older requests' folders swept first)."""
    path = _swept(_WORK_ROOT) / uuid.uuid4().hex
    path.mkdir()
    return path


def _swept(root: Path) -> Path:
    """``root`` without its folders older than ``WORK_MAX_AGE_S`` (one request's files each)."""
    now = time.time()
    for old in root.iterdir():
        if now - old.stat().st_mtime > WORK_MAX_AGE_S:
            shutil.rmtree(old, ignore_errors=True)
    return root


# ---------------------------------------------------------------- request shapes
_FILE_META = {"_type": "gradio.FileData"}


class _Space(gr.Blocks):
    """``gr.Blocks`` whose requests of the wrong shape fail with one sentence that says what to send.

    Gradio checks file inputs before a handler runs, and what fails there (a path as a string, a number, a list for
    one file, a file never uploaded, too few values) reaches a program as ``{"error": null}``; one file where a list
    goes is taken as a list of one here, since no handler would see it. A dict that is only
    ``{"path": ...}`` is worse: Gradio does not see a file in it, so an ``gr.api`` handler would open that path on
    this server. Files are checked here, then every remaining failure before the handler becomes a ``gr.Error``."""

    async def preprocess_data(
        self, block_fn: BlockFunction, inputs: list[Any], state: SessionState | None, explicit_call: bool = False
    ) -> list[Any]:
        where = f"/{block_fn.api_name or block_fn.name}"
        names = _input_names(block_fn)
        if len(inputs) < len(names):
            raise _request_error(
                f"{where} takes {len(names)} values ({', '.join(names)}), not {len(inputs)}: send None for one "
                "left out."
            )
        inputs = list(inputs)
        for i, (block, name) in enumerate(zip(block_fn.inputs, names, strict=False)):
            count = _file_count(block, block_fn.fn, name)
            if count == "multiple" and _is_file(inputs[i]):
                inputs[i] = [inputs[i]]  # one file where a list goes (the first release's /pdf_to_dataset call)
            if (problem := _file_problem(count, inputs[i])) is not None:
                raise _request_error(f"{where}: {name} must be {problem}.")
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except gr.Error:
            raise
        except InvalidPathError:
            raise _request_error(
                f"{where}: a file in the request was never uploaded here; send each as handle_file(path), which "
                "uploads it."
            ) from None
        except Exception as exc:  # whatever else Gradio refuses: one sentence; the log keeps the traceback
            raise gr.Error(f"{where}: the request's values could not be read ({type(exc).__name__}).") from exc


def _request_error(message: str) -> gr.Error:
    """A program's mistake: its message is the answer, nothing for the server log."""
    return gr.Error(message, title="Wrong request", print_exception=False)


def _input_names(block_fn: BlockFunction) -> list[str]:
    """The handler's parameter names for its inputs, in order (what the API page calls them)."""
    parameters = list(inspect.signature(block_fn.fn).parameters) if block_fn.fn else []
    return [parameters[i] if i < len(parameters) else f"value {i + 1}" for i in range(len(block_fn.inputs))]


def _file_count(block: gr.components.Component, fn: Any, name: str) -> str | None:
    """``single`` or ``multiple`` for an input that takes files (a ``gr.File``, or a ``gr.api`` parameter typed
    ``FileData`` or ``list[FileData]``), else ``None``."""
    if isinstance(block, gr.File):
        return "single" if block.file_count == "single" else "multiple"
    hint = get_type_hints(fn).get(name) if fn else None
    types = get_args(hint) or (hint,)
    if FileData in types:
        return "single"
    if any(get_origin(t) is list and get_args(t) == (FileData,) for t in types):
        return "multiple"
    return None


def _file_problem(count: str | None, value: object) -> str | None:
    """What a file input needs, when ``value`` is not that (None is always fine: the handler says what is missing)."""
    if count is None or value is None:
        return None
    if count == "single":
        return None if _is_file(value) else f"one file sent as handle_file(path), which uploads it, not {_kind(value)}"
    if not isinstance(value, list):
        got = _kind(value)
    elif wrong := [item for item in value if not _is_file(item)]:
        got = f"a list holding {_kind(wrong[0])}"
    else:
        return None
    return f"a list of files sent as [handle_file(path), ...], not {got}"


def _is_file(value: object) -> bool:
    """A file as a client sends one after uploading it (``handle_file``, the browser): a path and Gradio's meta."""
    return isinstance(value, dict) and isinstance(value.get("path"), str) and value.get("meta") == _FILE_META


def _kind(value: object) -> str:
    """What was sent instead of a file, in a few words."""
    if value is None:
        return "nothing"
    if _is_file(value):
        return "one file"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a dict without its path" if "path" not in value else "a dict without handle_file's meta"
    return type(value).__name__


def _start(request: gr.Request) -> tuple[str, gr.Dropdown]:
    """A new page: its language from the browser's (``Accept-Language``), and the contacts' regions to choose from
    (the selector only where there are several)."""
    regions = list(CONTACTS)
    return i18n.pick(request.headers.get("accept-language")), gr.Dropdown(
        choices=regions, value=None, visible=len(regions) > 1
    )


def _labels(lang: str) -> tuple[object, ...]:
    """The cattle tab's texts in ``lang``, in the order of ``relabelled`` (layout)."""
    return (
        gr.Tab(label=i18n.text("tab", lang)),
        i18n.text("note", lang),
        gr.Accordion(label=i18n.text("guide.title", lang)),
        i18n.text("guide.body", lang),
        framing.figures(lang),
        gr.File(label=i18n.text("photo.label", lang)),
        gr.Image(label=i18n.text("preview.label", lang)),
        gr.Accordion(label=i18n.text("more.title", lang, max=models.MAX_IMAGES)),
        gr.File(label=i18n.text("more.label", lang)),
        gr.Button(i18n.text("classify", lang)),
        gr.Label(label=i18n.text("verdict.label", lang)),
        gr.Label(label=i18n.text("scores.label", lang)),
        gr.Dropdown(label=i18n.text("region.label", lang)),
        i18n.text("report.label", lang),
    )


def _reword(lang: str, region: str | None, state: dict[str, Any] | None) -> tuple[object, ...]:
    """The shown case (if any) again in another language or for another region, with its report.

    The report goes to its ``gr.File`` as a plain value, never in an update: an update gives the session its own
    copy of the component, and files handed to that copy are never deleted (``delete_cache`` sees only the page's
    own); its box is shown instead."""
    if not state:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
    headline, scores, details, pdf = _view(state, lang, region)
    # a picture refused with a reason has no number: no empty chart (its label too, as the language switch sets it)
    chart = gr.Label(value=scores, visible=scores is not None, label=i18n.text("scores.label", lang))
    return headline, chart, details, pdf, gr.Column(visible=True)


# ---------------------------------------------------------------- layout
CSS = """
.report iframe, iframe.report { width: 100%; height: 70vh; border: 0; }
#details table { font-size: 0.85em; }
#details th, #details td { overflow-wrap: normal; word-break: normal; padding: 4px 5px; }
#details td:first-child { overflow-wrap: anywhere; }
#details td:nth-child(n+3) { white-space: nowrap; }
#review-gallery .fixed-height { max-height: none; min-height: 0; }
@media (max-width: 640px) {  /* a phone: the title on one or two lines, so the photo upload is on the first screen */
  #page-title h1 { font-size: 1.35rem; margin: 0; }
}
@media (max-width: 640px) {  /* a phone: 3 thumbnails a row (4 or 6 of at least 100 px each ran off its right edge) */
  #review-gallery .grid-container, #kept-gallery .grid-container, #rejected-gallery .grid-container,
  #not-written-gallery .grid-container { grid-template-columns: repeat(3, minmax(0, 1fr)) !important; }
}
"""

TO_REVIEW_TOP = "() => document.querySelector('#review-where')?.scrollIntoView({block: 'start'})"
"""In the browser, after a page turn: Next is pressed below the table, and the new page starts with its pictures."""

with _Space(
    title="AI-Vet-Scanner & archive → dataset", delete_cache=(max(1, CACHE_MAX_AGE_S // 10), CACHE_MAX_AGE_S)
) as demo:
    gr.Markdown("# AI-Vet-Scanner · scanned archive → dataset", elem_id="page-title")
    with gr.Tab(i18n.text("tab")) as cattle_tab:  # every text here in the visitor's language: _labels
        language = gr.Radio(
            [(name, code) for code, name in i18n.languages().items()],
            value=i18n.ENGLISH,
            label=" · ".join(dict.fromkeys(i18n.text("language.label", code) for code in i18n.languages())),
            elem_id="language",
        )
        triage_note = gr.Markdown(i18n.text("note"))
        with gr.Accordion(i18n.text("guide.title"), open=True, elem_id="photo-guide") as photo_guide:
            photo_guide_text = gr.Markdown(advice.PHOTO_GUIDE)
            photo_framing = gr.HTML(framing.figures(), elem_id="photo-framing")
        with gr.Row():
            with gr.Column():
                photo = gr.File(
                    label=i18n.text("photo.label"),
                    file_types=PHOTO_TYPES,
                    type="filepath",
                    height=140,
                    elem_id="photo",
                )
                photo_preview = gr.Image(
                    label=i18n.text("preview.label"),
                    interactive=False,
                    height=260,
                    visible=False,
                    elem_id="photo-preview",
                )
                with gr.Accordion(i18n.text("more.title", max=models.MAX_IMAGES), open=False) as more_box:
                    more_photos = gr.File(
                        label=i18n.text("more.label"),
                        file_types=PHOTO_TYPES,
                        file_count="multiple",
                        type="filepath",
                        height=140,
                        elem_id="more-photos",
                    )
                classify_btn = gr.Button(i18n.text("classify"), variant="primary", elem_id="classify-btn")
            with gr.Column():
                verdict = gr.Label(label=i18n.text("verdict.label"), elem_id="verdict")
                scores = gr.Label(
                    label=i18n.text("scores.label"),
                    num_top_classes=5,
                    show_heading=False,
                    elem_id="scores",
                )
                region = gr.Dropdown(
                    [], value=None, label=i18n.text("region.label"), visible=False, elem_id="region"
                )  # its regions come with the page (_start)
                details = gr.Markdown(elem_id="details")
                with gr.Column(visible=False) as report_box:  # no label update to a file output: _reword
                    report_note = gr.Markdown(i18n.text("report.label"))
                    case_report = gr.File(show_label=False, interactive=False, height=60, elem_id="case-report")
        last_case = gr.State(None)
    with gr.Tab("PDF → dataset"):
        gr.Markdown(
            "Upload scanned PDFs (several at once, or a `.zip` of PDFs): every page is judged by a fast filter, kept "
            "pages or their pictures are resized and zipped with captions, a `manifest.csv` and a report. "
            "Runs on the CPU, page by page; **Cancel** stops it."
        )
        with gr.Row():
            with gr.Column():
                pdfs = gr.File(
                    label="Scanned PDFs, or a .zip of PDFs",
                    file_types=[".pdf", ".zip"],
                    file_count="multiple",
                    type="filepath",
                    height=160,
                    elem_id="pdfs",
                )
                filter_name = gr.Dropdown(sorted(JUDGES), value=DEFAULT_JUDGE, label="Filter", elem_id="filter-name")
                threshold = gr.Textbox(
                    value="",
                    label="Filter threshold",
                    placeholder=f"the filter's own ({_JUDGE_DEFAULTS})",
                    info="Empty = the filter's own default; a page is kept when its score passes it",
                    elem_id="threshold",
                )
                crop = gr.Dropdown(
                    list(CROP_MODES),
                    value=Options().crop,
                    label="Crop to the pictures",
                    info="auto: a picture that covers less than half of its page is written alone, a plate whole",
                    elem_id="crop",
                )
                min_side = gr.Slider(
                    16,
                    2048,
                    value=Options().min_side,
                    step=16,
                    precision=0,
                    label="Smallest picture side (px)",
                    info="a kept picture with a shorter side below this is not written (then shown under Not written)",
                    elem_id="min-side",
                )
                with gr.Accordion("Output: size, fit, captions, duplicates", open=False):
                    size = gr.Slider(256, 2048, value=Options().size, step=64, label="Output size (px)", elem_id="size")
                    fit = gr.Dropdown(
                        list(FIT_MODES),
                        value=Options().fit,
                        label="Fit",
                        info="bucket: nearest SDXL bucket of ~size² px · square: size×size · max-side: longest side",
                        elem_id="fit",
                    )
                    trigger = gr.Textbox(
                        value=Options().trigger,
                        label="Caption trigger word",
                        placeholder="e.g. vestnik mody",
                        elem_id="trigger",
                    )
                    caption = gr.Textbox(
                        value=Options().caption,
                        label="Caption template",
                        info="{trigger}, "
                        + ("{caption} (what the captioning model sees), " if CAPTIONER else "")
                        + "{kind} (line art, halftone…), {words} (printed near the picture), {source} (PDF name), "
                        "{page}, {region}",
                        elem_id="caption",
                    )
                    dedupe = gr.Number(
                        value=Options().dedupe,
                        precision=0,
                        minimum=-1,
                        maximum=63,
                        label="Duplicate distance (bits)",
                        info="drop an image this near an earlier one (perceptual hash), or the same picture "
                        "recut; -1 keeps all",
                        elem_id="dedupe",
                    )
                with gr.Row():
                    build_btn = gr.Button("Build dataset", variant="primary", elem_id="build-btn")
                    cancel_btn = gr.Button("Cancel", variant="stop", interactive=False, elem_id="cancel-btn")
            with gr.Column():
                summary = gr.Textbox(label="Summary", lines=4, elem_id="summary")
                dataset_zip = gr.File(  # not interactive: the review reads it, nobody uploads here
                    label="Dataset (zip with manifest.csv and report.html)",
                    interactive=False,
                    height=100,
                    elem_id="dataset-zip",
                )
                score_chart = gr.HTML(label="Judge scores (threshold in red)", elem_id="score-chart")
                kept_gallery = _gallery("Kept", "kept-gallery")
                rejected_gallery = _gallery("Rejected, nearest the threshold", "rejected-gallery")
                not_written_gallery = _gallery(
                    "Not written: kept but too small (lower the smallest picture side and build again)",
                    "not-written-gallery",
                )
        with gr.Column(visible=False, elem_id="review") as review_box:
            gr.Markdown(
                "### Review before training\n"
                "Every written image with its caption, 24 a page. Edit a caption in the table, untick **keep** to "
                "leave an image out, then **Make reviewed zip**: its captions, `metadata.jsonl` and `manifest.csv` "
                "have your changes (tap a picture to see it large)."
            )
            review_where = gr.Markdown(elem_id="review-where")
            review_gallery = gr.Gallery(
                label="This page's images", columns=6, height="auto", preview=False, object_fit="contain",
                elem_id="review-gallery",
            )  # fmt: skip
            review_table = gr.Dataframe(
                headers=list(REVIEW_TABLE),
                datatype=["number", "bool", "str"],
                type="array",
                interactive=True,
                static_columns=[0],
                wrap=True,
                column_widths=["44px", "88px", "58%"],  # the caption's whole on a phone (390 px) too
                max_height=1400,
                label="Captions (edit a cell; untick keep to leave the image out)",
                elem_id="review-table",
            )
            review_page = gr.Dropdown(choices=[], label="Go to page", elem_id="review-page")
            with gr.Row(elem_id="review-pager"):
                review_prev = gr.Button("◀ Previous", size="sm", min_width=0, elem_id="review-prev")
                review_next = gr.Button("Next ▶", size="sm", min_width=0, elem_id="review-next")
            kohya_box = gr.Checkbox(value=False, label="Include kohya's dataset_config.toml", elem_id="review-kohya")
            kohya_dir = gr.Textbox(
                label="Folder the images will be in on the training machine (absolute; the toml's image_dir)",
                visible=False,
                elem_id="review-kohya-dir",
            )
            review_btn = gr.Button("Make reviewed zip", variant="primary", elem_id="review-btn")
            with gr.Column(visible=False, elem_id="reviewed") as reviewed_box:  # shown once made, hidden once stale
                reviewed_zip = gr.File(label="Reviewed dataset", interactive=False, height=100, elem_id="reviewed-zip")
                review_note = gr.Markdown(elem_id="review-note")
        review = gr.State(None)
        run_size = gr.State(Options().size)
        cancelled = gr.State(False)
        with gr.Accordion("Report (report.html)", open=False):
            report = gr.HTML(elem_id="report")

    # ------------------------------------------------------------ wiring
    relabelled = [cattle_tab, triage_note, photo_guide, photo_guide_text, photo_framing, photo, photo_preview, more_box]
    relabelled += [more_photos]
    relabelled += [classify_btn, verdict, scores, region, report_note]
    shown_case = [verdict, scores, details, case_report, report_box]
    classify_btn.click(
        show_case,
        inputs=[photo, more_photos, language, region],
        outputs=[*shown_case, last_case],
        api_visibility="private",
        concurrency_limit=2,
        concurrency_id="classify",
    )
    gr.on(  # no trigger on the page: /classify is for programs, in English (the page's button: show_case)
        [],
        classify,
        inputs=[photo, more_photos],
        outputs=[verdict, scores, details],
        api_name="classify",
        concurrency_limit=2,
        concurrency_id="classify",
    )
    demo.load(_start, outputs=[language, region], queue=False, api_visibility="private")
    language.change(
        lambda lang, where, state: (*_labels(lang), *_reword(lang, where, state)),
        inputs=[language, region, last_case],
        outputs=[*relabelled, *shown_case],
        queue=False,
        api_visibility="private",
    )
    region.change(
        _reword, inputs=[language, region, last_case], outputs=shown_case, queue=False, api_visibility="private"
    )
    gr.api(
        classify_json,
        api_name="classify_json",
        api_description="The classification as data: the case's verdict and probabilities, and per photo its file, "
        "verdict, calibrated probabilities, gate, P(not cattle), and distance from the training cattle photos, as "
        "`python -m models.predict --json` prints them. Verdicts are labels: lumpy_skin, fmd, normal_skin, "
        "not_cattle (with a reason when it is unlike every training cattle photo), inconclusive, unusable_photo "
        "(with a reason: too small, blank, one flat colour).",
        concurrency_limit=2,
        concurrency_id="classify",
    )
    photo.change(
        lambda path: gr.Image(value=(shown := models.photo_preview(path)), visible=shown is not None),
        inputs=photo,
        outputs=photo_preview,
        queue=False,
        api_visibility="private",
    )
    results = [dataset_zip, score_chart, kept_gallery, rejected_gallery, report, not_written_gallery]
    reviewing = [review, review_box, reviewed_box, run_size]
    build = build_btn.click(  # the last run's results go: a cancelled run must not seem to have delivered them
        lambda run: (
            *(gr.Button(interactive=False), gr.Button(interactive=True), False, None, "", None, None, "", None),
            *(None, gr.Column(visible=False), gr.Column(visible=False), run),  # the review too; kohya's size
        ),
        inputs=size,
        outputs=[build_btn, cancel_btn, cancelled, *results, *reviewing],
        queue=False,
        api_visibility="private",
    ).then(
        pdf_to_dataset,
        inputs=[pdfs, threshold, size, filter_name, fit, crop, trigger, caption, dedupe, min_side],
        outputs=[dataset_zip, summary, score_chart, kept_gallery, rejected_gallery, report, not_written_gallery],
        api_name="pdf_to_dataset",
        concurrency_limit=PDF_JOBS,
        show_progress_on=summary,  # progress (and a failure's mark) on the summary, not on every output
    )
    for finished in (build.success, build.failure):  # Gradio 6's .then does not run after a gr.Error
        finished(  # after the run's last message, so a cancelled run's late page updates cannot overwrite this
            lambda was_cancelled: (
                gr.Button(interactive=True),
                gr.Button(interactive=False),
                "Cancelled: the run was stopped; nothing of it was kept." if was_cancelled else gr.skip(),
            ),
            inputs=cancelled,
            outputs=[build_btn, cancel_btn, summary],
            queue=False,
            api_visibility="private",
        )
    page_shown = [review, review_where, review_gallery, review_table, review_page, reviewed_box]
    build.success(
        review_open,
        inputs=[dataset_zip, run_size],
        outputs=[review, review_box, review_where, review_gallery, review_table, review_page, kohya_dir],
        api_visibility="private",
        concurrency_limit=4,
        concurrency_id="review-page",  # opening a review and turning its pages: light, 4 at once
    )
    for turn, step in ((review_prev.click, -1), (review_next.click, 1), (review_page.input, 0)):
        turn(
            lambda state, rows, page, step=step: review_turn(state, rows, page, step),
            inputs=[review, review_table, review_page],
            outputs=page_shown,
            api_visibility="private",
            concurrency_limit=4,
            concurrency_id="review-page",
        ).success(None, js=TO_REVIEW_TOP)  # the new page from its pictures, not from the pager below the table
    kohya_box.change(
        lambda on: gr.Textbox(visible=on), inputs=kohya_box, outputs=kohya_dir, queue=False, api_visibility="private"
    )
    review_table.input(  # a zip made before this edit no longer matches the table: take it away
        lambda: gr.Column(visible=False), outputs=reviewed_box, queue=False, api_visibility="private"
    )
    review_btn.click(
        review_download,
        inputs=[review, review_table, review_page, kohya_box, kohya_dir],
        outputs=[review, reviewed_zip, review_note, review_where, reviewed_box],
        api_visibility="private",
        concurrency_limit=2,
        concurrency_id="review",
    )
    gr.api(
        review_dataset,
        api_name="review_dataset",
        api_description="The review step: a dataset zip from /pdf_to_dataset in, a reviewed zip out. `captions` maps "
        "image names (metadata.jsonl's file_name) to new captions, cleaned as the pipeline cleans them (one line, "
        "comma-separated); `drop` lists images to leave out, with their caption files and metadata lines. "
        "manifest.csv keeps every page's row, takes dropped images out of outputs, sizes and fingerprints, and names "
        "what the review did in review_dropped and review_edited. `kohya_config` adds kohya's dataset_config.toml "
        "(image_dir `kohya_image_dir`, default /data/<zip name>; resolution `size`, the run's). Returns the zip and "
        "one sentence saying what it holds.",
        concurrency_limit=2,
        concurrency_id="review",
    )
    cancel_btn.click(
        lambda: (True, gr.Button(interactive=False)),
        outputs=[cancelled, cancel_btn],
        cancels=[build],
        queue=False,
        api_visibility="private",
    )

# A free Space has 2 vCPUs: at most PDF_JOBS PDF jobs at a time, a short queue rather than an unbounded backlog.
demo.queue(default_concurrency_limit=1, max_size=16)

LAUNCH_KWARGS = {"max_file_size": MAX_FILE_SIZE, "theme": gr.themes.Soft(), "css": CSS}


def _stop(*_: object) -> None:
    """SIGTERM (a Space restarting, ``docker stop``): stop serving, remove the work folder, exit 0 at once.

    Not ``sys.exit``: finalising the interpreter while a request thread is inside torch aborts the process (the
    thread, coming back for the GIL, is unwound through torch's C++ frames: ``std::terminate``, SIGABRT).
    ``demo.close()`` gives the server up to 5 s to stop (an idle one deletes the files Gradio made as it does)."""
    demo.close()
    shutil.rmtree(_WORK_ROOT, ignore_errors=True)
    os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop)
    demo.launch(**LAUNCH_KWARGS)
