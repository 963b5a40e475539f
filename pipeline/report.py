"""``report.html``: can a user tell in a minute whether the threshold is right?

It shows the run's counts, the pages kept and dropped by kind of picture (so that a kind the judge drops is
seen at once), a histogram of judge scores with the threshold marked, thumbnails of the pages closest to the
threshold on both sides, and the pictures the judge kept that were not written (too
small for ``min_side``) with why. Everything is inline (SVG, base64 JPEG), so the file opens from the zip
with no network and no other file. The counts and scores come from the manifest rows; the thumbnails from
a :class:`Borderline` and a :class:`NotWritten` collector the orchestrator feeds page by page, each keeping
a bounded number, so memory is bounded whatever the run's length.

Manifest columns read (missing columns count as empty, so older manifests still report):
``page``, ``kept``, ``score``, ``page_kind`` (the kind of the judge's best candidate; a manifest without the
column counts its pages' kind as not recorded), ``error``, ``outputs``, ``duplicates`` (``;``-separated
``name=original`` for images dropped as duplicates) and ``too_small`` (``;``-separated names of images below
``min_side``).
"""

from __future__ import annotations

import base64
import heapq
import html
import io
import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from PIL import Image

from pipeline.manifest import split_cell

REPORT = "report.html"


@dataclass(frozen=True)
class Histogram:
    """Judge scores binned so that the threshold falls on a bin edge: bars left of it were rejected."""

    edges: list[float]
    """``len(counts) + 1`` bin edges; bin ``i`` is ``[edges[i], edges[i + 1])``, the last one closed."""
    counts: list[int]
    threshold: float


@dataclass
class Counts:
    """What happened to pages and images, counted from manifest rows: the one count that the run's summary,
    each file's summary and the report share, so they cannot disagree."""

    pages: int = 0
    kept: int = 0
    """Pages the judge kept (``kept`` = ``true``; some may have had all their images dropped as duplicates)."""
    images: int = 0
    text: int = 0
    """Pages the judge rejected (no picture found)."""
    duplicates: int = 0
    """Images dropped as duplicates of earlier ones."""
    too_small: int = 0
    """Images dropped for a shorter side below ``min_side``."""
    errors: int = 0
    """Rows with an error (a page that failed, or a file that could not be opened)."""
    warnings: int = 0
    """Pages processed with MuPDF warnings (a repaired file, a truncated image, a syntax slip)."""

    def add(self, row: Mapping[str, str]) -> None:
        """Count one manifest row (``kept`` is ``true``/``false``; lists are ``;``-separated)."""
        dups, small = split_cell(row.get("duplicates")), split_cell(row.get("too_small"))
        page = bool(row.get("page"))
        self.pages += page
        self.errors += bool(row.get("error"))
        self.warnings += bool(row.get("warning"))
        self.kept += row.get("kept") == "true"
        self.images += len(split_cell(row.get("outputs")))
        self.duplicates += len(dups)
        self.too_small += len(small)
        self.text += page and row.get("kept") != "true" and not row.get("error") and not dups and not small


@dataclass(frozen=True)
class Thumbnail:
    """A small JPEG of a page near the threshold."""

    score: float
    kept: bool
    label: str
    jpeg: bytes


@dataclass(frozen=True)
class DroppedPicture:
    """A picture the judge kept that was not written: where it is, why, and a small JPEG of it."""

    label: str
    """``issue.pdf p12 r2`` (``r`` is its region; none for a whole page)."""
    reason: str
    side: int
    """The shorter side it would have had, in pixels."""
    jpeg: bytes


NO_PICTURE = "no picture found"
"""The kind row of pages on which the judge found no candidate at all (``page_kind`` empty)."""
NOT_RECORDED = "kind not recorded"
"""The kind row of pages from a manifest without ``page_kind`` (a run resumed from an earlier version's)."""
NEAR = 0.5
"""A dropped page is near the threshold when it scores at least this share of it (structure: 0.25 of 0.5)."""


def near_floor(threshold: float) -> float:
    """The lowest score of a dropped page counted as near ``threshold``: :data:`NEAR` of it (of a negative
    threshold, as far below it)."""
    return threshold - (1 - NEAR) * abs(threshold)


