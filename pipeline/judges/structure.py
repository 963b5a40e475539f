"""Structure judge: find pictures by the *layout of ink*, not by global brightness.

Principle (from how historical print is made):

* **Text** is small marks set in lines. Along any horizontal span of a few millimetres the ink comes in
  bands (the lines) separated by near-white rows (the leading), so *some* row in every window a line
  pitch tall is (nearly) empty.
* **Pictures** (engravings, woodcuts, line cartoons, halftones) are 2-D texture: hatching, stippling or
  screen dots put ink into *every* row of such a window, over a large area.
* **Display type** (headlines in capitals 5-25 mm tall) can be denser than that window is tall, but it too
  stands in lines: bands of similar height separated by leading that is empty along a span of 20 mm. Such
  bands are lines of type, never picture texture, whatever their size.
* **Line drawings without texture** (outlines, diagrams, card symbols) have blank insides, so no window of
  them is inked in every row; they are networks of strokes far larger than any glyph, crossed more than once
  by a row or column, in an area mostly blank at a 3 mm grain (text inks nearly every such cell).
* **Rules, frames and scanner edges** are long straight runs and are removed before measuring; an area
  of ink (a photo at a screen finer than the view resolves is flat grey) keeps its runs: rules are thin. A
  page on a black scanner bed or microfilm frame is cropped out of its frame and judged alone;
  **microfilm targets** are negative (mostly dark) cards, refused outright, or big glyphs, solid blocks
  and uniform grey patches, which have little fine variety and much solid black.

So the judge measures, at every pixel, the *minimum over a window one text line pitch tall of the ink
density along a short horizontal span* ("row-minimum density"); it is ~0 in text and high in pictures.
Where it is high (and no row of the window is much lighter than the darkest) lie picture *cores*. Cores
are opened (thin strips go), closed into regions, and each region is scored from its own evidence:
size, texture fill, solid-black share, aspect and edge variety. The crop then grows from the core along
the picture's connected strokes (a line drawing's outline; rules excluded, which are layout and run on
past the picture), within a bounded reach, and stops at the white gutter around it; pieces of one picture
not separated by a white gutter become one crop. Line drawings are regions of their own (sized against a
larger reference, ``line_area``) where they meet no textured picture. All sizes are physical (millimetres
at the view's nominal dpi), chosen from print conventions, so the same numbers serve books and newspapers.

Score: ``sigmoid(z)`` of a log-linear sum of those terms, written so that a region exactly at the
reference values (``min_area``, ``fill_ref``, ``solid_ref``, ``max_aspect``, ``variety_ref``) scores 0.5;
the page score is its best region's. One threshold (0.5) therefore means "a picture at least this big
and this textured" for any page. On ``../shared/data`` (bench/eval_purity.py) illustrations score
0.62..0.99, text pages and targets at most 0.44.

Each stage is a module beside this one, and :meth:`StructureJudge._page_regions` runs them in order: :mod:`.frame`
(the scanner frame, the dark share), :mod:`.ink`, :mod:`.typeset` (lines of type), :mod:`.rules`, :mod:`.texture`
(cores and core regions), :mod:`.candidates` (crops grown along strokes, merged), :mod:`.line_art`; then
:mod:`.hands` and the sheet (:mod:`.sheet`) in :meth:`StructureJudge.regions`. :mod:`.score` scores; the
page-sized arrays they share are one :class:`~.buffers.PageBuffers` per page.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import cv2
import numpy as np

from pipeline.judges.base import Box, Verdict
from pipeline.judges.buffers import PageBuffers, release
from pipeline.judges.candidates import Region, candidates, merged, regions_of
from pipeline.judges.frame import bed_runs, border_runs, dark_rows_cols, grey_range, onto_view
from pipeline.judges.hands import off_the_edge
from pipeline.judges.ink import ink_map, page_ink
from pipeline.judges.line_art import stroke_cells, with_line_art
from pipeline.judges.measure import COARSE, MM_PER_INCH, column_means, overlap, px
from pipeline.judges.rules import without_rules
from pipeline.judges.sheet import SheetFinder
from pipeline.judges.staves import staves, with_music
from pipeline.judges.texture import core_regions, texture_cores
from pipeline.judges.typeset import lines_of_type
from pipeline.scale import has_lines

__all__ = ["Region", "StructureJudge", "ink_map"]


@dataclass
class StructureJudge:
    """Keep pages holding a picture region; return its tight box(es). Pure function of the view.

    Parameters (physical sizes assume the view's nominal dpi ``72 * zoom``; defaults from print):

    * ``threshold`` -- on ``score`` in 0..1; 0.5 = a region exactly at the reference values below.
    * ``min_area`` -- smallest picture worth keeping, as a fraction of the page (0.02: ~9x9 cm on a
      newspaper, ~4x4 cm on an octavo page; smaller ones are vignettes, initials, ad cuts). Regions
      below it are never returned and score 0.
    * ``span_mm`` / ``pitch_mm`` -- horizontal span (6 mm, a few letters) and vertical window of the
      row-minimum density; the window exceeds any body-text line pitch (6pt agate ~2.3 mm, 12pt book
      ~5.5 mm), so it always holds a gap between lines: 7 mm.
    * ``hatch_mm`` -- vertical blur (1 mm) that merges hatching and screens (pitch < 1 mm) but not lines
      of text (pitch >= 2.2 mm).
    * ``core_density`` (0.15) / ``row_ratio`` (0.5) -- the lightest row of a core pixel.s window must hold
      >= 15 % ink and >= half the darkest row's ink: leading between lines holds ~0-5 %.
    * ``fill_ref`` (0.3) -- share of a region's box that is core at score 0.5 (pictures 0.3-0.8, stray
      cores in dense text 0.1-0.25).
    * ``solid_ref`` (0.4) -- share of the inked area that is solid black beyond which a region looks
      like a card, bar or masthead rather than a picture (pictures measure 0.05-0.3).
    * ``variety_ref`` (0.45) -- share of the region near a sharp ink edge below which it looks like a
      uniform patch (pictures measure 0.55-0.99; grey step wedges ~0.05, and a target's resolution gratings,
      which the view renders as flat grey, ~0.25-0.3): midway between.
    * ``max_aspect`` (4) -- longer/shorter side beyond which a region looks like a headline or rule.
    * ``line_mm`` (15) -- straight runs at least this long are rules/frames, removed before measuring
      texture unless they lie in an area of ink (see ``rule_mm``), and always before tracing strokes
      (for the strokes a crop grows along, traced again at the stroke level: a hairline rule printed
      or resampled near the ink threshold breaks into short runs there that would join its neighbours).
    * ``line_span_mm`` (20) / ``type_mm`` (25) / ``leading_ink`` (0.01) -- lines of type: along a span of
      20 mm (under half the narrowest newspaper column, ~45 mm, so some span lies within one column), bands
      3.5..25 mm tall (14..72 pt display type) next to a band of similar height across leading with under
      1 % ink (a speck, not a stroke). Their cores are dropped before regions are formed.
    * ``rule_mm`` (2.5) -- ink thicker than this everywhere and at least ``line_mm`` across both ways is an
      area (a photo's or dark passage's tone), and its straight runs are no rules: printed rules are at most
      ~2 mm thick; dark edge strips are thick but narrower than ``line_mm``.
    * ``min_side_mm`` (15) -- a crop narrower than this is not a picture.
    * ``merge_mm`` (8) -- cores closer than this are one region (a picture's light parts between).
    * ``stroke_gap_mm`` (1), ``reach`` (1.0), ``grow_mm`` (3) -- crops grow along stroke networks
      touching a core, by at most ``reach`` x the core's size per side, then by up to ``grow_mm`` of
      adjacent ink, stopping at the first empty row/column (the gutter).
    * ``merge_score`` (0.25) -- cores scoring at least this x ``threshold`` are merged into one crop
      when their crops overlap or lie < 2 x ``merge_mm`` apart with no white gutter between; weaker ones
      (headlines, ad cuts) never glue onto a picture.
    * ``ink_lo`` / ``ink_hi`` -- local contrast mapped to ink 0..1 (paper grain and bleed-through are 0).
    * ``line_art_mm`` (10) / ``glyph_mm`` (6) / ``blank_ink`` (0.2) / ``line_area`` (0.08) -- line drawings
      without texture (outlines, diagrams; see :mod:`.line_art`): stroke networks on ~3 mm cells at least 10 mm
      both ways and mostly blank, whose pieces connected at full resolution are larger than a glyph of body
      type (6 mm: ascender to descender of 12 pt type is ~4.5 mm), ink at most 20 % of their box (hairline
      outlines ~3-15 %, words run together on a soft newspaper scan ~30-60 %) and are more than one stroke.
      Line art carries less evidence than texture, so its size reference is larger: 0.08, between the 7-8 %
      of the drawings labelled minor on ``../shared/data`` and the 10 % that makes an illustration there.
    * ``margin_mm`` (1.5) -- paper kept around each returned box (clipped to the page). The view has
      0.35 mm pixels and faint outer hairlines and frames fall below the ink ramp, so the detected box sits
      inside the printed picture; 1.5 mm is half the narrowest gutter set between a picture and text
      (~3 mm), so the margin stays clear of the text.
    """

    threshold: float = 0.5
    min_area: float = 0.02
    zoom: float = 1.0
    colorspace: Literal["gray", "rgb"] = "gray"
    exact_within: float = 0.0  # defined on any faithful view: a scan's decoded view is judged as it is
    real_size: bool = True
    name: str = "structure"
    span_mm: float = 6.0
    pitch_mm: float = 7.0
    core_density: float = 0.15
    fill_ref: float = 0.3
    solid_ref: float = 0.4
    min_side_mm: float = 15.0
    line_mm: float = 15.0
    rule_mm: float = 2.5
    hatch_mm: float = 1.0
    merge_mm: float = 8.0
    grow_mm: float = 3.0
    stroke_gap_mm: float = 1.0
    reach: float = 1.0
    merge_score: float = 0.25
    variety_ref: float = 0.45
    row_ratio: float = 0.5
    ink_lo: float = 0.25
    ink_hi: float = 0.75
    max_aspect: float = 4.0
    margin_mm: float = 1.5
    line_art_mm: float = 10.0
    glyph_mm: float = 6.0
    blank_ink: float = 0.2
    line_area: float = 0.08
    line_span_mm: float = 20.0
    type_mm: float = 25.0
    leading_ink: float = 0.01
    held: float = 0.3
    sheet: SheetFinder = field(default_factory=SheetFinder)

    @property
    def dpi(self) -> float:
        return 72.0 * self.zoom

    def regions(self, view: np.ndarray) -> tuple[list[Region], float]:
        """All candidate regions with their scores (boxes as fractions of ``view``), and the page's dark
        fraction (for diagnosis): printed pictures (:meth:`printed`), and on a page without lines of text the
        pictures on its sheet (:mod:`.sheet`), which replace the printed regions they hold."""
        found, dark, frame = self.printed(view)
        top, bottom, left, right = frame
        gray = cv2.cvtColor(view, cv2.COLOR_RGB2GRAY) if view.ndim == 3 else view
        if any(r.score >= self.threshold for r in found):
            found = off_the_edge(found, gray, self.held)
        # text is looked for on the page inside its scanner frame, whose black would count as untexted ink
        h, w = gray.shape
        inside = gray[top : h - bottom, left : w - right]
        if not has_lines(inside):
            # a picture on its sheet is one crop: printed regions it meets (a photograph's texture, part of a
            # plate) give way to it, and it keeps the best evidence and the extent of either (a studio portrait's
            # pale backdrop is no piece of the sheet, the sitter is: the printed region reaches further). A page
            # in a scanner's frame is read on its own paper (the frame would make the whole page one piece on a
            # black "mount"); a photograph on a dark card, whose edges are no even sheet, on the card.
            frame = (top, bottom, left, right) if any(frame) and self.sheet.is_sheet(inside) else (0, 0, 0, 0)
            top, bottom, left, right = frame
            share = (h - top - bottom) * (w - left - right) / (h * w)
            sheet = [
                Region(onto_view(s.box, frame, h, w), s.area * share, 0.0, s.score)
                for s in self.sheet(
                    view[top : h - bottom, left : w - right], bordered=not any(r.score >= self.threshold for r in found)
                )
            ]
            pictures = [p for p in sheet if p.score >= self.threshold]
            held = [r for r in found if any(overlap(r.box, p.box) for p in pictures)]
            sheet = [_holding(p, [r for r in held if overlap(r.box, p.box)]) if p in pictures else p for p in sheet]
            found = [r for r in found if r not in held] + sheet
        return found, dark

    def printed(self, view: np.ndarray) -> tuple[list[Region], float, tuple[int, int, int, int]]:
        """Printed pictures: regions found by the layout of ink (the module's docstring), the page's dark
        fraction, and the depth of its scanner frame (top, bottom, left, right; 0 where there is none).

        A page scanned on a black scanner bed or microfilm frame is judged inside its frame: the frame is
        runs of mostly-dark rows and columns from the view's edges, and the page within is cropped and judged
        alone, so the frame's black counts neither as the page's darkness (a negative card) nor in its
        sizes, grey range or paper level; the boxes are mapped back onto the view."""
        gray = cv2.cvtColor(view, cv2.COLOR_RGB2GRAY) if view.ndim == 3 else view
        h, w = gray.shape
        unframed = (0, 0, 0, 0)
        if h < 8 or w < 8:
            return [], 0.0, unframed
        lo, hi = grey_range(gray)
        if hi - lo < 32:  # blank (or uniformly dark) page: no ink structure at all
            return [], 0.0, unframed
        buffers = PageBuffers(h, w)  # one set per page judged; the thread's memory is reused from page to page
        rows, cols, dark = dark_rows_cols(gray, buffers.dark, (lo, hi))
        frame = top, bottom, left, right = border_runs(rows, cols, h, w)
        if not any(frame):
            bed = bed_runs(gray)  # a tinted page on a lighter bed: the bed is its frame
            if (h - bed[0] - bed[1]) * (w - bed[2] - bed[3]) >= h * w / 4:
                frame = top, bottom, left, right = bed
        ph, pw = h - top - bottom, w - left - right
        if not top + bottom + left + right:
            return *self._page_regions(gray, rows, cols, dark, buffers), unframed
        if ph < 8 or pw < 8 or ph * pw < h * w / 4:  # dark nearly to the middle: a card, not a framed page
            return [], dark, unframed
        page = gray[top : h - bottom, left : w - right]  # a view: nothing here needs it contiguous
        lo, hi = grey_range(page)
        if hi - lo < 32:
            return [], 0.0, frame
        buffers = PageBuffers(ph, pw)
        found, dark = self._page_regions(page, *dark_rows_cols(page, buffers.dark, (lo, hi)), buffers)
        return [replace(r, box=onto_view(r.box, frame, h, w)) for r in found], dark, frame

    def _page_regions(
        self, gray: np.ndarray, rows: np.ndarray, cols: np.ndarray, dark: float, buffers: PageBuffers
    ) -> tuple[list[Region], float]:
        """:meth:`regions` of a page without a frame, given its dark row/column counts and dark fraction, and its
        work arrays (``buffers``, of ``gray``'s shape).

        The stages below, in order: ink map; lines of type; rules taken out (areas of ink keep theirs for the
        texture measure); texture cores; core regions on the coarse grid; a candidate crop per region, grown
        along its strokes; candidates of one picture merged; regions, then line art."""
        if dark > 0.5:  # negative / black card (microfilm targets), not a printed page
            return [], dark
        h, w = gray.shape
        ink = page_ink(gray, rows, cols, self, buffers)
        planes = buffers.planes()  # three coarse planes in the ink map's (now free) paper plane
        # lines of type are found with the rules still in: leading is empty of any ink, while a drawing's
        # straight hatching (taken for rules below) fills the rows between its strokes; staves too (their
        # lines are rules)
        coarse = column_means(ink, COARSE, planes[0])
        typeset = lines_of_type(coarse, self.dpi / COARSE, self)
        music = staves(coarse, COARSE, self)
        inked, raw, inkh = without_rules(ink, planes[0], self, buffers)
        # line art is looked for on cells of ~3 mm (a line of body type, 1.5-2.5 mm, inks every cell it crosses)
        cell_cols = max(1, round(px(3.0, self.dpi) / COARSE))
        sketch = stroke_cells(inkh, COARSE, cell_cols * COARSE, cell_cols)
        core = texture_cores(inkh, typeset, planes, self, buffers)
        core, labels, stats = core_regions(core, h, self)
        found = candidates(ink, inked, raw, core, labels, stats, self, buffers)
        regions = regions_of(merged(found, inked, self), h, w, self)
        regions = with_line_art(regions, sketch, cell_cols * COARSE, raw.view(np.uint8), inked, self)
        return with_music(regions, music, h, w, self), dark

    def release(self) -> None:
        """Free the work arrays kept between pages in this thread (see :mod:`.buffers`)."""
        release()

    def __call__(self, view: np.ndarray) -> Verdict:
        regions, _ = self.regions(view)
        score = max((r.score for r in regions), default=0.0)
        boxes = tuple(
            self._with_margin(r.box, view.shape[1], view.shape[0])
            for r in sorted(regions, key=lambda r: r.box[1])
            if r.score >= self.threshold
        )
        top = max(regions, key=lambda r: r.score, default=None)  # the best candidate, kept or not
        best = self._with_margin(top.box, view.shape[1], view.shape[0]) if top is not None and top.score > 0 else None
        return Verdict(keep=score >= self.threshold, score=score, boxes=boxes, best=best)

    def _with_margin(self, box: Box, width: int, height: int) -> Box:
        dx, dy = (self.margin_mm * self.dpi / MM_PER_INCH / side for side in (width, height))
        x0, y0, x1, y1 = box
        return (max(0.0, x0 - dx), max(0.0, y0 - dy), min(1.0, x1 + dx), min(1.0, y1 + dy))


def _holding(piece: Region, held: list[Region]) -> Region:
    """``piece`` (a picture on its sheet) grown to hold the printed regions ``held`` that give way to it, with the
    best score of them all: the crop is never less than what either found."""
    if not held:
        return piece
    boxes = [piece.box] + [r.box for r in held]
    box = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
    area = (box[2] - box[0]) * (box[3] - box[1])
    return replace(piece, box=box, area=max(piece.area, area), score=max([piece.score] + [r.score for r in held]))
