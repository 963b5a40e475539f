"""Pictures that are the page: a plate, a drawing on its sheet, photographs on an album's mount.

Such a page has no text for the structure judge's texture measure to stand out from, and often not the ink the
measure expects: a photograph is continuous tone, a watercolour is colour washes, a pencil sheet is faint grey,
and a dark album card is darker than any print. What it has is a **sheet**: paper or card of one tone around the
picture, out to the page's edge. So the sheet's tone is read from the page's outer band, everything that
differs from it is content, and each connected piece of content, closed over its light parts, is a candidate
with its own box (one per mounted photograph: the card between them separates them).

A candidate is a picture when it is large (``ref_area`` of the page at score 0.5), fills a fair part of its
box (``fill``: a stroke across the page is no picture), carries tone (``spread``: a stamp, a mount window or a
grey patch is flat), lies off the page's edge (hands holding the page, fore-edges, page curl and the table
around a photographed book come in from it; mounted pictures have margins), is not darker than a dark sheet
(film's black: a negative target card in the scanner's frame) and is not text (regular lines,
:func:`pipeline.scale.has_lines`: a verso's bleed-through too). A calibration target is made of patches, steps
and bars: its pieces' edges run straight across them (``ruled``). Every measure is a fraction of the page or of
the candidate, so the decision does not depend on the page's declared size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from pipeline.judges.base import Box
from pipeline.scale import has_lines

SIDE = 320
"""The page is measured at this many pixels on its longer side (fractions of the page need no more)."""
DARK_SHEET = 64
"""A sheet darker than this (grey level) is a black card or a scanner's frame."""
MAX_DEPTH = 3
"""Grounds within grounds looked into: a scanner's bed, a case, its mat, the photograph."""
TWO_GROUNDS = 0.25
"""A band is read as two grounds only when the lesser covers at least this share of it (else it is marks on one)."""
EVEN = 0.6
"""Share of that band within the noise of its commonest tone: one even card, not a photograph's edge."""
EVEN_LINE = 0.9
"""Share of a row or column within ``contrast`` of its median tone: a band of a printed border, not the picture."""
BORDERED_DEPTH = 0.3
"""Borders round a picture filling its sheet are peeled at most this share of the page's side deep."""
BORDERED_FILL = 0.5
"""Share of what the borders enclose that differs from the innermost one: a painting or photograph is tone over
most of it; lettering on a target card, a few lines of type or a sketch leave most of it the border's tone."""


@dataclass(frozen=True)
class _Planes:
    """The measuring view's planes, shared by the grounds within grounds."""

    view: np.ndarray
    grey: np.ndarray
    dark: np.ndarray
    """The darkest pixel of each cell, grey."""
    ab: np.ndarray | None
    """Lab's chroma planes, for colour views."""


@dataclass(frozen=True)
class SheetRegion:
    """A piece of content on the sheet, with the evidence its score is built from."""

    box: Box
    area: float
    """Box area as a fraction of the page."""
    fill: float
    """Share of its box that differs from the sheet: a stroke or a few marks across a large box are no picture."""
    spread: float
    """Standard deviation of its tones (grey levels): a stamp, a card window or a patch of colour is flat."""
    ruled: float
    """Share of its tone edges on straight runs across it (step wedges, bars, colour patches, rulers): a
    calibration target is made of them, a picture is not."""
    text: bool
    """Its content shows regular lines of type."""
    negative: bool
    """Mostly darker than a dark sheet: film's black (a microfilm target card in the scanner's frame), not a
    picture, which is lighter than the black card it is mounted on."""
    score: float


