"""Run options shared by the CLI, the Space and the benchmarks."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.captions import DEFAULT_TEMPLATE, CaptionTemplate
from pipeline.dedupe import DEFAULT_THRESHOLD
from pipeline.fit import DEFAULT_MIN_SIDE, Fit, parse_fit
from pipeline.judges import DEFAULT_JUDGE

CROP_MODES = ("auto", "always", "never")
AUTO_CROP_COVERAGE = 0.5
"""With ``crop="auto"``, a page whose picture regions cover at least this share of it is written whole."""


@dataclass(frozen=True)
class Options:
    """What a run produces: how pages are judged, fitted, encoded, deduplicated and captioned.

    Defaults are LoRA-ready (SDXL buckets, never upscaled, duplicates dropped); ``fit="square"`` with
    ``filter="sigma"`` reproduces the seed article (1024×1024 LANCZOS, JPEG q92).
    """

    filter: str = DEFAULT_JUDGE
    threshold: float | None = None
    """``None`` keeps the judge's own documented default."""
    fit: str = "bucket"
    """``bucket`` (nearest SDXL ~1 MP bucket), ``square`` (the article's size×size), or ``max-side N``."""
    size: int = 1024
    min_side: int = DEFAULT_MIN_SIDE
    """Images whose shorter side is below this at full resolution are dropped (recorded as too small)."""
    upscale: bool = False
    quality: int = 92
    crop: str | bool = "auto"
    """``always``: write the judge's picture regions instead of whole pages; ``never``: whole pages; ``auto``:
    regions where the pictures cover less than half of the page (a cartoon on a newspaper page), the whole page
    otherwise (a plate). ``True``/``False`` mean ``always``/``never``."""
    dedupe: int | None = DEFAULT_THRESHOLD
    """Perceptual-hash Hamming distance at or under which an image is a duplicate; ``None`` keeps all."""
    caption: str = DEFAULT_TEMPLATE
    trigger: str = ""
    kohya_config: bool = False
    """Also write a kohya sd-scripts ``dataset_config.toml`` (buckets on, no upscaling)."""
    gc_every: int = 1
    """Run the per-page cleanup every N pages (1 = the article's per-page cleanup)."""

    def __post_init__(self) -> None:
        if isinstance(self.crop, bool):
            object.__setattr__(self, "crop", "always" if self.crop else "never")
        if self.crop not in CROP_MODES:
            raise ValueError(f"crop must be one of {', '.join(CROP_MODES)}, got {self.crop!r}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"quality must be between 1 and 100, got {self.quality}")
        if self.gc_every < 1:
            raise ValueError(f"gc_every must be at least 1, got {self.gc_every}")
        if self.dedupe is not None and not 0 <= self.dedupe <= 64:
            raise ValueError(f"dedupe threshold must be between 0 and 64 bits, got {self.dedupe}")
        self.fit_spec()
        self.captions()

    def fit_spec(self) -> Fit:
        return parse_fit(self.fit, self.size, self.min_side, self.upscale)

    def captions(self) -> CaptionTemplate:
        return CaptionTemplate(self.caption, self.trigger)
