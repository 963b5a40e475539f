"""What a run produces, shared by the CLI, the Space and the benchmarks (how it runs: ``execution.py``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pipeline.captions import DEFAULT_TEMPLATE, CaptionTemplate
from pipeline.dedupe import DEFAULT_THRESHOLD
from pipeline.fit import DEFAULT_MIN_SIDE, Fit, parse_fit
from pipeline.judges import DEFAULT_JUDGE, JUDGES
from pipeline.ocr import DEFAULT_LANG, LANG_FORMAT, reading_lang
from pipeline.settings import setting

CROP_MODES = ("auto", "always", "never")
AUTO_CROP_COVERAGE = 0.5
"""With ``crop="auto"``, a page whose picture regions cover at least this share of it is written whole."""


def _bits(word: str) -> int | None:
    """``--dedupe``'s word: a number of bits, or a negative one for none (keep duplicates)."""
    return None if int(word) < 0 else int(word)


@dataclass(frozen=True)
class Options:
    """What a run produces: how pages are judged, fitted, encoded, deduplicated and captioned.

    Defaults are LoRA-ready (SDXL buckets, never upscaled, duplicates dropped); ``fit="square"`` with
    ``filter="sigma"`` reproduces the seed article (1024×1024 LANCZOS, JPEG q92).
    """

    filter: str = setting(
        DEFAULT_JUDGE,
        f"page judge (default: {DEFAULT_JUDGE}). structure: finds pictures by their structure (dense, varied ink "
        "that fills every row, unlike lines of text) and their boxes, score 0-1; sigma: the article's grey-level "
        "standard deviation at Matrix(2, 2)",
        choices=sorted(JUDGES),
    )
    threshold: float | None = setting(
        None,
        "keep a page when its score passes this (default: the judge's own: 0.5 for structure, 45 for sigma)",
    )
    """``None`` keeps the judge's own documented default."""
    fit: str = setting(
        "bucket",
        "bucket (default): keep the aspect ratio, downscale to the nearest SDXL ~1 MP bucket and centre-crop the "
        "rest (1024x1024, 1152x896, 1216x832, 1344x768, 1536x640 and portraits); square: SIZExSIZE as the "
        "article does (aspect ratio not kept); 'max-side N': keep the aspect ratio, longer side at most N",
        metavar="MODE",
    )
    size: int = setting(1024, "square side, bucket base or max side in pixels (default: %(default)s)")
    min_side: int = setting(
        DEFAULT_MIN_SIDE,
        "drop images whose shorter side is below PX at the scan's own resolution (default: %(default)s); images "
        "between this and the target are kept at their size, never upscaled",
        metavar="PX",
    )
    """Images whose shorter side is below this at full resolution are dropped (recorded as too small)."""
    upscale: bool = setting(False, "interpolate small images up to the target (off: never upscale)")
    quality: int = setting(92, "JPEG quality 1-100 (default: %(default)s)")
    crop: str | bool = setting(
        "auto",
        "auto (default): write the judge's picture regions where they cover less than half of the page (a "
        "cartoon on a newspaper page), the whole page otherwise (a plate); always (or --crop alone): regions; "
        "never: whole pages",
        choices=CROP_MODES,
        nargs="?",
        const="always",
    )
    """``always``: write the judge's picture regions instead of whole pages; ``never``: whole pages; ``auto``:
    regions where the pictures cover less than half of the page (a cartoon on a newspaper page), the whole page
    otherwise (a plate). ``True``/``False`` mean ``always``/``never``."""
    dedupe: int | None = setting(
        DEFAULT_THRESHOLD,
        "drop an image whose perceptual hash is within BITS of an earlier one, or whose keypoints show the same "
        "picture under another box, across all inputs (default: %(default)s; exact copies are always caught at "
        "0); -1 keeps duplicates",
        metavar="BITS",
        type=_bits,
    )
    """Perceptual-hash Hamming distance at or under which an image is a duplicate; ``None`` keeps all."""
    caption: str = setting(
        DEFAULT_TEMPLATE,
        "caption written next to each image (kohya .txt) and in metadata.jsonl; placeholders {trigger}, {kind} "
        "(what the picture is: monochrome or colour line art, halftone or continuous tone), {words} (the words "
        "printed in and around the picture: text layer, else OCR), {caption} (what --captioner's model says the "
        "image shows; empty without one), {source} (PDF name), {page}, {region} (default: '%(default)s': never "
        "empty, no file names)",
        metavar="TEMPLATE",
    )
    trigger: str = setting("", "the trigger word(s) that {trigger} stands for")
    captioner: str | None = setting(
        None,
        "an image-to-text model, a Hub id or a local folder (BLIP, GIT, Florence-2, a VisionEncoderDecoder...), whose "
        "description of each written image fills {caption}; loaded once for the run, on the GPU when there is one "
        "(needs torch and transformers; default: none)",
        metavar="MODEL",
    )
    """The captioning model's id: part of what the run produces (its identity, so a resume cannot mix two models'
    captions). The loaded model itself is handed to ``run(..., captioner=...)`` (``models.captioner``)."""
    ocr: bool = setting(
        True,
        "read {words} with Tesseract where a page has no text layer around the picture (--no-ocr: text layers only; "
        "the benchmark's 32 newspaper pages, 2 cores: 8.2 pages/s with OCR, 12 without)",
    )
    """Read ``{words}`` with Tesseract where the page has no text layer there (``pipeline.ocr``)."""
    ocr_lang: str = setting(
        DEFAULT_LANG,
        "Tesseract language packs for OCR, joined by + (default: %(default)s: English, Russian, French, German "
        "and German Fraktur)",
        metavar="LANGS",
    )
    kohya_config: bool = setting(False, "also write a kohya sd-scripts dataset_config.toml")
    """Also write a kohya sd-scripts ``dataset_config.toml`` (buckets on, no upscaling)."""

    def __post_init__(self) -> None:
        if isinstance(self.crop, bool):
            object.__setattr__(self, "crop", "always" if self.crop else "never")
        if self.crop not in CROP_MODES:
            raise ValueError(f"crop must be one of {', '.join(CROP_MODES)}, got {self.crop!r}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"quality must be between 1 and 100, got {self.quality}")
        if self.threshold is not None and not math.isfinite(self.threshold):  # no page could be kept, or scored
            raise ValueError(f"threshold must be a finite number, got {self.threshold}")
        if self.dedupe is not None and not 0 <= self.dedupe < 64:  # 64 bits apart is every pair of hashes
            raise ValueError(f"dedupe threshold must be between 0 and 63 bits, got {self.dedupe}")
        if not LANG_FORMAT.fullmatch(self.ocr_lang):
            raise ValueError(
                f"ocr_lang must be Tesseract language packs joined by '+' (eng+deu), got {self.ocr_lang!r}"
            )
        if self.captioner is not None:  # a blank field (the Space's textbox) names no model
            object.__setattr__(self, "captioner", self.captioner.strip() or None)
        self.fit_spec()
        if "caption" not in self.captions().fields and self.captioner is not None:
            raise ValueError(
                f"a captioning model fills {{caption}}, which the caption template {self.caption!r} does not have: "
                "add it, or leave the model out"
            )

    def fit_spec(self) -> Fit:
        return parse_fit(self.fit, self.size, self.min_side, self.upscale)

    def captions(self) -> CaptionTemplate:
        return CaptionTemplate(self.caption, self.trigger)

    def reading_lang(self) -> str | None:
        """The packs this run's OCR reads with here (the default set's installed ones,
        :func:`pipeline.ocr.reading_lang`); ``None`` when it reads none: OCR off, no ``{words}`` in the caption,
        or Tesseract cannot (the run's main process says why, once: :func:`pipeline.ocr.ocr_note`)."""
        if not self.ocr or "words" not in self.captions().fields:
            return None
        return reading_lang(self.ocr_lang)[0]
