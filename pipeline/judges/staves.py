"""Printed music: staves of five thin lines, which are pictures, not rules or type.

A music example in a treatise or a page of a score is engraved, not set: its staff lines are rules (taken out
before the texture measure, :mod:`.rules`) and its notes are small glyph-sized marks, so neither texture nor line
art finds it, and a page of figured bass was dropped as text. A staff is told from anything else on a page by its
lines: exactly five, evenly spaced 1.0-2.6 mm apart (staff heights of 4-10 mm, the rastral sizes of print), over a
long span, unbroken. Lines of type have gaps between their words (a paragraph of five lines is no staff for that),
and a page's lines of type or a ledger's rules come in more than five; hatching has no paper between its strokes
along a span. Staves are looked for on each span's row profile, for all spans at once (2-4 ms on a newspaper page,
~0.5 on a book page), before the rules are taken out.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from pipeline.judges.candidates import Region
from pipeline.judges.measure import PixelBox, box_union, column_means, px, union_until_stable
from pipeline.judges.score import size_evidence

LINES = 5
"""Lines of a staff."""
SPAN_MM = 12.0
"""The horizontal span over which a staff line's ink is averaged: shorter than a bar, longer than a note head."""
MIN_GAP_MM, MAX_GAP_MM = 0.8, 5.5
"""The space between two lines of a staff: 1.0-2.6 mm in print (staves 4-10 mm tall), here from a page declared
at half its size to one declared at twice."""
MIN_STAFF_MM = 30.0
"""A staff runs at least this far: shorter runs of five lines are a sign (a ``≡``), not music."""
LINE_INK = 0.25
"""A staff line's mean ink along the span (a thin line of ~0.7 mm at 72 dpi is one grey row of 0.3-0.6)."""
RULED = 0.85
"""Share of its length along which a staff line is inked (notes and stems cross it; type leaves word gaps)."""
THIN = 0.35
"""A staff line is at most this share of its staff's spacing thick (at half its ink): lines of type are ~0.5."""
SPACE_INK = 0.5
"""The space between two lines holds at most this share of the fainter line's ink (note heads fill a few)."""
MAX_ASPECT = 12.0
"""A staff across a text column is 6-10 times as wide as it is tall with its notes: that long is no headline."""


