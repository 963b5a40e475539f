"""One manifest row per page processed: what was decided, what was written, what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.judges import Box
from pipeline.names import safe_text

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP's CSV injection list)."""

COLUMNS = (
    "source", "page", "kept", "score", "boxes", "page_kind", "outputs", "sizes", "fingerprints", "undersized",
    "duplicates", "too_small", "error", "warning",
)  # fmt: skip
"""A manifest written before a column existed lacks it: readers take a missing column as empty (the report counts
such rows' kind as not recorded)."""


@dataclass
class PageRecord:
    """The fate of one page. ``page`` is 1-based; ``None`` when the whole file failed to open."""

    source: str
    page: int | None
    kept: bool = False
    score: float | None = None
    boxes: tuple[Box, ...] = ()
    kind: str = ""
    """What kind of picture the judge's best candidate on the page is (:func:`pipeline.kinds.candidate_kind`,
    on the judge's view): a kept page's best-scoring picture, a dropped page's best candidate; empty when the
    judge found none."""
    outputs: list[str] = field(default_factory=list)
    sizes: list[tuple[int, int]] = field(default_factory=list)
    """``(width, height)`` of each output."""
    fingerprints: list[str] = field(default_factory=list)
    """Exact and perceptual hash of each output (``pipeline.dedupe.Fingerprint``), to resume deduplication."""
    undersized: list[str] = field(default_factory=list)
    """Outputs kept below the fit's target rather than upscaled."""
    duplicates: list[str] = field(default_factory=list)
    """``name=original`` for each image dropped as a duplicate of an earlier one."""
    too_small: list[str] = field(default_factory=list)
    """Images dropped because their shorter side is below the minimum."""
    error: str = ""
    warning: str = ""
    """What MuPDF reported while reading the page: a repaired file or a truncated image (the page may be
    incomplete), or a harmless syntax slip ("closepath with no current point"). The page was processed."""

    def row(self) -> dict[str, str]:
        """The CSV row: booleans as ``true``/``false``, lists joined by ``;``, boxes as page fractions.

        Text from outside (the file name, MuPDF's messages) is made encodable, so it never stops the run,
        and inert in a spreadsheet (:func:`csv_text`). Output names need no quote: their stems never start
        with a formula character (:func:`pipeline.names.portable_stem`), and they are read back on resume.
        """
        return {
            "source": csv_text(self.source),
            "page": "" if self.page is None else str(self.page),
            "kept": "true" if self.kept else "false",
            "score": "" if self.score is None else f"{self.score:.4f}",
            "boxes": ";".join(" ".join(f"{v:.4f}" for v in box) for box in self.boxes),
            "page_kind": self.kind,
            "outputs": ";".join(self.outputs),
            "sizes": ";".join(f"{w}x{h}" for w, h in self.sizes),
            "fingerprints": ";".join(self.fingerprints),
            "undersized": ";".join(self.undersized),
            "duplicates": ";".join(self.duplicates),
            "too_small": ";".join(self.too_small),
            "error": csv_text(self.error),
            "warning": csv_text(self.warning),
        }


def split_cell(cell: str | None) -> list[str]:
    """A list cell of a manifest row (joined by ``;`` in :meth:`PageRecord.row`) as its items, none when empty."""
    return [item for item in (cell or "").split(";") if item]


def csv_text(text: str) -> str:
    """``text`` made encodable (:func:`safe_text`) and, when it starts like a formula (``=``, ``+``, ``-``,
    ``@``, tab, carriage return), prefixed with ``'``, as OWASP recommends against CSV injection: a PDF
    named ``=HYPERLINK(…).pdf`` must not run in the spreadsheet that opens ``manifest.csv``. Idempotent,
    so a row read back on resume and written again is unchanged. For text cells only: a negative score
    stays a number."""
    text = safe_text(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
