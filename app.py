"""The Space: cattle triage on ZeroGPU, scanned PDF → image dataset on the CPU, both callable as an API.

Layout first, then wiring. The work lives in ``models/`` (the classifier and its lifecycle) and
``pipeline/`` (PDF pages → curated zip); the handlers here only translate between Gradio and them,
and turn expected failures into ``gr.Error`` so users see what went wrong and the server keeps serving.

Run: ``python app.py`` (honours ``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT``; ``MODEL_ID``,
``MODEL_POLICY``, ``MAX_FILE_SIZE`` and ``GPU_DURATION`` configure the rest).
"""

import spaces  # first, unconditionally: on ZeroGPU it must set up CUDA handling before torch is imported

# isort: split
import atexit
import io
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import gradio as gr
from PIL import Image

import models
from pipeline import NothingToDo, Options, OutputError, PdfError, Progress, check_pdf, run
from pipeline.fit import MODES as FIT_MODES
from pipeline.judges import DEFAULT_JUDGE, JUDGES, threshold_of
from pipeline.manifest import PageRecord
from pipeline.report import histogram, histogram_svg
from pipeline.writer import read_images, read_manifest

GPU_DURATION = int(os.environ.get("GPU_DURATION", "20"))
"""Seconds of ZeroGPU requested per classify call; quota is charged on this, so keep it tight."""
MAX_FILE_SIZE = os.environ.get("MAX_FILE_SIZE", "100mb")
"""Upload limit for any file (Gradio refuses bigger uploads before a handler runs)."""
GALLERY_LIMIT = 12
WORK_MAX_AGE_S = 3600
"""Our own zip work folders are removed after this long (Gradio's copies follow ``delete_cache``)."""

CLASSIFIER = models.make_classifier()
"""Per-request by default; with ``MODEL_POLICY=resident`` this line loads the model at import."""

_JUDGE_DEFAULTS = ", ".join(f"{name}: {threshold_of(name):g}" for name in sorted(JUDGES))
_WORK_ROOT = Path(tempfile.mkdtemp(prefix="space-pdf-"))
atexit.register(shutil.rmtree, _WORK_ROOT, ignore_errors=True)

TRIAGE_NOTE = (
    "**Triage, not a diagnosis.** The built-in model tells lumpy skin disease from normal skin on a photo of "
    "cattle skin, refuses photos that do not show cattle, and says *inconclusive* when it is unsure. It cannot "
    "rule a disease out. A sick or suspicious animal needs a veterinarian; lumpy skin disease is notifiable."
)

VERDICT_TEXT = {
    models.NOT_CATTLE: "not a cattle photo — no triage",
    models.INCONCLUSIVE: "inconclusive — retake the photo: closer, daylight, the affected skin filling the frame",
}
NOTIFIABLE = {
    "lumpy_skin": (
        "**Lumpy skin disease is a notifiable disease.** Report the suspicion to your veterinary authorities "
        "without delay, isolate the animal, control flies and ticks, and do not move or sell animals until a "
        "veterinarian has examined them."
    )
}