@dataclass(frozen=True)
class SheetFinder:
    """Find pictures on a sheet (see the module's docstring); ``__call__`` returns candidates with scores."""

    ref_area: float = 0.06
    """A picture alone on a sheet is at least a postcard on a folio page; smaller pieces are stamps, notes."""
    contrast: float = 10.0
    """Content differs from the sheet by at least this (grey levels, or Lab distance), or by 4x the sheet's noise."""
    band: float = 0.03
    """Width of the page's outer band the sheet is read from (fraction of each side)."""
    close: float = 0.03
    """Content closer than this (fraction of the longer side) is one piece: a drawing's strokes and its light
    parts, a photograph's sky."""
    full: float = 0.5
    """A piece touching the page's edge is a picture only when its box covers this share of the page (a plate
    scanned to its edges): smaller ones are hands, fore-edges, page curl or the table around a photographed book."""
    fill_ref: float = 0.12
    spread_ref: float = 8.0
    """Tones vary at least this much (grey levels) in a picture: a wash, a photograph, strokes on paper."""
    ruled_ref: float = 0.15

    def __call__(self, view: np.ndarray, bordered: bool = True) -> list[SheetRegion]:
        """Candidates on ``view``'s sheet; with ``bordered``, where no piece on it is a picture, also the
        picture that fills the sheet inside printed borders (:meth:`_bordered`): a caller that found a
        picture already (printed pictures) asks for none, whose box would replace its tighter one."""
        h, w = view.shape[:2]
        f = SIDE / max(h, w)
        if f < 1:
            small = cv2.resize(view, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)
        else:
            small = view
        # line work would vanish in an area reduction: the darkest pixel of each cell keeps a pencil stroke
        k = max(1, round(1 / f))
        darkest = cv2.resize(
            cv2.erode(view, np.ones((k, k), np.uint8)), small.shape[1::-1], interpolation=cv2.INTER_NEAREST
        )
        lab = cv2.cvtColor(small, cv2.COLOR_RGB2LAB).astype(np.float32) if small.ndim == 3 else None
        grey = (small if small.ndim == 2 else cv2.cvtColor(small, cv2.COLOR_RGB2GRAY)).astype(np.float32)
        dark = (darkest if darkest.ndim == 2 else cv2.cvtColor(darkest, cv2.COLOR_RGB2GRAY)).astype(np.float32)
        planes = _Planes(view, grey, dark, lab[..., 1:] if lab is not None else None)
        sh, sw = grey.shape
        ring = self._ring(sh, sw)
        if ring.all():
            return []
        found = self._find(planes, (0, 0, sw, sh), ring, 0)
        if bordered and not any(r.score >= 0.5 for r in found):
            found.extend(self._bordered(planes))
        return found

    def _bordered(self, p: _Planes) -> list[SheetRegion]:
        """A picture that fills its sheet inside printed borders (a plate in a coloured frame, a mat, a rule):
        the bands of even tone round it, peeled from the page's edges inward, are its ground. Their tones differ
        from one another (paper, border, mat), so no one sheet tone is read from the page's outer band."""
        grey = p.grey
        sh, sw = grey.shape
        bounds = [0, sh, 0, sw]  # top, bottom, left, right of what is not yet peeled
        deepest = (round(BORDERED_DEPTH * sh), round(BORDERED_DEPTH * sw))
        peeled = True
        while peeled:
            peeled = False
            for side in range(4):
                while True:
                    t, b, left, r = bounds
                    if b - t < 8 or r - left < 8:
                        return []
                    line = self._edge_line(p, bounds, side)
                    depth = (t, sh - b, left, sw - r)[side]
                    if depth >= deepest[side // 2] or not self._even(line):
                        break
                    bounds[side] += 1 if side in (0, 2) else -1
                    peeled = True
        t, b, left, r = bounds
        if not (t and left and b < sh and r < sw):
            return []  # not framed on every side: no border (a plate to its edges is found as a piece)
        area = (b - t) * (r - left) / float(sh * sw)
        inner = np.concatenate([self._edge_line(p, [t - 1, b + 1, left - 1, r + 1], s)[0] for s in range(4)])
        tone = float(np.median(inner))
        box_grey = grey[t:b, left:r]
        content = np.abs(box_grey - tone) > self.contrast
        fill = float(np.count_nonzero(content)) / content.size
        if fill < BORDERED_FILL:
            return []  # marks on the innermost band (lettering, a few lines of type, a sketch): not one picture
        spread = float(box_grey.std())
        ruled = _ruled_pieces(box_grey, content)
        box = (left / sw, t / sh, r / sw, b / sh)
        text = self._text(p.view, box)
        score = self._score(area, fill, spread, ruled, text)
        return [SheetRegion(box, area, fill, spread, ruled, text, False, score)]

    @staticmethod
    def _edge_line(p: _Planes, bounds: list[int], side: int) -> list[np.ndarray]:
        """The grey (and chroma) of the outermost row or column on ``side`` (top, bottom, left, right) within
        ``bounds``."""
        t, b, left, r = bounds
        index = (np.s_[t, left:r], np.s_[b - 1, left:r], np.s_[t:b, left], np.s_[t:b, r - 1])[side]
        return [p.grey[index]] + ([p.ab[index]] if p.ab is not None else [])

    def _even(self, line: list[np.ndarray]) -> bool:
        """Whether a row or column is one tone (a band of paper, border or mat), allowing a few pixels of
        the next band where the sheet is turned."""
        grey = line[0]
        near = np.abs(grey - np.median(grey)) <= self.contrast
        if len(line) > 1:
            near &= np.linalg.norm(line[1] - np.median(line[1], axis=0), axis=1) <= self.contrast
        return np.count_nonzero(near) >= EVEN_LINE * grey.size

    def _find(
        self,
        p: _Planes,
        rect: tuple[int, int, int, int],
        ring: np.ndarray,
        depth: int,
        within: np.ndarray | None = None,
    ) -> list[SheetRegion]:
        """The pieces of content inside ``rect`` (x0, y0, x1, y1 of the measuring view) on the ground read from
        ``ring`` (a mask over ``rect``): the page's sheet at depth 0, a card or mat within it below, where only
        what lies ``within`` it (a mask over ``rect``) is its content."""
        x0, y0, x1, y1 = rect
        sh, sw = p.grey.shape
        grey, dark = p.grey[y0:y1, x0:x1], p.dark[y0:y1, x0:x1]
        rh, rw = grey.shape
        tone, noise, near = _ground(grey[ring])
        level = max(self.contrast, 4 * noise)
        differs = np.abs(grey - tone) > level
        differs |= np.abs(dark - tone) > 2 * level  # strokes too thin to survive the area reduction
        sheet = None
        if p.ab is not None:
            ab = p.ab[y0:y1, x0:x1]
            sheet = np.median(ab[ring][near], axis=0)
            differs |= np.linalg.norm(ab - sheet, axis=2) > level
        if within is not None:
            differs &= within
        differs = differs.astype(np.uint8)
        # specks of noise and dust go; a piece's light parts and strokes join it
        differs = cv2.morphologyEx(differs, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
        c = max(3, round(self.close * max(sh, sw)) | 1)
        joined = cv2.morphologyEx(differs, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (c, c)))
        n, labels, stats, _ = cv2.connectedComponentsWithStats(joined, connectivity=8)
        found = []
        for i in range(1, n):
            x, y, cw, ch, _ = stats[i]
            area = cw * ch / float(sh * sw)
            if area < self.ref_area / 4:
                continue
            mask = labels[y : y + ch, x : x + cw] == i
            content = mask & (differs[y : y + ch, x : x + cw] > 0)
            piece = (x0 + x, y0 + y, x0 + x + cw, y0 + y + ch)
            inner = self._inside(p, piece, mask, (tone, sheet, level)) if depth < MAX_DEPTH else None
            if inner is not None:
                found.extend(self._find(p, piece, inner[0], depth + 1, inner[1]))
                continue
            tones = grey[y : y + ch, x : x + cw][mask]
            spread = float(tones.std()) if tones.size else 0.0
            box = (piece[0] / sw, piece[1] / sh, piece[2] / sw, piece[3] / sh)
            text = self._text(p.view, box)
            fill = float(np.count_nonzero(content)) / (cw * ch)
            ruled = _ruled_pieces(grey[y : y + ch, x : x + cw], content)
            negative = tone < DARK_SHEET and np.count_nonzero(tones < tone - level) > 0.5 * tones.size
            edge = x == 0 or y == 0 or x + cw >= rw or y + ch >= rh
            large = cw * ch >= self.full * rw * rh
            score = 0.0 if (edge and not large) or negative else self._score(area, fill, spread, ruled, text)
            found.append(SheetRegion(box, area, fill, spread, ruled, text, negative, score))
        return found

    def _inside(
        self,
        p: _Planes,
        piece: tuple[int, int, int, int],
        mask: np.ndarray,
        outer: tuple[float, np.ndarray | None, float],
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Where ``piece`` is a ground of its own (a card on the scanner's bed, a mat in its case, a tinted sheet
        on a lighter one), its outer band and its inside to look for pictures in; else ``None``. Such a piece's
        outer band is one even tone, apart from the ground it lies on (``outer``: that ground's tone, chroma and
        the level content differs from it by), where a drawing's band is mostly that ground showing between its
        strokes. It is then no picture itself: what it holds may be."""
        x0, y0, x1, y1 = piece
        k = 2 * max(1, round(self.band * min(x1 - x0, y1 - y0))) + 1
        inside, rim = (
            cv2.erode(mask.astype(np.uint8), np.ones((s, s), np.uint8), borderType=cv2.BORDER_CONSTANT, borderValue=0)
            > 0
            for s in (k, 3)
        )
        ring = rim & ~inside  # its outline's pixel left out: the measuring view blends it with the ground
        if not inside.any() or not ring.any():
            return None
        tone, noise, near = _ground(p.grey[y0:y1, x0:x1][ring])
        if noise > self.contrast or np.count_nonzero(near) < EVEN * near.size:
            return None
        level = outer[2]
        apart = abs(tone - outer[0]) > level
        if p.ab is not None and outer[1] is not None:
            chroma = np.median(p.ab[y0:y1, x0:x1][ring][near], axis=0)
            apart = apart or float(np.linalg.norm(chroma - outer[1])) > level
        return (ring, inside) if apart else None

    def is_sheet(self, gray: np.ndarray) -> bool:
        """Whether ``gray``'s outer band is one even tone, as paper or card is (a photograph's edges are not):
        a page found inside a scanner's black frame is then read on its own sheet, not on the frame."""
        f = SIDE / max(gray.shape)
        small = gray[:: max(1, int(1 / f)), :: max(1, int(1 / f))] if f < 1 else gray
        ring = self._ring(*small.shape)
        return not ring.all() and _tone(small[ring].astype(np.float32))[1] <= self.contrast / 2

    def _ring(self, sh: int, sw: int) -> np.ndarray:
        """The page's outer band (``band`` of each side) as a mask."""
        bh, bw = max(1, round(self.band * sh)), max(1, round(self.band * sw))
        ring = np.ones((sh, sw), bool)
        ring[bh : sh - bh, bw : sw - bw] = False
        return ring

    @staticmethod
    def _text(view: np.ndarray, box: Box) -> bool:
        h, w = view.shape[:2]
        crop = view[round(box[1] * h) : round(box[3] * h), round(box[0] * w) : round(box[2] * w)]
        # blocks of ~90 view rows: lines up to ~10 mm apart are seen several times in each; and blocks twice as
        # tall, for a few short paragraphs whose lines fall in fewer cells
        rows = crop.shape[0]
        return crop.size > 0 and any(has_lines(crop, blocks=max(1, min(8, rows // b))) for b in (90, 180))

    def _score(self, area: float, fill: float, spread: float, ruled: float, text: bool) -> float:
        """Log-odds from size (0 at ``ref_area``), flatness and ruling, squashed to 0..1; text is no picture at all."""
        if text:
            return 0.0
        ratio = math.log(max(area, 1e-9) / self.ref_area)
        z = min(1.5, 1.5 * ratio) if ratio > 0 else 4.0 * ratio
        z -= 4.0 * max(0.0, math.log(self.spread_ref / max(spread, 1e-3)))
        z -= 6.0 * max(0.0, math.log(self.fill_ref / max(fill, 1e-3)))
        z -= 15.0 * max(0.0, ruled - self.ruled_ref)
        return 1.0 / (1.0 + math.exp(-z))


def _ground(band: np.ndarray) -> tuple[float, float, np.ndarray]:
    """The ground's tone, noise and which of ``band``'s pixels are of it. A band that crosses two grounds (the
    scanner's bed and the card on it, a sheet and its tinted mount, a scanner's black edge) is split in two
    (Otsu) and read as the one it shows most, not as one very noisy tone that nothing on the page would differ
    from; one ground is read as a whole, as :func:`_tone` does."""
    v = band.ravel()
    cut, _ = cv2.threshold(np.clip(v, 0, 255).astype(np.uint8)[None], 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    low = v <= cut
    most = low if 2 * np.count_nonzero(low) >= v.size else ~low
    if np.count_nonzero(~most) >= TWO_GROUNDS * v.size:
        tone, other = float(np.median(v[most])), float(np.median(v[~most]))
        sigma = 1.4826 * float(np.median(np.abs(v[most] - tone)))
        if abs(tone - other) > 4 * max(sigma, 2.5):
            return tone, float(np.percentile(np.abs(v[most] - tone), 90)), most
    tone, noise = _tone(v)
    return tone, noise, np.ones(v.shape, bool)


def _tone(band: np.ndarray) -> tuple[float, float]:
    """The sheet's tone (median of its band) and noise (90th percentile of the band's distance from it)."""
    tone = float(np.median(band))
    return tone, float(np.percentile(np.abs(band - tone), 90))


def _ruled_pieces(grey: np.ndarray, content: np.ndarray, most: int = 12) -> float:
    """:func:`_ruled` of each of the ``most`` largest connected pieces of ``content`` (the candidate's ink before
    it was closed into one), weighted by their boxes' areas: a target is many patches, bars and a wedge whose
    own edges are straight, even when a stroke or a ruler joins them into one candidate."""
    n, labels, stats, _ = cv2.connectedComponentsWithStats(content.astype(np.uint8), connectivity=8)
    if n < 2:
        return 0.0
    order = 1 + np.argsort(-stats[1:, cv2.CC_STAT_AREA])[:most]
    total = ruled = 0.0
    for i in order:
        x, y, w, h, area = stats[i]
        if area < 20:
            continue
        weight = float(w * h)
        total += weight
        ruled += weight * _ruled(grey[y : y + h, x : x + w], labels[y : y + h, x : x + w] == i)
    return ruled / total if total else 0.0


def _ruled(grey: np.ndarray, inside: np.ndarray) -> float:
    """Share of the tone edges inside ``inside`` (a bool mask over ``grey``, its rim left out) that lie on straight
    horizontal or vertical runs across most of the piece: the steps of a grey wedge, the sides of colour patches
    and bars. A photograph's or a drawing's edges bend."""
    gx = cv2.Sobel(grey, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(grey, cv2.CV_32F, 0, 1, ksize=3)
    inner = cv2.erode(inside.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    strong = (np.abs(gx) + np.abs(gy) > 40) & inner
    total = int(np.count_nonzero(strong))
    if total < 20:
        return 0.0
    h, w = grey.shape
    vertical = (strong & (np.abs(gx) > 2 * np.abs(gy))).astype(np.uint8)
    horizontal = (strong & (np.abs(gy) > 2 * np.abs(gx))).astype(np.uint8)
    runs = cv2.morphologyEx(vertical, cv2.MORPH_OPEN, np.ones((max(3, int(0.6 * h)), 1), np.uint8))
    runs |= cv2.morphologyEx(horizontal, cv2.MORPH_OPEN, np.ones((1, max(3, int(0.6 * w))), np.uint8))
    return float(np.count_nonzero(runs)) / total
