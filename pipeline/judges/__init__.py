"""Page judges, selectable by name (``--filter``).

Judges are imported on first use, so the process that only plans and writes a run (the parallel run's
main process) does not load OpenCV and NumPy.
"""

from __future__ import annotations

import importlib

from pipeline.judges.base import Box, Judge, Verdict

JUDGES: dict[str, str] = {
    "sigma": "pipeline.judges.sigma:SigmaJudge",
    "structure": "pipeline.judges.structure:StructureJudge",
}
DEFAULT_JUDGE = "structure"


def make_judge(name: str = DEFAULT_JUDGE, threshold: float | None = None) -> Judge:
    """Build a judge by name; ``threshold=None`` keeps the judge's documented default."""
    try:
        module, attribute = JUDGES[name].split(":")
    except KeyError:
        raise ValueError(f"unknown filter {name!r}; choose one of {', '.join(sorted(JUDGES))}") from None
    factory = getattr(importlib.import_module(module), attribute)
    return factory() if threshold is None else factory(threshold=threshold)


__all__ = ["DEFAULT_JUDGE", "JUDGES", "Box", "Judge", "Verdict", "make_judge"]
