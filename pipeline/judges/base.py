"""The judge interface: decide from a cheap view of a page whether (and where) it holds a picture."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    import numpy as np

Box = tuple[float, float, float, float]
"""A region as page fractions ``(x0, y0, x1, y1)`` in ``[0, 1]``, origin top-left."""


@dataclass(frozen=True)
class Verdict:
    """What a judge decided about one page.

    ``score`` is recorded in the manifest for every page so a user can re-threshold afterwards;
    ``boxes`` are the picture regions (empty when the judge only decides whole pages); ``best`` is the judge's
    best candidate whether the page is kept or not (the highest-scoring region, or the whole page for a judge
    of whole pages), ``None`` when it found none at all: the report tells what kind of picture each page's
    candidate is, so that a kind the judge drops is seen.
    """

    keep: bool
    score: float
    boxes: tuple[Box, ...] = ()
    best: Box | None = None


class Judge(Protocol):
    """A page filter. It declares the view it wants so the pipeline renders only that, once."""

    name: str
    zoom: float
    """Scale of the view relative to the PDF's 72 dpi user space (2.0 = ``Matrix(2, 2)``)."""
    colorspace: Literal["gray", "rgb"]
    """The view it wants. Grey scans are always handed over grey (``HxW``), so an ``rgb`` judge accepts both."""
    threshold: float
    exact_within: float
    real_size: bool
    """Whether the judge measures in millimetres, so that it must see the page at its real size where the PDF
    declares a wrong one (:mod:`pipeline.scale`); a judge of fractions or global statistics sees the page as
    declared."""
    """Scores this close to the threshold, judged on a view decoded from the page's scan, are judged again on
    MuPDF's own drawing of the page (0: the judge is defined on any faithful view of the page)."""

    def __call__(self, view: np.ndarray) -> Verdict:
        """Judge a page from its view: ``HxW`` uint8 (gray) or ``HxWx3`` uint8 (rgb)."""
        ...

    def release(self) -> None:
        """Free whatever the judge keeps between pages for speed; called after each task."""
        ...
