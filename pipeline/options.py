"""Run options shared by the CLI, the Space and the benchmarks."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.judges import DEFAULT_JUDGE


@dataclass(frozen=True)
class Options:
    """How pages are judged, fitted and encoded.

    Defaults reproduce the seed article (1024×1024 LANCZOS, JPEG q92, cleanup after every page)
    except for the judge, which is the project's best available filter.
    """

    filter: str = DEFAULT_JUDGE
    threshold: float | None = None
    """``None`` keeps the judge's own documented default."""
    size: int = 1024
    quality: int = 92
    crop: bool = False
    """Write the judge's picture regions instead of whole pages (judges that return boxes)."""
    gc_every: int = 1
    """Run ``gc.collect()`` and empty MuPDF's store every N pages (1 = the article's per-page cleanup)."""

    def __post_init__(self) -> None:
        if not 16 <= self.size <= 8192:
            raise ValueError(f"size must be between 16 and 8192 pixels, got {self.size}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"quality must be between 1 and 100, got {self.quality}")
        if self.gc_every < 1:
            raise ValueError(f"gc_every must be at least 1, got {self.gc_every}")
