"""The work arrays a page's stages share (``pipeline/judges/buffers.py``): reused from page to page within a
thread (a fresh page-sized array costs more in page faults than the arithmetic on it, and the worker's peak
memory is a requirement), a thread's own, and given back by ``release``."""

from __future__ import annotations

import threading

import numpy as np
from test_judge_structure import A4, book_page, engraving, paper

from pipeline.judges import buffers
from pipeline.judges.buffers import PageBuffers, held_bytes
from pipeline.judges.structure import StructureJudge


def test_a_page_no_bigger_than_the_last_gets_its_memory_and_a_bigger_one_replaces_it() -> None:
    buffers.release()
    first = PageBuffers(600, 400)
    ink, strokes = first.ink, first.strokes
    held = held_bytes()
    assert held == 600 * 400 * (4 + 1)
    second = PageBuffers(500, 400)  # the next page, smaller: the same memory, no new block
    assert np.shares_memory(second.ink, ink) and np.shares_memory(second.strokes, strokes)
    assert second.ink.shape == (500, 400) and second.ink.dtype == np.float32
    assert held_bytes() == held
    bigger = PageBuffers(900, 400)
    assert not np.shares_memory(bigger.ink, ink)
    assert held_bytes() == 900 * 400 * 4 + 600 * 400  # the old ink block is replaced, not kept beside it
    buffers.release()
    assert held_bytes() == 0


def test_the_coarse_planes_lie_in_the_ink_maps_paper_plane() -> None:
    """The three coarse planes the typeset and texture stages use are the ink map's work plane, no new memory."""
    buffers.release()
    page = PageBuffers(300, 301)
    planes = page.planes()
    assert [p.shape for p in planes] == [(300, 100)] * 3
    assert all(np.shares_memory(p, page.work) for p in planes)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(planes) for b in planes[i + 1 :])
    assert held_bytes() == 300 * 301 * 4
    buffers.release()


def test_each_thread_has_its_own_arrays() -> None:
    buffers.release()
    here = PageBuffers(200, 200).ink
    there: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: there.append(PageBuffers(200, 200).ink))
    thread.start()
    thread.join()
    assert not np.shares_memory(here, there[0])
    buffers.release()


def test_release_frees_the_threads_work_arrays() -> None:
    """Judging a page leaves its work arrays with the thread for the next page (~13 bytes a view pixel);
    ``release`` (which the worker calls after each task) frees them."""
    buffers.release()
    judge = StructureJudge()
    img = book_page()
    engraving(img, (60, 60, 340, 300))
    judge(img)
    h, w = img.shape
    assert held_bytes() == round(12 * h * w + 2 * h * (w // 3))  # see PageBuffers: 12 bytes a pixel, 2 a coarse cell
    judge.release()
    assert held_bytes() == 0


def test_judging_pages_in_turn_keeps_one_set_of_arrays() -> None:
    """Pages of one size judged one after another hold what the first held: nothing is allocated anew."""
    buffers.release()
    judge = StructureJudge()
    pages = [book_page(seed=s, shape=A4) for s in range(3)]
    for img in pages:
        engraving(img, (60, 60, 400, 420), seed=1)
    judge(pages[0])
    held = held_bytes()
    blocks = {name: block.ctypes.data for name, block in buffers._blocks().items()}
    for img in [*pages[1:], paper(A4)]:
        judge(img)
    assert held_bytes() == held
    assert {name: block.ctypes.data for name, block in buffers._blocks().items()} == blocks
    judge.release()