@dataclass
class KindCount:
    """Pages whose best candidate is of one kind: kept by the judge, dropped, and dropped near the threshold."""

    kept: int = 0
    dropped: int = 0
    near: int = 0
    """Dropped pages scoring at least :func:`near_floor` of the threshold."""


class Kinds:
    """Pages by the kind of the judge's best candidate on them (the manifest's ``page_kind``): what was kept
    and what was dropped of each kind, so that a kind the judge drops is seen at once. Rows with an error,
    and a file's row, are not pages the judge saw and are not counted."""

    def __init__(self, threshold: float) -> None:
        self.threshold, self.floor = threshold, near_floor(threshold)
        self.counts: dict[str, KindCount] = {}

    def add(self, row: Mapping[str, str]) -> None:
        """Count one manifest row."""
        if not row.get("page") or row.get("error"):
            return
        kind = row.get("page_kind")
        name = NOT_RECORDED if kind is None else kind or NO_PICTURE
        entry = self.counts.setdefault(name, KindCount())
        if row.get("kept") == "true":
            entry.kept += 1
            return
        entry.dropped += 1
        score = _number(row.get("score"))
        entry.near += score is not None and score >= self.floor

    def rows(self) -> list[tuple[str, KindCount]]:
        """``(kind, counts)``, the kinds with most pages first; no picture found and not recorded last."""
        last = (NO_PICTURE, NOT_RECORDED)

        def order(item: tuple[str, KindCount]) -> tuple:
            kind, c = item
            return (last.index(kind) if kind in last else -1, -(c.kept + c.dropped), kind)

        return sorted(self.counts.items(), key=order)

    def warnings(self) -> list[str]:
        """One sentence for each kind the judge dropped more pages of near the threshold than it kept (likely
        pictures lost): ``continuous tone: 9 of 12 pages with such a candidate were dropped, 7 near the threshold
        (score ≥ 0.25)``."""
        return [
            f"{kind}: {c.dropped} of {c.kept + c.dropped} pages with such a candidate were dropped, {c.near} near "
            f"the threshold (score ≥ {self.floor:.4g})"
            for kind, c in self.rows()
            if kind not in (NO_PICTURE, NOT_RECORDED) and c.near > c.kept
        ]

    def line(self) -> str:
        """The counts in one line for a terminal, kept/dropped pages: ``line art 12/3, continuous tone 0/9 (7 near
        the threshold), no picture found 0/40``."""
        return ", ".join(
            f"{kind} {c.kept}/{c.dropped}" + (f" ({c.near} near the threshold)" if c.near else "")
            for kind, c in self.rows()
        )


def by_kind(rows: Iterable[Mapping[str, str]], threshold: float) -> Kinds:
    """The :class:`Kinds` of manifest rows."""
    kinds = Kinds(threshold)
    for row in rows:
        kinds.add(row)
    return kinds


def _number(cell: str | None) -> float | None:
    try:
        value = float(cell) if cell else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def histogram(scores: Iterable[float], threshold: float, bins: int = 30) -> Histogram:
    """Bin ``scores`` into about ``bins`` equal bins spanning the scores and the threshold (the Space plots this)."""
    values = np.asarray([s for s in scores if math.isfinite(s)], dtype=np.float64)
    low = min(float(values.min()), threshold) if values.size else threshold - 1
    high = max(float(values.max()), threshold) if values.size else threshold + 1
    width = (high - low) / bins if high > low else 1.0
    if threshold > low:  # whole bins from the lowest score up to the threshold: the axis starts at a score
        width = (threshold - low) / max(1, round((threshold - low) / width))
    start = threshold - math.ceil((threshold - low) / width - 1e-9) * width
    count = max(1, math.ceil((high - start) / width - 1e-9))
    if start + count * width < high:  # rounding left the maximum out of the last bin
        count += 1
    edges = [start + i * width for i in range(count + 1)]
    counts, _ = np.histogram(values, bins=np.asarray(edges))
    return Histogram([round(e, 6) for e in edges], [int(c) for c in counts], threshold)


def count(rows: Iterable[Mapping[str, str]]) -> Counts:
    """The counts of manifest rows."""
    counts = Counts()
    for row in rows:
        counts.add(row)
    return counts