@spaces.GPU(duration=GPU_DURATION)
def classify(photo: str | None, more_photos: list[str] | None = None) -> tuple[dict[str, float], str]:
    """Classify one photo (plus optional extras); returns the first photo's scores and a per-photo table.

    Runs inside the ZeroGPU handler: everything returned is plain Python, and expected failures are
    raised as ``gr.Error`` here because only that keeps its message across the ZeroGPU process boundary.
    """
    paths = [photo, *(more_photos or [])]
    try:
        images = models.open_images(paths)
        case = CLASSIFIER.assess(images)
    except models.ModelLoadError as exc:
        raise gr.Error(str(exc), title="Model unavailable") from None  # logged: the operator must act
    except models.ModelError as exc:
        raise gr.Error(str(exc), title="Cannot classify", print_exception=False) from None
    names = [Path(p).name for p in paths if p]
    first = case.photos[0]
    scores = dict(sorted(first.probabilities.items(), key=lambda kv: -kv[1]))
    if first.verdict == models.NOT_CATTLE and first.gate is not None:  # a dog must not look like a diagnosis
        scores = {
            VERDICT_TEXT[models.NOT_CATTLE]: first.gate,
            **{k: round(v * (1 - first.gate), 6) for k, v in scores.items()},
        }

    def say(verdict: str) -> str:
        return VERDICT_TEXT.get(verdict, verdict.replace("_", " "))

    labels = list(first.probabilities)
    rows = "\n".join(
        f"| {name} | {say(p.verdict)} | " + " | ".join(f"{p.probabilities[x]:.1%}" for x in labels) + " |"
        for name, p in zip(names, case.photos, strict=True)
    )
    lines = [f"### Verdict: {say(case.verdict)}"]
    if len(names) > 1:
        lines[0] += f" (case of {len(names)} photos)"
    if case.verdict in NOTIFIABLE:
        lines.append(NOTIFIABLE[case.verdict])
    lines += [
        f"Model: `{CLASSIFIER.model_id}` ({CLASSIFIER.policy.replace('_', '-')}); probabilities are calibrated.",
        f"| photo | verdict | {' | '.join(labels)} |\n|---|---|{'---|' * len(labels)}\n{rows}",
    ]
    return scores, "\n\n".join(lines)


def pdf_to_dataset(
    pdf: str | None,
    threshold: float | None = None,
    size: int = 1024,
    filter_name: str = DEFAULT_JUDGE,
    fit: str = Options().fit,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio's documented way to inject progress
) -> tuple[str, str, str, list[tuple[object, str]], list[tuple[object, str]]]:
    """Run the pipeline on one uploaded PDF (CPU only: a GPU would burn visitors' quota for nothing).

    Returns the zip, a summary, the histogram of judge scores with the threshold (SVG), some kept images
    and the rejected pages nearest the threshold, so the threshold can be judged before downloading.
    """
    if not pdf:
        raise _pdf_error("No PDF: upload a scanned PDF, then press Build dataset.")
    try:
        pages = check_pdf(pdf)
        options = Options(filter=filter_name, threshold=threshold, size=int(size), fit=fit)
    except (PdfError, ValueError) as exc:
        raise _pdf_error(str(exc)) from None
    progress((0, pages), desc="Reading pages", unit="pages")

    def on_page(record: PageRecord, where: Progress) -> None:
        progress((where.done, where.total), desc=f"Page {where.done}/{where.total}, {where.kept} kept", unit="pages")

    zip_path = _work_dir() / f"{Path(pdf).stem}_dataset.zip"
    try:
        summary = run([pdf], zip_path, options, on_page=on_page, resume=False)
    except (NothingToDo, OutputError, PdfError) as exc:
        raise _pdf_error(str(exc)) from None
    text = (
        f"{summary.pages} pages seen, {summary.kept} kept ({summary.images} images), "
        f"{summary.errors} errors, {summary.warnings} with MuPDF warnings (the manifest's warning column), "
        f"{summary.seconds:.1f} s."
    )
    dropped = [f"{n} {what}" for n, what in ((summary.too_small, "too small"), (summary.duplicates, "duplicates"))]
    if summary.too_small or summary.duplicates:
        text += f" Kept but not written: {', '.join(dropped)}."
    text += (
        " The zip holds the images, manifest.csv (one row per page with its filter score, to re-threshold "
        "later) and report.html."
    )
    if summary.pages and not summary.kept:
        text += " No page passed the filter: try a lower threshold."
    scores = [float(row["score"]) for row in read_manifest(summary.output) if row["score"]]
    chart = histogram_svg(histogram(scores, summary.threshold)) if scores else ""
    rejected = [
        (Image.open(io.BytesIO(thumb.jpeg)), f"{thumb.label} · score {thumb.score:.2f}")
        for thumb in summary.borderline.thumbnails(kept=False)
    ]
    return str(summary.output), text, chart, read_images(summary.output, limit=GALLERY_LIMIT), rejected


