"""Captions and metadata that trainers load as they are: kohya sd-scripts ``.txt`` files, a Hugging Face
``datasets`` imagefolder ``metadata.jsonl``, and an optional kohya ``dataset_config.toml``.

A LoRA learns its trigger word from the captions, so every image gets one, built from a template
(``--caption "an engraving in the style of vestnik mody, {source} page {page}"``) whose placeholders are:

* ``{source}``: the PDF's stem (file name without ``.pdf``);
* ``{page}``: the 1-based page number (format specs work: ``{page:04d}``);
* ``{region}``: the 1-based region number when the judge's regions are written, empty for whole pages;
* ``{trigger}``: the trigger word (``--trigger``), empty when none is given;
* ``{kind}``: what kind of picture the written image is, measured on it (``pipeline.kinds``): ``monochrome line
  art``, ``monochrome halftone``, ``colour continuous tone``, ...; never empty;
* ``{words}``: the words printed in and around the picture, from the page's text layer (OCR or born-digital
  text), or read by Tesseract where the page has none there (``pipeline.ocr``), cleaned (``pipeline.words``);
  empty when nothing legible is printed there;
* ``{caption}``: what an image-to-text model (``--captioner``, ``models.captioner``) says the image shows; empty
  without one, or where it failed on that image (the page's manifest ``warning`` says so).

The default, ``{trigger}, {caption}, {kind}, {words}``, is never empty (kohya and diffusers would train an image
with an empty caption on an empty prompt) and keeps file names and page numbers out of captions (a LoRA would
learn them as concepts); they stay in ``metadata.jsonl`` and the manifest. Without a captioner it writes what
``{trigger}, {kind}, {words}`` did, byte for byte: the empty ``{caption}`` leaves no piece.

Captions are comma-separated tags as kohya shuffles and drops them, so empty pieces left by an empty
placeholder (``", , page 3"``) are removed and runs of white space collapsed to one space.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import PurePosixPath
from typing import Protocol

from pipeline.names import safe_text

PLACEHOLDERS = ("source", "page", "region", "trigger", "kind", "words", "caption")
DEFAULT_TEMPLATE = "{trigger}, {caption}, {kind}, {words}"
METADATA = "metadata.jsonl"
DATASET_CONFIG = "dataset_config.toml"
CAPTION_EXTENSION = ".txt"
MAX_WIDTH = 1000
"""Widest a template may pad or cut a field (``{page:04}``, ``{words:.60}``): a caption is a few dozen words."""

Captioner = Callable[[Sequence[bytes]], list[str]]
"""What fills ``{caption}``: encoded images (the JPEGs about to be written) in, one text per image out, in order.
The pipeline takes it ready-made (``run(..., captioner=...)``), so it never imports torch: ``models.captioner``
makes one."""


class LoadedCaptioner(Protocol):
    """A :data:`Captioner` that a :data:`CaptionerLoader` loaded, naming where it runs (the CLI says so)."""

    device: object

    def __call__(self, jpegs: Sequence[bytes], /) -> list[str]: ...


CaptionerLoader = Callable[[str], AbstractContextManager[LoadedCaptioner]]
"""How the CLI's ``--captioner MODEL`` becomes a :data:`Captioner`: the model's id in, a context manager out that
holds the loaded model for the run and frees it when the run ends however it ends. A model that cannot be loaded
raises ``ValueError`` with one sentence saying why. ``pipeline`` defines this and imports no implementation: the
CLI imports the one ``--captioner-loader`` names (:data:`CAPTIONER_LOADER`), only when a captioner is asked for."""

CAPTIONER_LOADER = "models.captioner:pipeline_captioner"
"""The default ``--captioner-loader`` (``MODULE:FUNCTION``, a :data:`CaptionerLoader`): this repository's
transformers image-to-text models (``models.captioner``), which need torch."""


class CaptionTemplate:
    """A checked caption template; :meth:`caption` fills it for one image."""

    def __init__(self, template: str = DEFAULT_TEMPLATE, trigger: str = "") -> None:
        try:
            parsed = [(field, spec) for _, field, spec, _ in string.Formatter().parse(template) if field is not None]
        except ValueError as exc:
            raise ValueError(f"bad caption template {template!r}: {exc}") from None
        fields = [field for field, _ in parsed]
        widths = [int(number) for _, spec in parsed for number in re.findall(r"\d+", spec or "")]
        if max(widths, default=0) > MAX_WIDTH:  # {page:>2000000000}: a 2 GB caption per picture, or MemoryError
            raise ValueError(f"bad caption template {template!r}: a field is padded beyond {MAX_WIDTH} characters")
        unknown = [field or "{}" for field in fields if field not in PLACEHOLDERS]
        if unknown:
            known = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
            raise ValueError(f"unknown placeholder {{{unknown[0]}}} in caption template {template!r}; use {known}")
        self.template = template
        self.fields = frozenset(fields)
        self.trigger = trigger.strip()
        self.caption("source", 1, 1)  # format specs that cannot apply (e.g. {source:d}) fail now, not mid-run

    def caption(
        self,
        source: str,
        page: int,
        region: int | None = None,
        words: str = "",
        kind: str = "",
        described: str = "",
    ) -> str:
        """The caption of page ``page`` of PDF stem ``source`` (region ``region``, ``None`` for the whole page),
        ``words`` being those printed around the picture, ``kind`` what kind of picture it is and ``described``
        what a captioning model said it shows (``{caption}``)."""
        try:
            text = self.template.format(
                source=source,
                page=page,
                region="" if region is None else region,
                trigger=self.trigger,
                kind=kind,
                words=words,
                caption=described,
            )
        except (ValueError, TypeError) as exc:
            raise ValueError(f"bad caption template {self.template!r}: {exc}") from None
        pieces = (re.sub(r"\s+", " ", piece).strip() for piece in safe_text(text).split(","))
        return ", ".join(piece for piece in pieces if piece)


def trigger_note(template: CaptionTemplate, how: str = "--trigger WORD") -> str:
    """One line for the user when the captions have a ``{trigger}`` but no trigger word was given (empty
    otherwise): a LoRA is called up by a word it learned from every caption, and none is there. ``how`` says
    how to give one where the note is shown (the CLI's flag, the Space's field)."""
    if "trigger" not in template.fields or template.trigger:
        return ""
    return (
        "note: no trigger word: a LoRA usually needs one (a rare word such as 'vstnkmd', in every caption, "
        f"calls up what it learned); set it with {how}"
    )


def captioner_note(template: CaptionTemplate, captioner: str | None, how: str = "--captioner MODEL") -> str:
    """One line for the user when their own template has ``{caption}`` but no captioning model was named (empty
    otherwise): it stays empty, as ``{trigger}`` does without a trigger word, and the run goes on. The default
    template is left unremarked: its ``{caption}`` is there for whoever adds a model."""
    if "caption" not in template.fields or captioner or template.template == DEFAULT_TEMPLATE:
        return ""
    return f"note: the caption template has {{caption}} but no captioning model: it stays empty; name one with {how}"


def caption_name(image_name: str) -> str:
    """The kohya caption file next to an image: ``x_p0001.jpg`` → ``x_p0001.txt``."""
    return str(PurePosixPath(image_name).with_suffix(CAPTION_EXTENSION))


def metadata_line(
    file_name: str,
    text: str,
    source: str,
    page: int,
    box: Sequence[float] | None = None,
    score: float | None = None,
) -> str:
    """One ``metadata.jsonl`` line (with its newline) for ``datasets.load_dataset("imagefolder", data_dir=…)``.

    ``file_name`` is the image's path relative to the metadata file, ``text`` its caption (the column
    diffusers' training scripts read by default), ``box`` the region as page fractions or ``None``.
    """
    record = {
        "file_name": file_name,
        "text": text,
        "source": source,
        "page": page,
        "box": None if box is None else [round(float(v), 4) for v in box],
        "score": None if score is None else round(float(score), 4),
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


def dataset_config_toml(image_dir: str, resolution: int = 1024, num_repeats: int = 1, extract: str = "") -> str:
    """A kohya sd-scripts ``--dataset_config`` for the written images: buckets on, never upscaled.

    ``image_dir`` must be absolute: kohya resolves a relative one from the directory training starts in (its
    docs start it in the sd-scripts folder), finds no image there and ``sdxl_train_network.py`` exits 0 without
    training. ``extract`` (for a zip) is the command that puts the images where ``image_dir`` says.

    Keys follow sd-scripts' ``docs/config_README``: bucketing options and ``resolution`` are dataset options
    (here in ``[general]``), ``caption_extension`` and ``num_repeats`` subset options. Buckets step by 64 like
    the fitted images, so images fitted in ``bucket`` mode pass through kohya's bucketing unchanged. No
    ``min_bucket_reso``/``max_bucket_reso``: kohya ignores them with ``bucket_no_upscale`` and warns.
    """
    how = f"# First extract the images there: {extract}\n" if extract else ""
    return (
        "# kohya sd-scripts: sdxl_train_network.py --dataset_config dataset_config.toml (from any folder)\n"
        + how
        + "[general]\n"
        "enable_bucket = true\n"
        "bucket_no_upscale = true\n"
        "bucket_reso_steps = 64\n"
        f"resolution = {int(resolution)}\n"
        f"caption_extension = {json.dumps(CAPTION_EXTENSION)}\n"
        "\n"
        "[[datasets]]\n"
        "batch_size = 1\n"
        "\n"
        "  [[datasets.subsets]]\n"
        f"  image_dir = {json.dumps(image_dir, ensure_ascii=False)}\n"
        f"  num_repeats = {int(num_repeats)}\n"
    )