class Borderline:
    """The ``per_side`` pages nearest the threshold on each side, as small JPEG thumbnails.

    Call :meth:`offer` for every judged page; a thumbnail is made only when the page enters the set, so
    the cost per page is a comparison, and memory is ``2 × per_side`` thumbnails of a few kB.
    """

    def __init__(self, threshold: float, per_side: int = 8, side: int = 200, quality: int = 70) -> None:
        if per_side < 1:
            raise ValueError(f"per_side must be at least 1, got {per_side}")
        self.threshold, self.per_side, self.side, self.quality = threshold, per_side, side, quality
        self._heaps: dict[bool, list[tuple[float, int, Thumbnail]]] = {False: [], True: []}
        self._order = itertools.count()

    def wants(self, score: float, kept: bool) -> bool:
        """Whether a page with this score and verdict would enter the set."""
        return abs(score - self.threshold) < self.within(kept)

    def within(self, kept: bool) -> float:
        """The score distance to the threshold under which a page on this side would enter the set now
        (it only shrinks, so a worker handed this value never skips a page that would have entered)."""
        heap = self._heaps[kept]
        return math.inf if len(heap) < self.per_side else -heap[0][0]

    def offer(self, score: float, kept: bool, label: str, view: np.ndarray | Image.Image | bytes) -> None:
        """Consider a page: ``view`` is any rendering of it (the judge's view is enough) or its thumbnail
        already made by :func:`thumbnail_jpeg` (in a worker), ``label`` its caption."""
        if not math.isfinite(score) or not self.wants(score, kept):
            return
        jpeg = view if isinstance(view, bytes) else thumbnail_jpeg(view, self.side, self.quality)
        entry = (-abs(score - self.threshold), next(self._order), Thumbnail(score, kept, label, jpeg))
        heap = self._heaps[kept]
        if len(heap) < self.per_side:
            heapq.heappush(heap, entry)
        else:
            heapq.heapreplace(heap, entry)

    def thumbnails(self, kept: bool) -> list[Thumbnail]:
        """The collected pages on one side, nearest the threshold first."""
        return [entry[2] for entry in sorted(self._heaps[kept], key=lambda e: (-e[0], e[1]))]


class NotWritten:
    """The ``limit`` largest pictures kept by the judge but not written (too small), with their reasons.

    :meth:`offer` counts every one (``total``); a thumbnail is kept only while it is among the ``limit``
    largest by shorter side (the nearest to being written, those a slightly lower ``min_side`` would keep),
    so memory is ``limit`` thumbnails of a few kB whatever the run's length.
    """

    def __init__(self, limit: int = 48) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit, self.total = limit, 0
        self._heap: list[tuple[int, int, DroppedPicture]] = []
        self._order = itertools.count()

    def over(self) -> int:
        """The shorter side a picture must exceed to enter the set now, -1 while it is not full (it only
        grows, so a worker handed this value never skips a picture that would have entered)."""
        return self._heap[0][0] if len(self._heap) >= self.limit else -1

    def offer(self, side: int, label: str, reason: str, jpeg: bytes | None) -> None:
        """Count a picture not written; keep its thumbnail (``None``: the worker made none) if it is large enough."""
        self.total += 1
        if jpeg is None or side <= self.over():
            return
        entry = (side, -next(self._order), DroppedPicture(label, reason, side, jpeg))  # ties: the earlier stays
        if len(self._heap) < self.limit:
            heapq.heappush(self._heap, entry)
        else:
            heapq.heapreplace(self._heap, entry)

    def pictures(self) -> list[DroppedPicture]:
        """The kept thumbnails, largest first (in run order among equals)."""
        return [entry[2] for entry in sorted(self._heap, key=lambda e: (-e[0], -e[1]))]


THUMBNAIL_SIDE = 200
"""Longer side of the report's borderline thumbnails, in pixels."""


