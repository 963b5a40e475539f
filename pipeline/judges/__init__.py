"""Page judges, selectable by name (``--filter``)."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.judges.base import Box, Judge, Verdict
from pipeline.judges.sigma import SigmaJudge
from pipeline.judges.structure import StructureJudge

JUDGES: dict[str, Callable[..., Judge]] = {"sigma": SigmaJudge, "structure": StructureJudge}
DEFAULT_JUDGE = "structure"


def make_judge(name: str = DEFAULT_JUDGE, threshold: float | None = None) -> Judge:
    """Build a judge by name; ``threshold=None`` keeps the judge's documented default."""
    try:
        factory = JUDGES[name]
    except KeyError:
        raise ValueError(f"unknown filter {name!r}; choose one of {', '.join(sorted(JUDGES))}") from None
    return factory() if threshold is None else factory(threshold=threshold)


__all__ = ["DEFAULT_JUDGE", "JUDGES", "Box", "Judge", "Verdict", "make_judge"]
