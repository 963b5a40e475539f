"""The two tabs' components, in page order; ``app.py`` places the tabs and wires their events.

Each tab is built inside the page's ``Blocks`` and handed back as a dataclass of its components, so the wiring
names them (``cattle.photo``) and a tab's look changes here without touching its handlers.
"""

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TypeVar

import gradio as gr

import models
from models import advice, animals, framing, i18n
from pipeline import Options
from pipeline.fit import MODES as FIT_MODES
from pipeline.judges import DEFAULT_JUDGE, JUDGES, threshold_of
from pipeline.options import CROP_MODES
from pipeline.review import TABLE as REVIEW_TABLE
from space import settings

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
SHRINK_HEAD = f"<script>{Path(__file__).with_name('shrink.js').read_text(encoding='utf-8')}</script>"
"""The page's head: the script that shrinks the cattle tab's photos in the browser before they upload."""
PHOTO_TYPES = ["image", ".heic", ".heif"]
"""Desktop browsers give an iPhone's HEIC photos no image type: without their extensions Gradio refuses them."""
T = TypeVar("T")
JUDGE_DEFAULTS = ", ".join(f"{name}: {threshold_of(name):g}" for name in sorted(JUDGES))


@dataclass
class CattleTab:
    """The cattle tab: every text in the visitor's language (``space.triage.labels`` words them again)."""

    tab: gr.Tab
    language: gr.Radio
    triage_note: gr.Markdown
    photo_guide: gr.Accordion
    photo_guide_text: gr.Markdown
    photo_framing: gr.HTML
    animal: gr.Radio
    photo: gr.File
    photo_preview: gr.Image
    more_box: gr.Accordion
    more_photos: gr.File
    classify_btn: gr.Button
    verdict: gr.Label
    scores: gr.Label
    region: gr.Dropdown
    details: gr.Markdown
    report_box: gr.Column
    report_note: gr.Markdown
    case_report: gr.File
    last_case: gr.State

    def relabelled(self) -> list[gr.components.Component]:
        """What a language switch words again, in the order of ``space.triage.labels``."""
        return [
            *(self.tab, self.triage_note, self.photo_guide, self.photo_guide_text, self.photo_framing, self.photo),
            *(self.photo_preview, self.more_box, self.more_photos, self.classify_btn, self.verdict, self.scores),
            *(self.region, self.report_note, self.animal),
        ]

    def shown_case(self) -> list[gr.components.Component]:
        """A classified case's outputs (``space.triage.reword``)."""
        return [self.verdict, self.scores, self.details, self.case_report, self.report_box]


def cattle_tab() -> CattleTab:
    """The cattle tab, built where it is called (inside the page's ``Blocks``)."""
    with gr.Tab(i18n.text("tab")) as tab:
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
                animal = gr.Radio(
                    animals.choices(), value=animals.CATTLE, label=i18n.text("animal.label"), elem_id="animal"
                )  # the model judges cattle only: another animal gets its own advice (models.animals)
                photo = gr.File(
                    label=i18n.text("photo.label"), file_types=PHOTO_TYPES, type="filepath", height=140,
                    elem_id="photo",
                )  # fmt: skip
                photo_preview = gr.Image(
                    label=i18n.text("preview.label"), interactive=False, height=260, visible=False,
                    elem_id="photo-preview",
                )  # fmt: skip
                with gr.Accordion(i18n.text("more.title", max=models.MAX_IMAGES), open=False) as more_box:
                    more_photos = gr.File(
                        label=i18n.text("more.label"), file_types=PHOTO_TYPES, file_count="multiple",
                        type="filepath", height=140, elem_id="more-photos",
                    )  # fmt: skip
                classify_btn = gr.Button(i18n.text("classify"), variant="primary", elem_id="classify-btn")
            with gr.Column():
                verdict = gr.Label(label=i18n.text("verdict.label"), elem_id="verdict")
                scores = gr.Label(
                    label=i18n.text("scores.label"), num_top_classes=5, show_heading=False, elem_id="scores"
                )
                region = gr.Dropdown(
                    [], value=None, label=i18n.text("region.label"), visible=False, elem_id="region"
                )  # its regions come with the page (space.triage.start)
                details = gr.Markdown(elem_id="details")
                with gr.Column(visible=False) as report_box:  # no label update to a file output: triage.reword
                    report_note = gr.Markdown(i18n.text("report.label"))
                    case_report = gr.File(show_label=False, interactive=False, height=60, elem_id="case-report")
        last_case = gr.State(None)
    return _of(CattleTab, locals())