def _pdf_error(message: str) -> gr.Error:
    """A user mistake, not a server fault: shown to the user, kept out of the server log."""
    return gr.Error(message, title="Cannot build dataset", print_exception=False)


def _work_dir() -> Path:
    """A fresh folder for one request's zip; folders older than ``WORK_MAX_AGE_S`` are removed first."""
    now = time.time()
    for old in _WORK_ROOT.iterdir():
        if now - old.stat().st_mtime > WORK_MAX_AGE_S:
            shutil.rmtree(old, ignore_errors=True)
    path = _WORK_ROOT / uuid.uuid4().hex
    path.mkdir()
    return path


# ---------------------------------------------------------------- layout
with gr.Blocks(title="AI-Vet-Scanner & archive → dataset", delete_cache=(1800, 3600)) as demo:
    gr.Markdown("# AI-Vet-Scanner · scanned archive → dataset")
    with gr.Tab("Cattle scanner"):
        gr.Markdown(TRIAGE_NOTE)
        with gr.Row():
            with gr.Column():
                photo = gr.File(label="Cattle photo", file_types=["image"], type="filepath")
                more_photos = gr.File(
                    label=f"More photos of the same case (optional, up to {models.MAX_IMAGES} in all)",
                    file_types=["image"],
                    file_count="multiple",
                    type="filepath",
                )
                classify_btn = gr.Button("Classify", variant="primary")
            with gr.Column():
                scores = gr.Label(label="Top classes (first photo)", num_top_classes=5)
                details = gr.Markdown(f"Model: `{CLASSIFIER.model_id}`")
    with gr.Tab("PDF → dataset"):
        gr.Markdown(
            "Upload a scanned PDF: every page is judged by a fast filter, kept pages are resized and zipped "
            "with a `manifest.csv`. Runs on the CPU, page by page."
        )
        with gr.Row():
            with gr.Column():
                pdf = gr.File(label="Scanned PDF", file_types=[".pdf"], type="filepath")
                threshold = gr.Number(
                    value=None,
                    label="Filter threshold",
                    info=f"Empty = the filter's own default ({_JUDGE_DEFAULTS})",
                )
                size = gr.Slider(256, 2048, value=Options().size, step=64, label="Output size (px)")
                filter_name = gr.Dropdown(sorted(JUDGES), value=DEFAULT_JUDGE, label="Filter")
                fit = gr.Dropdown(
                    list(FIT_MODES),
                    value=Options().fit,
                    label="Fit",
                    info="bucket: nearest SDXL bucket of about size² px · square: size×size · max-side: longest side",
                )
                build_btn = gr.Button("Build dataset", variant="primary")
            with gr.Column():
                dataset_zip = gr.File(label="Dataset (zip with manifest.csv)")
                summary = gr.Textbox(label="Summary", lines=3)
                score_chart = gr.HTML(label="Judge scores (threshold in red)")
                kept_gallery = gr.Gallery(label="Kept", columns=4, height=300)
                rejected_gallery = gr.Gallery(label="Rejected, nearest the threshold", columns=4, height=300)

    # ------------------------------------------------------------ wiring
    classify_btn.click(
        classify, inputs=[photo, more_photos], outputs=[scores, details], api_name="classify", concurrency_limit=2
    )
    build_btn.click(
        pdf_to_dataset,
        inputs=[pdf, threshold, size, filter_name, fit],
        outputs=[dataset_zip, summary, score_chart, kept_gallery, rejected_gallery],
        api_name="pdf_to_dataset",
        concurrency_limit=1,
    )

# A free Space has 2 vCPUs: one PDF job at a time, a short queue rather than an unbounded backlog.
demo.queue(default_concurrency_limit=1, max_size=16)

LAUNCH_KWARGS = {"max_file_size": MAX_FILE_SIZE, "theme": gr.themes.Soft()}

if __name__ == "__main__":
    demo.launch(**LAUNCH_KWARGS)