def thumbnail_jpeg(view: np.ndarray | Image.Image, side: int = THUMBNAIL_SIDE, quality: int = 70) -> bytes:
    """A small JPEG of a page view, at most ``side`` pixels on its longer side."""
    picture = Image.fromarray(view) if isinstance(view, np.ndarray) else view.copy()
    picture.thumbnail((side, side), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    (picture if picture.mode in ("L", "RGB") else picture.convert("RGB")).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def histogram_svg(hist: Histogram, width: int = 640, height: int = 220) -> str:
    """An inline SVG bar chart of ``hist``: rejected bins light, kept bins dark, the threshold a red line."""
    left, right, top, bottom = 40, 10, 20, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    low, high = hist.edges[0], hist.edges[-1]
    tallest = max(max(hist.counts), 1)

    def x(value: float) -> float:
        return left + (value - low) / (high - low) * plot_w

    parts = [
        # Scales down to its container (a phone, a narrow column) instead of overflowing it; never above its size.
        f'<svg xmlns="http://www.w3.org/2000/svg" class="histogram" viewBox="0 0 {width} {height}" '
        f'style="display:block;width:100%;max-width:{width}px;height:auto" role="img" '
        'aria-label="histogram of judge scores">',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#444"/>',
    ]
    for edge0, edge1, n in zip(hist.edges, hist.edges[1:], hist.counts, strict=False):
        bar_h = n / tallest * plot_h
        fill = "#334" if edge0 >= hist.threshold else "#bbc"
        bar_w = max(x(edge1) - x(edge0) - 1, 1)
        parts.append(
            f'<rect class="bin" x="{x(edge0):.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w:.1f}" '
            f'height="{bar_h:.1f}" fill="{fill}"><title>{edge0:.4g}–{edge1:.4g}: {n}</title></rect>'
        )
    tx = x(hist.threshold)
    parts += [
        f'<line class="threshold" x1="{tx:.1f}" y1="{top - 8}" x2="{tx:.1f}" y2="{top + plot_h}" '
        'stroke="#d00" stroke-width="2" stroke-dasharray="4 2"/>',
        f'<text x="{tx + 4 if tx < left + plot_w / 2 else tx - 4:.1f}" y="{top - 6}" fill="#d00" font-size="13" '
        f'text-anchor="{"start" if tx < left + plot_w / 2 else "end"}">threshold {hist.threshold:g}</text>',
        f'<text x="{left}" y="{height - 8}" font-size="12">{low:.4g}</text>',
        f'<text x="{left + plot_w}" y="{height - 8}" font-size="12" text-anchor="end">{high:.4g}</text>',
        f'<text x="{left - 4}" y="{top + 4}" font-size="11" text-anchor="end">{tallest}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" font-size="11" text-anchor="end">0</text>',
        "</svg>",
    ]
    return "\n".join(parts)


def render_report(
    rows: Iterable[Mapping[str, str]],
    threshold: float,
    borderline: Borderline | None = None,
    title: str = "Dataset report",
    judge: str = "",
    not_written: NotWritten | None = None,
) -> str:
    """The whole ``report.html`` from the manifest rows, the judge's threshold and the collectors of
    borderline pages and of kept pictures not written."""
    rows = list(rows)
    counts = count(rows)
    scores = [float(row["score"]) for row in rows if row.get("score")]
    hist = histogram(scores, threshold)
    judge_text = f"judge <b>{html.escape(judge)}</b>, " if judge else ""
    table = "".join(
        f"<tr><th>{html.escape(name)}</th><td>{value}</td></tr>"
        for name, value in [
            ("pages", counts.pages),
            ("pages kept by the judge", counts.kept),
            ("images written", counts.images),
            ("dropped as text (judge)", counts.text),
            ("images dropped as duplicates", counts.duplicates),
            ("images dropped as too small", counts.too_small),
            ("errors", counts.errors),
            ("pages with MuPDF warnings (see the manifest)", counts.warnings),
        ]
    )
    sections = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}th{text-align:left;padding-right:1em}"
        "figure{display:inline-block;margin:4px;text-align:center;font-size:12px;width:210px;vertical-align:top}"
        "figure img{max-width:200px;max-height:200px;border:1px solid #ccc}figcaption{overflow-wrap:anywhere}"
        "table.kinds td{text-align:right;padding:0 1em}.kind-warning{color:#b00;font-weight:bold}"
        "</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<table class='counts'>{table}</table>",
        _kinds_section(by_kind(rows, threshold), judge),
        f"<h2>Judge scores</h2><p>{judge_text}threshold <b>{threshold:g}</b>: pages scoring above it were kept "
        f"({len(scores)} scored pages).</p>",
        histogram_svg(hist),
    ]
    if borderline is not None:
        for kept, heading in ((False, "Rejected, nearest the threshold"), (True, "Kept, nearest the threshold")):
            figures = "".join(_figure(t.label, f"score {t.score:.4g}", t.jpeg) for t in borderline.thumbnails(kept))
            figures = figures or "<p>none</p>"
            sections.append(f"<h2>{heading}</h2><div class='{'kept' if kept else 'rejected'}'>{figures}</div>")
    sections.append(_not_written_section(counts.too_small, not_written))
    sections.append("</body></html>")
    return "\n".join(sections) + "\n"


