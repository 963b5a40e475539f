"""Where the page is in its view: the grey range, the dark share, and a scanner bed's or microfilm's frame.

A page scanned on a black scanner bed or microfilm frame is judged inside its frame: the frame is runs of
mostly-dark rows and columns from the view's edges (:func:`border_runs`), so that its black counts neither as
the page's darkness (a negative card) nor in its sizes, grey range or paper level. This module decides how deep
that frame is on each side, what share of the page is dark (over half: a negative card, no printed page), and
maps boxes found inside the frame back onto the view (:func:`onto_view`).

A page on tinted paper may lie on a scanner bed *lighter* than itself (:func:`bed_runs`): read with the page,
that bed is the page's "white" and the whole tinted sheet becomes a grey of ink in which no line of type has
empty leading. Such a bed is a frame too, found the same way, once the page's own paper is known to be darker.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from pipeline.judges.base import Box
from pipeline.judges.measure import percentiles

Frame = tuple[int, int, int, int]
"""The depth of a scanner frame at the top, bottom, left and right edge, in pixels (0: none)."""


def grey_range(gray: np.ndarray) -> tuple[float, float]:
    """1st and 99th percentile of the page's grey, from a ~256 x 256 sample."""
    h, w = gray.shape
    lo, hi = percentiles(gray[:: max(1, h // 256), :: max(1, w // 256)], [1, 99])
    return lo, hi


def dark_rows_cols(
    gray: np.ndarray, dark: np.ndarray, grey_range: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-row and per-column counts of dark pixels (below the mid-tone of the 1st/99th percentiles
    ``grey_range``), and the page's dark fraction; one integer pass into ``dark`` (bool, ``gray``'s shape)
    instead of float comparisons and means."""
    h, w = gray.shape
    lo, hi = grey_range
    # integer grey: g < t exactly when g < ceil(t)
    dark = np.less(gray, math.ceil((lo + hi) / 2), out=dark).view(np.uint8)
    rows = cv2.reduce(dark, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    cols = cv2.reduce(dark, 0, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    return rows, cols, float(rows.sum() / (h * w))


def border_runs(rows: np.ndarray, cols: np.ndarray, h: int, w: int) -> Frame:
    """Depth of the dark scanner border at the top, bottom, left and right edge (0: none), from the dark
    ``rows`` / ``cols`` counts of an ``h`` x ``w`` page: the run of rows (columns) from each edge that are at
    least 60 % dark, and a margin of half a percent beyond."""
    runs = []
    for prof, n in ((rows / w, h), (cols / h, w)):
        for rev in (False, True):
            seq = prof[::-1] if rev else prof
            run = int(np.argmax(seq < 0.6)) if (seq < 0.6).any() else n
            runs.append(min(n, run + max(1, n // 200)) if run else 0)
    return runs[0], runs[1], runs[2], runs[3]


BED_STEP = 24
"""A bed is lighter than the page's paper by at least this (grey levels): white paper on a white bed is one ground."""
PAPER_PEAK = 0.35
"""Share of the page's middle within 8 grey levels of its commonest tone: paper showing between marks (text,
a drawing), where a photograph or painting spreads its tones."""


def bed_runs(gray: np.ndarray) -> Frame:
    """Depth of a scanner bed lighter than the page at each edge (0: none), as :func:`border_runs`: the runs of
    rows (columns) from each edge that are at least 60 % lighter than halfway between the page's paper (the
    commonest tone of its middle, where that is paper: see :data:`PAPER_PEAK`) and the bed (the tone of the
    view's outermost rows and columns)."""
    h, w = gray.shape
    none = (0, 0, 0, 0)
    if h < 16 or w < 16:
        return none
    sample = gray[:: max(1, h // 256), :: max(1, w // 256)]
    sh, sw = sample.shape
    middle = sample[sh // 5 : sh - sh // 5, sw // 5 : sw - sw // 5]
    counts = np.convolve(np.bincount(middle.ravel(), minlength=256), np.ones(17), mode="same")
    paper = int(np.argmax(counts))
    if counts[paper] < PAPER_PEAK * middle.size:
        return none
    edge = np.concatenate([sample[0], sample[-1], sample[:, 0], sample[:, -1]])
    bed = float(np.median(edge))
    # the page's lightest tones must be darker than the bed too: where its paper shows as light as the
    # margin (an engraving's hatching, a photograph's highlights), the margin is that paper, not a bed
    if bed - paper < BED_STEP or bed - percentiles(middle, [95])[0] < BED_STEP / 2:
        return none
    light = np.greater(gray, (bed + paper) / 2).view(np.uint8)
    rows = cv2.reduce(light, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    cols = cv2.reduce(light, 0, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    return border_runs(rows, cols, h, w)


def onto_view(box: Box, frame: Frame, h: int, w: int) -> Box:
    """``box``, fractions of the page inside a scanner ``frame`` (top, bottom, left, right, in pixels of an
    ``h`` x ``w`` view), as fractions of the view."""
    top, bottom, left, right = frame
    fx, fy = (w - left - right) / w, (h - top - bottom) / h
    return (left / w + box[0] * fx, top / h + box[1] * fy, left / w + box[2] * fx, top / h + box[3] * fy)
