"""The page-sized work arrays one page's stages share, kept per thread from page to page.

A fresh page-sized array costs more in page faults (the allocator hands big blocks back to the system after
every page) than the arithmetic done on it, and a worker's peak memory is a requirement. So the arrays live in
blocks of bytes kept per thread: :class:`PageBuffers`, made once per page judged and passed from stage to stage,
names each array the stages share (its shape and type, who writes it, who reads it) and views the thread's block
for it the first time it is asked for. A page no bigger than an earlier one gets the earlier page's memory; a
bigger one replaces the block. Contents are garbage on arrival: whoever takes an array overwrites it.

:func:`release` gives the thread's blocks back (~13 bytes per view pixel: 35–65 MB for a newspaper page); the
worker calls it after each task, so a server thread that judged a PDF once does not keep them for good.
"""

from __future__ import annotations

import math
import threading
from functools import cached_property

import numpy as np

from pipeline.judges.measure import COARSE

_BLOCKS = threading.local()


def _blocks() -> dict[str, np.ndarray]:
    """This thread's blocks of bytes, by the name of the array they hold."""
    return _BLOCKS.__dict__.setdefault("blocks", {})


def release() -> None:
    """Free this thread's blocks (the next page allocates them again)."""
    _BLOCKS.__dict__.pop("blocks", None)


def held_bytes() -> int:
    """Bytes this thread's blocks hold (0 once released)."""
    return sum(block.size for block in _BLOCKS.__dict__.get("blocks", {}).values())


class PageBuffers:
    """The work arrays of one ``h x w`` page (the view, or the page inside its scanner frame), each taken from
    this thread's block of its name on first use. Make one per page judged; pass it along."""

    def __init__(self, h: int, w: int) -> None:
        self.h, self.w = h, w

    def _take(self, name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        blocks = _blocks()
        n = math.prod(shape) * np.dtype(dtype).itemsize
        block = blocks.get(name)
        if block is None or block.size < n:
            block = blocks[name] = np.empty(n, np.uint8)
        return block[:n].view(dtype).reshape(shape)

    @cached_property
    def dark(self) -> np.ndarray:
        """bool ``h x w``: the page's dark pixels, counted per row and column (:mod:`.frame`)."""
        return self._take("dark", (self.h, self.w), bool)

    @cached_property
    def work(self) -> np.ndarray:
        """float32 ``h x w``: the ink map's paper level (:func:`.ink.ink_map`), then :meth:`planes`."""
        return self._take("work", (self.h * self.w,), np.float32).reshape(self.h, self.w)

    @cached_property
    def ink(self) -> np.ndarray:
        """float32 ``h x w``: the ink map (:mod:`.ink`), rules cleared from it in place (:mod:`.rules`)."""
        return self._take("ink", (self.h, self.w), np.float32)

    def planes(self) -> list[np.ndarray]:
        """Three float32 ``h x w // 3`` planes in :attr:`work` once the ink map no longer needs it: the column
        means of the ink (:mod:`.typeset`, :mod:`.rules`), then the row densities of :mod:`.texture`."""
        h, wf = self.h, max(1, self.w // COARSE)
        flat = self.work.reshape(-1)
        return [flat[i * h * wf : (i + 1) * h * wf].reshape(h, wf) for i in range(3)]

    @cached_property
    def inked(self) -> np.ndarray:
        """bool ``h x w``: the pictures' ink (> 0.5), rules taken out (:mod:`.rules`)."""
        return self._take("inked", (self.h, self.w), bool)

    @cached_property
    def raw(self) -> np.ndarray:
        """bool ``h x w``: strokes (ink > 0.3), rules taken out (:mod:`.rules`)."""
        return self._take("raw", (self.h, self.w), bool)

    @cached_property
    def core(self) -> np.ndarray:
        """uint8 ``h x w // 3`` (the planes' grid): the texture cores (:mod:`.texture`)."""
        return self._take("core", (self.h, max(1, self.w // COARSE)), np.uint8)

    @cached_property
    def dense(self) -> np.ndarray:
        """uint8 ``h x w // 3``: where the row-minimum density is dense enough (:mod:`.texture`)."""
        return self._take("dense", (self.h, max(1, self.w // COARSE)), np.uint8)

    @cached_property
    def strokes(self) -> np.ndarray:
        """uint8 ``h x w``: stroke networks, marked as each candidate traces them (:mod:`.candidates`)."""
        return self._take("strokes", (self.h, self.w), np.uint8)
