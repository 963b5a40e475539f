"""The article's per-page cleanup, with a measurable cadence: collect garbage and empty MuPDF's store."""

from __future__ import annotations

import gc

import pymupdf


class Cleanup:
    """Call ``after_page()`` once per page; every ``every`` pages it runs ``gc.collect()`` and shrinks
    MuPDF's store (decoded images and fonts it caches) to nothing, so memory cannot creep over a long run.
    """

    def __init__(self, every: int = 1) -> None:
        self.every = every
        self._pages = 0

    def after_page(self) -> None:
        self._pages += 1
        if self._pages % self.every == 0:
            gc.collect()
            pymupdf.TOOLS.store_shrink(100)