class StaffSettings(Protocol):
    """What this stage reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    @property
    def dpi(self) -> float: ...

    min_area: float


def with_music(regions: list[Region], music: list[PixelBox], h: int, w: int, settings: StaffSettings) -> list[Region]:
    """``regions`` (in place) with the printed music (:func:`staves`), each a region of its own scored on its size
    and shape alone: a staff is as sure a sign of a picture as texture at the reference fill."""
    for x0, y0, x1, y1 in music:
        box = (x0 / w, y0 / h, x1 / w, y1 / h)
        area = (box[2] - box[0]) * (box[3] - box[1])
        aspect = max((x1 - x0) / max(1, y1 - y0), (y1 - y0) / max(1, x1 - x0))
        z = size_evidence(area, settings.min_area, aspect, MAX_ASPECT)
        regions.append(Region(box, area, 0.0, 1.0 / (1.0 + np.exp(-z))))
    return regions


def staves(ink: np.ndarray, columns: int, settings: StaffSettings) -> list[PixelBox]:
    """The boxes (view pixels) of the staves on ``ink`` (the page's ink map, 0..1, rules still in, each of its
    columns the mean of ``columns`` of the view's: a staff line runs on across them), each with one staff height
    above and below it (notes, ledger lines, figures of a figured bass), staves of one system or page joined
    where their boxes meet."""
    dpi, xdpi = settings.dpi, settings.dpi / columns
    h, w = ink.shape
    span = px(SPAN_MM, xdpi)
    if w < span or h < 8:
        return []
    means = column_means(ink, span, np.empty((h, w // span), np.float32))  # h x n: each span's ink per row
    lo, hi = MIN_GAP_MM * dpi / 25.4, MAX_GAP_MM * dpi / 25.4
    found = _five_lines(means, lo, hi)
    boxes = []
    for x0, x1, top, bottom in _runs(found, span):
        x0, x1 = _along(ink[top : bottom + 1], x0, x1, px(2.0, xdpi))
        if x1 - x0 < px(MIN_STAFF_MM, xdpi) or not _ruled(ink[:, x0:x1], top, bottom):
            continue
        height = bottom - top
        boxes.append((x0 * columns, max(0, top - height), min(w, x1) * columns, min(h, bottom + height + 1)))
    return union_until_stable(boxes, _meet, box_union)


def _ruled(ink: np.ndarray, top: int, bottom: int) -> bool:
    """Whether each of the staff's lines (evenly spaced from ``top`` to ``bottom``) runs on unbroken along
    ``ink``'s columns: inked (within a row up or down) in :data:`RULED` of them. A line of type has gaps between
    its words and letters; a staff line only a note's stem or a bar line's width of nothing else."""
    for k in range(LINES):
        row = round(top + k * (bottom - top) / (LINES - 1))
        near = ink[max(0, row - 1) : row + 2].max(axis=0)
        if (near >= LINE_INK).mean() < RULED:
            return False
    return True


def _along(rows: np.ndarray, x0: int, x1: int, reach: int) -> tuple[int, int]:
    """``x0``-``x1`` widened along the staff's lines (``rows``: the staff's rows of the ink map) as far as they run
    on: a clef, a key or a final bar line breaks the five peaks of a span, not the lines."""
    lines = rows.max(axis=0)  # each column's darkest row of the staff: a line wherever one runs
    kernel = np.ones(reach, np.float32) / reach
    on = np.convolve(lines, kernel, mode="same") >= LINE_INK
    while x0 > 0 and on[x0 - 1]:
        x0 -= 1
    while x1 < on.size and on[x1]:
        x1 += 1
    return x0, x1


def _five_lines(means: np.ndarray, lo: float, hi: float) -> list[tuple[int, int, int]]:
    """``(span, top, bottom)`` of each run of exactly :data:`LINES` thin peaks down a column of ``means`` (a
    span's row profile), evenly spaced ``lo``-``hi`` rows apart, with paper between them and no sixth line at the
    same spacing above or below. The peaks and their even runs are found for every span at once; only those few
    runs are looked at one by one."""
    inner = means[1:-1]
    peaks = (inner >= LINE_INK) & (inner >= means[:-2]) & (inner > means[2:])
    spans, rows = np.nonzero(peaks.T)  # by span, then top down
    rows += 1
    if rows.size < LINES:
        return []
    first = np.arange(rows.size - LINES + 1)
    group = np.stack([rows[first + k] for k in range(LINES)], axis=1)
    gaps = np.diff(group, axis=1)
    gap = gaps.mean(axis=1)
    even = spans[first] == spans[first + LINES - 1]
    even &= (gap >= lo) & (gap <= hi) & (gaps.max(axis=1) - gaps.min(axis=1) <= np.maximum(1.0, 0.25 * gap))
    pick = np.flatnonzero(even)
    spans, group, gap = spans[first[pick]], group[pick], np.rint(gap[pick]).astype(np.intp)
    alone = np.flatnonzero(~_more(means, spans, group, gap))  # the cheapest test first: type runs on past five
    spans, group, gap = spans[alone], group[alone], gap[alone]
    keep = _spaced(means, spans, group) & _thin(means, spans, group, gap)
    out: list[tuple[int, int, int]] = []
    taken = (-1, -1)  # the last staff's span and bottom row: a staff's lines are no second staff's
    for j, lines in zip(spans[keep].tolist(), group[keep].tolist(), strict=True):
        if (j, lines[0]) > taken:  # sorted by span, then row
            out.append((j, lines[0], lines[-1]))
            taken = (j, lines[-1])
    return out


def _spaced(means: np.ndarray, spans: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Paper between each two lines of each group (its span's column of ``means``): the lightest row between them
    holds at most :data:`SPACE_INK` of the fainter line's ink."""
    above, below = group[:, :-1], group[:, 1:]
    columns = spans[:, None]
    lightest = np.full(above.shape, np.inf, np.float32)
    for offset in range(1, int((below - above).max(initial=1))):
        np.minimum(lightest, means[np.minimum(above + offset, below - 1), columns], out=lightest)
    fainter = np.minimum(means[above, columns], means[below, columns])
    return (lightest <= SPACE_INK * fainter).all(axis=1)


def _thin(means: np.ndarray, spans: np.ndarray, group: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """Whether each line of each group is thin for its spacing: at most :data:`THIN` of the gap (and 2 rows) holds
    half its ink or more. A staff line is a hairline; a line of type is a band of its x-height, ~half its pitch."""
    columns = spans[:, None]
    peak = means[group, columns]
    wide = np.zeros(group.shape, np.intp)
    reach = int(gap.max(initial=2)) // 2
    for offset in range(-reach, reach + 1):
        rows = group + offset
        inside = (np.abs(offset) <= gap[:, None] // 2) & (rows >= 0) & (rows < means.shape[0])
        wide += inside & (means[np.clip(rows, 0, means.shape[0] - 1), columns] >= 0.5 * peak)
    return (wide <= np.maximum(2, THIN * gap)[:, None]).all(axis=1)


def _more(means: np.ndarray, spans: np.ndarray, group: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """Whether a line like the group's continues it above or below at its spacing (lines of type, a ledger)."""
    weakest = means[group, spans[:, None]].min(axis=1)
    found = np.zeros(spans.size, bool)
    for row in (group[:, 0] - gap, group[:, -1] + gap):
        for shift in (-1, 0, 1):
            inside = (row + shift >= 0) & (row + shift < means.shape[0])
            near = means[np.clip(row + shift, 0, means.shape[0] - 1), spans]
            found |= inside & (near >= 0.7 * weakest)
    return found


def _runs(found: list[tuple[int, int, int]], span: int) -> list[tuple[int, int, int, int]]:
    """Staves seen in neighbouring spans (``span`` columns each) at about the same rows joined: ``(x0, x1, top,
    bottom)`` in the ink map's columns and rows."""
    runs: list[list[int]] = []  # x0, x1, top, bottom, last span index
    for j, top, bottom in sorted(found):
        for run in runs:
            if run[4] == j - 1 and abs(run[2] - top) <= 2 and abs(run[3] - bottom) <= 2:
                run[1], run[4] = (j + 1) * span, j
                run[2], run[3] = min(run[2], top), max(run[3], bottom)
                break
        else:
            runs.append([j * span, (j + 1) * span, top, bottom, j])
    return [(x0, x1, top, bottom) for x0, x1, top, bottom, _ in runs]


def _meet(a: PixelBox, b: PixelBox) -> bool:
    """Whether two staves' boxes meet or overlap (the staves of a system, a page of music)."""
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]
