"""The article's per-page cleanup, observed: full collections and freezing at the cadence. (MuPDF's store size is
not exposed by PyMuPDF 1.26, whose ``TOOLS.store_size()`` returns ``None``: its emptying is not observed here.)"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pipeline.cleanup import _TRIM, Cleanup


@pytest.fixture
def full_collections() -> Iterator[list[int]]:
    """Counts the full (generation 2) collections that start while the test runs; automatic ones are off."""
    seen: list[int] = []

    def callback(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(1)

    enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)
        gc.unfreeze()
        if enabled:
            gc.enable()


def test_cleanup_runs_every_n_pages(full_collections: list[int]) -> None:
    cleanup = Cleanup(every=3)
    gc.unfreeze()
    for _ in range(2):
        cleanup.after_page()
    assert full_collections == [] and gc.get_freeze_count() == 0
    cleanup.after_page()  # the third page
    assert len(full_collections) == 1, "gc.collect() runs on every 3rd page"
    assert gc.get_freeze_count() > 0, "survivors are frozen, so the next collection skips them"


def test_the_articles_cadence_is_every_page(full_collections: list[int]) -> None:
    cleanup = Cleanup()
    for _ in range(4):
        cleanup.after_page()
    assert len(full_collections) == 4


def test_malloc_trim_is_found_on_glibc() -> None:
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    assert _TRIM is not None and _TRIM(0) in (0, 1)
