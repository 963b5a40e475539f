"""The structure judge's shared measures (``pipeline/judges/measure.py``): the fast reductions are exactly the
slow ones, and a box fitted to its ink stops at the gutter."""

from __future__ import annotations

import cv2
import numpy as np

from pipeline.judges.measure import column_means, grow_to_ink, percentiles, px, union_until_stable


def test_percentiles_of_uint8_are_numpys() -> None:
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 1000, 65536):
        a = rng.integers(0, 256, n).astype(np.uint8)
        qs = [0, 1, 37.5, 50, 95, 99, 100]
        assert percentiles(a, qs) == [float(v) for v in np.percentile(a, qs)]


def test_column_means_are_an_exact_area_reduction() -> None:
    a = np.random.default_rng(1).random((50, 301)).astype(np.float32)
    out = np.empty((50, 100), np.float32)
    expected = cv2.resize(a[:, :300], (100, 50), interpolation=cv2.INTER_AREA)
    assert np.allclose(column_means(a, 3, out), expected, atol=1e-6)


def test_a_box_grows_over_adjacent_ink_up_to_the_first_empty_line() -> None:
    inked = np.zeros((100, 100), bool)
    inked[20:60, 20:60] = True  # the picture
    inked[20:60, 62:80] = True  # text across a 2 px gutter
    assert grow_to_ink(inked, 22, 22, 58, 58, px(3.0, 72.0)) == (20, 20, 60, 60)  # not over the gutter
    # ``m`` steps at most at the top-left, and ``m`` at the bottom-right
    assert grow_to_ink(inked, 30, 30, 50, 50, 4) == (26, 30, 54, 50)
    inked[30:50, 30:50] = False
    assert grow_to_ink(inked, 25, 25, 55, 55, 0) == (25, 25, 55, 55)  # ink at every edge: nothing to trim


def test_union_until_stable_joins_through_a_chain() -> None:
    near = lambda a, b: abs(a[0] - b[1]) <= 1 or abs(b[0] - a[1]) <= 1  # noqa: E731
    merged = union_until_stable([(0, 1), (5, 6), (2, 3), (4, 4)], near, lambda a, b: (min(a[0], b[0]), max(a[1], b[1])))
    assert merged == [(0, 6)]