def _of(tab: type[T], built: dict[str, object]) -> T:
    """The tab's dataclass of the components its builder made (its ``locals()``), each field by its name."""
    return tab(**{field.name: built[field.name] for field in fields(tab)})


@dataclass
class PdfTab:
    """The PDF tab: the controls (each defaulting to the CLI's), the results, the review, the report."""

    pdfs: gr.File
    filter_name: gr.Dropdown
    threshold: gr.Textbox
    crop: gr.Dropdown
    min_side: gr.Slider
    ocr: gr.Checkbox
    size: gr.Slider
    fit: gr.Dropdown
    trigger: gr.Textbox
    caption: gr.Textbox
    dedupe: gr.Number
    build_btn: gr.Button
    cancel_btn: gr.Button
    summary: gr.Textbox
    dataset_zip: gr.File
    score_chart: gr.HTML
    kept_gallery: gr.Gallery
    rejected_gallery: gr.Gallery
    not_written_gallery: gr.Gallery
    review_box: gr.Column
    review_where: gr.Markdown
    review_gallery: gr.Gallery
    review_table: gr.Dataframe
    review_page: gr.Dropdown
    review_prev: gr.Button
    review_next: gr.Button
    kohya_box: gr.Checkbox
    kohya_dir: gr.Textbox
    review_btn: gr.Button
    reviewed_box: gr.Column
    reviewed_zip: gr.File
    review_note: gr.Markdown
    review: gr.State
    run_size: gr.State
    cancelled: gr.State
    report: gr.HTML


def gallery(label: str, elem_id: str) -> gr.Gallery:
    """One of the PDF tab's result galleries: four thumbnails a row, whole pictures."""
    return gr.Gallery(label=label, columns=4, height=240, preview=False, object_fit="contain", elem_id=elem_id)


