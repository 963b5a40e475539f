"""The article's per-page cleanup, with a measurable cadence: free what the page left behind and give it
back to the operating system."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

import pymupdf


def _malloc_trim() -> ctypes._CFuncPtr | None:
    """glibc's ``malloc_trim``: ``gc.collect()`` frees objects, but glibc keeps the freed heap mapped, so
    RSS only ratchets up; trimming returns it (measured: 150–170 MB → 110 MB between newspaper pages)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return None


_TRIM = _malloc_trim()


class Cleanup:
    """Call ``after_page()`` once per page; every ``every`` pages it runs ``gc.collect()``, empties MuPDF's
    store (the decoded scan it caches) and trims the C heap, so memory cannot creep over a long run.

    A full collection walks every object alive: ~25 ms per page in a worker with SciPy loaded (8 % of a
    page). Freezing what survives each collection leaves only the page's own objects to walk (< 1 ms).
    """

    def __init__(self, every: int = 1) -> None:
        self.every = every
        self._pages = 0

    def after_page(self) -> None:
        self._pages += 1
        if self._pages % self.every == 0:
            gc.collect()
            gc.freeze()  # survivors are long-lived (modules, caches): the next collection skips them
            pymupdf.TOOLS.store_shrink(100)
            if _TRIM is not None:
                _TRIM(0)