def _figure(label: str, caption: str, jpeg: bytes) -> str:
    """One inline thumbnail with its label and a second caption line."""
    data = base64.b64encode(jpeg).decode("ascii")
    label = html.escape(label)
    return (
        f'<figure><img class="thumbnail" alt="{label}" src="data:image/jpeg;base64,{data}">'
        f"<figcaption>{label}<br>{html.escape(caption)}</figcaption></figure>"
    )


def _not_written_section(total: int, not_written: NotWritten | None) -> str:
    """Kept pictures not written: how many (from the manifest, so a resumed run's too), and the largest shown."""
    pictures = not_written.pictures() if not_written is not None else []
    if not total:
        text = "None: no kept picture was too small to write."
    else:
        text = (
            f"{total} picture{'s' * (total != 1)} kept by the judge {'was' if total == 1 else 'were'} not written: "
            "too small, the shorter side below the minimum side (<code>--min-side</code>, in the Space "
            "<i>Smallest picture side</i>); lower it to keep them. The manifest's <code>too_small</code> column "
            "names each one."
        )
    if pictures:
        text += " Shown: " + ("all of them." if len(pictures) == total else f"the {len(pictures)} largest.")
    figures = "".join(_figure(p.label, p.reason, p.jpeg) for p in pictures)
    return (
        f"<h2>Kept pictures not written</h2><p class='not-written'>{text}</p><div class='not-written'>{figures}</div>"
    )


KIND_ADVICE = (
    "the threshold or the filter (<code>--threshold</code>, <code>--filter</code>; in the Space <i>Filter "
    "threshold</i>, <i>Filter</i>)"
)


def _kinds_section(kinds: Kinds, judge: str = "") -> str:
    """*Pictures by kind*: kept, dropped and dropped-near-the-threshold pages for each kind of the judge's best
    candidate, and a warning for each kind it dropped more of near the threshold than it kept."""
    head = (
        "<tr><th>kind of the best candidate</th><th>kept pages</th><th>dropped pages</th>"
        f"<th>of which near the threshold (score ≥ {kinds.floor:.4g})</th></tr>"
    )
    body = "".join(
        f"<tr><th>{html.escape(kind)}</th><td>{c.kept}</td><td>{c.dropped}</td><td>{c.near}</td></tr>"
        for kind, c in kinds.rows()
    )
    measured = [kind for kind in kinds.counts if kind not in (NO_PICTURE, NOT_RECORDED)]
    grey = measured and not any(kind.startswith(("monochrome ", "colour ")) for kind in measured)
    text = (
        "Each page judged is counted once, by the kind of picture the judge's best candidate on it is (a kept "
        "page's best-scoring picture, a dropped page's best candidate; the manifest's <code>page_kind</code>"
        + ("; the sigma judge judges whole pages, so its candidate is the page" if judge == "sigma" else "")
        + "), "
        "measured on the judge's view of the page, so kept and dropped pages are measured alike. A halftone "
        "counts as continuous tone there (the view is too coarse to show its screen)"
        + ("; the judge's view is grey, so colour is not told." if grey else ".")
    )
    warnings = "".join(
        f"<p class='kind-warning'>⚠ {html.escape(warning)} — check {KIND_ADVICE}.</p>" for warning in kinds.warnings()
    )
    return f"<h2>Pictures by kind</h2><p>{text}</p><table class='kinds'>{head}{body}</table>{warnings}"
