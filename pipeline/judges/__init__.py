"""Page judges, selectable by name (``--filter``).

Judges are imported on first use, so the process that only plans and writes a run (the parallel run's
main process) does not load OpenCV and NumPy.
"""

from __future__ import annotations

import importlib
import math

from pipeline.judges.base import Box, Judge, Verdict

JUDGES: dict[str, tuple[str, float]] = {
    "sigma": ("pipeline.judges.sigma:SigmaJudge", 45.0),
    "structure": ("pipeline.judges.structure:StructureJudge", 0.5),
}
"""Name → (class, default threshold). The defaults live here so that a process can know them without
importing the judge (the main process of a parallel run needs the threshold for the report)."""
DEFAULT_JUDGE = "structure"


def threshold_of(name: str, threshold: float | None = None) -> float:
    """``threshold``, or the judge's documented default when it is ``None``."""
    if name not in JUDGES:
        raise ValueError(f"unknown filter {name!r}; choose one of {', '.join(sorted(JUDGES))}")
    return JUDGES[name][1] if threshold is None else threshold


def parse_threshold(text: str | float | None) -> float | None:
    """A threshold as a person types it: empty means the judge's own default (``None``), else a number."""
    if text is None or isinstance(text, (int, float)):
        return text
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"threshold must be a number, or empty for the filter's own default; got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"threshold must be a finite number; got {text!r}")
    return value


def make_judge(name: str = DEFAULT_JUDGE, threshold: float | None = None) -> Judge:
    """Build a judge by name; ``threshold=None`` keeps the judge's documented default."""
    threshold = threshold_of(name, threshold)
    module, attribute = JUDGES[name][0].split(":")
    return getattr(importlib.import_module(module), attribute)(threshold=threshold)


__all__ = ["DEFAULT_JUDGE", "JUDGES", "Box", "Judge", "Verdict", "make_judge", "parse_threshold", "threshold_of"]
