"""The review step: a finished dataset's images and captions, 24 a page, and a reviewed zip made from the edits.

``pipeline/review.py`` does the work; this module turns the page's events (open, turn, make) and
``/review_dataset`` into its calls, and its failures into sentences for the visitor.
"""

import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import gradio as gr
from gradio import FileData
from gradio.utils import get_upload_folder

from pipeline import Options
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
from space import disk, settings

REVIEW_DATASET_ABOUT = (
    "The review step: a dataset zip from /pdf_to_dataset in, a reviewed zip out. `captions` maps "
    "image names (metadata.jsonl's file_name) to new captions, cleaned as the pipeline cleans them (one line, "
    "comma-separated); `drop` lists images to leave out, with their caption files and metadata lines. "
    "manifest.csv keeps every page's row, takes dropped images out of outputs, sizes and fingerprints, and names "
    "what the review did in review_dropped and review_edited. `kohya_config` adds kohya's dataset_config.toml "
    "(image_dir `kohya_image_dir`, default /data/<zip name>; resolution `size`, the run's). Returns the zip and "
    "one sentence saying what it holds."
)
"""``/review_dataset``'s description on the API page."""


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
    """``/review_dataset`` (no UI; see :data:`REVIEW_DATASET_ABOUT`): the review step for programs."""
    if not dataset:
        raise _review_error("No dataset: send the zip /pdf_to_dataset returned, as handle_file(path).")
    name = dataset.get("orig_name") or Path(dataset["path"]).name
    folder = kohya_folder(name, kohya_image_dir) if kohya_config else None
    target, outcome = _write_review(dataset["path"], name, captions or {}, drop or [], folder, int(size))
    return FileData(path=str(target), orig_name=target.name), outcome.describe()


def kohya_dir_shown(on: bool) -> gr.Textbox:
    """The kohya folder's box, shown while kohya's config is ticked."""
    return gr.Textbox(visible=on)


def stale() -> gr.Column:
    """A table edit: a zip made before it no longer matches the table, so it is taken away."""
    return gr.Column(visible=False)


def _write_review(
    dataset: str, name: str, captions: dict[str, str], drop: Iterable[str], kohya_dir: str | None, size: int
) -> tuple[Path, Outcome]:
    """The reviewed zip, written straight into Gradio's cache: served from there without a copy, and deleted with
    the rest of the cache ``CACHE_MAX_AGE_S`` after it was made."""
    disk.check_disk()
    folder = Path(get_upload_folder()) / uuid.uuid4().hex  # the page's GRADIO_CACHE
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
            f"This dataset is no longer on the Space: results are deleted {_age(settings.CACHE_MAX_AGE_S)} after "
            "they are made. Build it again (the review's changes were not kept)."
        ) from None
    except ReviewError as exc:
        raise _review_error(str(exc)) from None


def _age(seconds: int) -> str:
    return f"{seconds // 60} minutes" if seconds >= 120 else f"{seconds} seconds"


def _review_error(message: str) -> gr.Error:
    return gr.Error(message, title="Cannot review", print_exception=False)