def pdf_tab() -> PdfTab:
    """The PDF tab, built where it is called (inside the page's ``Blocks``)."""
    with gr.Tab("PDF → dataset"):
        gr.Markdown(
            "Upload scanned PDFs (several at once, or a `.zip` of PDFs): every page is judged by a fast filter, kept "
            "pages or their pictures are resized and zipped with captions, a `manifest.csv` and a report. "
            "Runs on the CPU, page by page; **Cancel** stops it."
        )
        with gr.Row():
            with gr.Column():
                pdfs = gr.File(
                    label="Scanned PDFs, or a .zip of PDFs", file_types=[".pdf", ".zip"], file_count="multiple",
                    type="filepath", height=160, elem_id="pdfs",
                )  # fmt: skip
                filter_name = gr.Dropdown(sorted(JUDGES), value=DEFAULT_JUDGE, label="Filter", elem_id="filter-name")
                threshold = gr.Textbox(
                    value="", label="Filter threshold", placeholder=f"the filter's own ({JUDGE_DEFAULTS})",
                    info="Empty = the filter's own default; a page is kept when its score passes it",
                    elem_id="threshold",
                )  # fmt: skip
                crop = gr.Dropdown(
                    list(CROP_MODES), value=Options().crop, label="Crop to the pictures",
                    info="auto: a picture that covers less than half of its page is written alone, a plate whole",
                    elem_id="crop",
                )  # fmt: skip
                min_side = gr.Slider(
                    16, 2048, value=Options().min_side, step=16, precision=0, label="Smallest picture side (px)",
                    info="a kept picture with a shorter side below this is not written (then shown under Not written)",
                    elem_id="min-side",
                )  # fmt: skip
                with gr.Accordion("Output: size, fit, captions, duplicates", open=False):
                    size = gr.Slider(256, 2048, value=Options().size, step=64, label="Output size (px)", elem_id="size")
                    fit = gr.Dropdown(
                        list(FIT_MODES), value=Options().fit, label="Fit",
                        info="bucket: nearest SDXL bucket of ~size² px · square: size×size · max-side: longest side",
                        elem_id="fit",
                    )  # fmt: skip
                    trigger = gr.Textbox(
                        value=Options().trigger, label="Caption trigger word", placeholder="e.g. vestnik mody",
                        elem_id="trigger",
                    )  # fmt: skip
                    caption = gr.Textbox(
                        value=Options().caption,
                        label="Caption template",
                        info="{trigger}, "
                        + ("{caption} (what the captioning model sees), " if settings.CAPTIONER else "")
                        + "{kind} (line art, halftone…), {words} (printed near the picture), {source} (PDF name), "
                        "{page}, {region}",
                        elem_id="caption",
                    )
                    ocr = gr.Checkbox(
                        value=Options().ocr, label="Read printed words (OCR) for {words}",
                        info="Tesseract, on pages without a text layer near the picture; on the benchmark's 32 "
                        "newspaper pages (2 cores) a run makes 8.2 pages/s with it, 12 without",
                        elem_id="ocr",
                    )  # fmt: skip
                    dedupe = gr.Number(
                        value=Options().dedupe, precision=0, minimum=-1, maximum=63, label="Duplicate distance (bits)",
                        info="drop an image this near an earlier one (perceptual hash), or the same picture "
                        "recut; -1 keeps all",
                        elem_id="dedupe",
                    )  # fmt: skip
                with gr.Row():
                    build_btn = gr.Button("Build dataset", variant="primary", elem_id="build-btn")
                    cancel_btn = gr.Button("Cancel", variant="stop", interactive=False, elem_id="cancel-btn")
            with gr.Column():
                summary = gr.Textbox(label="Summary", lines=4, elem_id="summary")
                dataset_zip = gr.File(  # not interactive: the review reads it, nobody uploads here
                    label="Dataset (zip with manifest.csv and report.html)", interactive=False, height=100,
                    elem_id="dataset-zip",
                )  # fmt: skip
                score_chart = gr.HTML(label="Judge scores (threshold in red)", elem_id="score-chart")
                kept_gallery = gallery("Kept", "kept-gallery")
                rejected_gallery = gallery("Rejected, nearest the threshold", "rejected-gallery")
                not_written_gallery = gallery(
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
                headers=list(REVIEW_TABLE), datatype=["number", "bool", "str"], type="array", interactive=True,
                static_columns=[0], wrap=True,
                column_widths=["44px", "88px", "58%"],  # the caption's whole on a phone (390 px) too
                max_height=1400, label="Captions (edit a cell; untick keep to leave the image out)",
                elem_id="review-table",
            )  # fmt: skip
            review_page = gr.Dropdown(choices=[], label="Go to page", elem_id="review-page")
            with gr.Row(elem_id="review-pager"):
                review_prev = gr.Button("◀ Previous", size="sm", min_width=0, elem_id="review-prev")
                review_next = gr.Button("Next ▶", size="sm", min_width=0, elem_id="review-next")
            kohya_box = gr.Checkbox(value=False, label="Include kohya's dataset_config.toml", elem_id="review-kohya")
            kohya_dir = gr.Textbox(
                label="Folder the images will be in on the training machine (absolute; the toml's image_dir)",
                visible=False, elem_id="review-kohya-dir",
            )  # fmt: skip
            review_btn = gr.Button("Make reviewed zip", variant="primary", elem_id="review-btn")
            with gr.Column(visible=False, elem_id="reviewed") as reviewed_box:  # shown once made, hidden once stale
                reviewed_zip = gr.File(label="Reviewed dataset", interactive=False, height=100, elem_id="reviewed-zip")
                review_note = gr.Markdown(elem_id="review-note")
        review = gr.State(None)
        run_size = gr.State(Options().size)
        cancelled = gr.State(False)
        with gr.Accordion("Report (report.html)", open=False):
            report = gr.HTML(elem_id="report")
    return _of(PdfTab, locals())
