"""The words printed in and around a picture on a page without a text layer, read by Tesseract.

Book scans and many archive PDFs carry no OCR layer, yet their plates' legends are on the page, in the pixels:
without them ``{words}`` is empty and a caption says nothing of what the picture shows. Where the text layer
has no words in the band around a picture (:data:`pipeline.words.MARGIN_MM` above and below it, and the
picture itself: a cartoon's labels, a plate's legend inside its frame), that band is rendered at
:data:`OCR_DPI` from the page (from its scan; a coarser scan is interpolated up, as Tesseract reads small type
better so and misreads hatching less) and read by the process's Tesseract engine (:mod:`pipeline.tesseract`).
Words Tesseract is unsure of, and boxes too narrow for their letters (hatching read as ``WW``), are dropped, the
rest cleaned like the text layer's (:func:`pipeline.words.clean_words`).

Only the words a caption uses are read: band after band, each a part at a time (the strip above its picture, the
picture, the strip below), until the caption's :data:`pipeline.words.MAX_WORDS` are found; a page without picture
boxes from its first lines down, a strip at a time, each rendered alone. The default
packs are narrowed once per document to those that read its first lines (:func:`document_packs`: five packs read a
band about four times slower than one); a page those packs read badly (another script) is read again with all five,
and narrowed on its own first words (:func:`_narrowed`). Without Tesseract's packs the run goes on without OCR;
without some of the default set it reads with the others (a set named with ``--ocr-lang`` is read whole or not at
all): :func:`ocr_note` says so once, in the main process; workers find the same and read with what is there, or
nothing.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pipeline.words
from pipeline import tesseract
from pipeline.judges import Box
from pipeline.names import one_line
from pipeline.words import MARGIN_MM, clean_words

if TYPE_CHECKING:
    import numpy as np
    import pymupdf

    from pipeline.captions import CaptionTemplate
    from pipeline.scan import Scan

DEFAULT_LANG = "eng+rus+fra+deu+frk"
"""Tesseract's language packs the archive's scripts need: English, Russian (Cyrillic), French, German in Antiqua
and in Fraktur (``frk``: German books before ~1940 are mostly set in it)."""
OCR_DPI = 300
"""Tesseract's best resolution for body and legend type (8-12 pt: x-heights of 20-30 px)."""
MIN_CONFIDENCE = 60
"""Words Tesseract gives less confidence (0-100) are dropped: what it reads into hatching scores lower."""
MIN_ASPECT = 0.25
"""A word's box is at least this wide per letter for its height (type's letters are 0.3-1 as wide as the line
is tall): strokes of hatching read as ``WW`` or ``NUN`` are tall and thin, and Tesseract can be sure of them."""
GAP_MM = 25.0
"""White set above and below each part of a band (:func:`_parts`) before Tesseract reads it: as much as a part had
around it when the band was read as one (the margin's strip and 10 mm of white either side); with 5-10 mm a
legend at the foot of its picture's box lost letters (``palac``) or gained noise (``E``, ``S``)."""
MAX_PIXELS = 16_000_000
"""Largest band Tesseract is given: a whole newspaper page at 300 dpi is ~30 MP, and minutes of work."""
STRIP_PIXELS = 400_000
"""A whole page is read top down in strips of about this many pixels until a caption's :data:`pipeline.words.MAX_WORDS`
are found: a strip of dense type (~60 words) takes Tesseract a third of a second, a whole newspaper page minutes;
the engine stays loaded, so a strip more costs its pixels only."""
MIN_STRIP_ROWS = 150
"""A strip is at least this tall (3-4 lines of body type at 300 dpi), however wide the part."""
NARROW_AFTER = 20
"""Confident words a page's (a document's) first strips must give before its packs are narrowed (:func:`_narrowed`)."""
PROBE_PAGES = 3
"""A document's packs are found on its first lines, from its first pages down: at most this many pages are probed
(a cover, a plate, a blank verso may come first); a document whose first pages give too few words is narrowed
page by page instead."""
PROBE_STRIPS = 2
"""At most this many strips (:data:`STRIP_PIXELS` each, ~0.2 s with five packs) of a page are read to find a
document's packs: a page of body type gives its :data:`NARROW_AFTER` words in one."""
PROBE_SEARCH = 50
"""Pages looked at for the first without a text layer (one with fonts has one: 0.06 ms a page to ask)."""
PROBE_WIDTH = 2400
"""A probed strip is at most this wide (8 in at 300 dpi, from the page's middle: a column or two of a newspaper),
so that it is :data:`STRIP_PIXELS` of type, not a sliver of a spread."""
PROBE_FROM = 0.4
"""A probed page is read from this share of its height down: its body type, below a masthead or a title."""
MIN_SHARE = 0.35
"""A page read with a document's packs gives Tesseract's confidence to at least this share of its words (0.54-0.97
on the real pages read with their own packs, the lowest a newspaper's advertisements): one in another script
(German read with ``rus``: 0.10-0.21) is read again with the full set."""
MIN_CHECKED = 30
"""Words a page must give before its share (:data:`MIN_SHARE`, of all its words so far) says anything: a masthead's
strip or a line of small type reads a handful of words, most of them unsure, in any pack."""
PACK_SHARE = 0.2
"""A default pack stays for the rest of the page when it read at least this share of its first confident words:
on an English page the other packs read 4-15 % each (names, short words), on a German book in Fraktur
``frk`` and ``deu`` share them."""
LANG_FORMAT = re.compile(r"[A-Za-z0-9_/-]+(\+[A-Za-z0-9_/-]+)*")
"""Tesseract's language argument: pack names joined by ``+`` (``eng+deu``, ``script/Fraktur``)."""


class OcrFailed(Exception):
    """Tesseract failed on this band; the page keeps no OCR words, and says why in its warning."""


def ocr_note(template: CaptionTemplate, ocr: bool, lang: str) -> str:
    """One line for the user when the run's captions (``template``) want OCR (``ocr``, in ``lang``: the options'
    ``ocr`` and ``ocr_lang``) but it cannot run as asked (no Tesseract, a language pack missing), empty otherwise;
    say it once per run: the run goes on, with the installed packs of the default set (:func:`reading_lang`) or
    without OCR."""
    if not ocr or "words" not in template.fields:
        return ""
    read, why = reading_lang(lang)
    if not why:
        return ""
    if read is None:
        return f"note: no OCR: {why}; pages without a text layer get no {{words}} (--no-ocr hides this note)"
    return f"note: OCR reads {read} only: {why}"


def reading_lang(lang: str) -> tuple[str | None, str]:
    """The packs Tesseract reads ``lang`` with here (``None``: no OCR) and why it is not ``lang`` itself (``""``
    when it is). The default set is read with those of its packs that are installed: a user with English, French
    and German installed gets their words, not an OCR turned off for a missing Cyrillic pack. A set asked for with
    ``--ocr-lang`` is read whole or not at all: a page read without a pack the user named would be read wrong."""
    why = tesseract.unavailable(lang)
    if not why:
        return lang, ""
    if lang == DEFAULT_LANG:
        kept = "+".join(name for name in lang.split("+") if name in tesseract.packs())
        if kept and not tesseract.unavailable(kept):
            return kept, why
    return None, why


def bands(page: pymupdf.Page, boxes: Sequence[Box] = ()) -> list[Box]:
    """The areas to read, as page fractions: each box with :data:`pipeline.words.MARGIN_MM` above and below it
    (the text layer's area), overlapping ones joined so no word is read twice; no boxes: the whole page."""
    if not boxes:
        return [(0.0, 0.0, 1.0, 1.0)]
    margin = MARGIN_MM * 72 / 25.4 / page.rect.height
    found = [(x0, max(0.0, y0 - margin), x1, min(1.0, y1 + margin)) for x0, y0, x1, y1 in boxes]
    joined = True
    while joined:
        joined = False
        for i, a in enumerate(found):
            for j in range(i + 1, len(found)):
                b = found[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    found[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    del found[j]
                    joined = True
                    break
            if joined:
                break
    return sorted(found, key=lambda band: (band[1], band[0]))


def read_words(
    page: pymupdf.Page,
    boxes: Sequence[Box],
    lang: str = DEFAULT_LANG,
    scan: Scan | None = None,
    scale: float = 1.0,
    narrow: bool = False,
) -> str:
    """The words Tesseract reads in :func:`bands` of ``page``, cleaned for a caption (``""`` when none), read only
    until the caption is full.

    ``scale`` is the page's real size over its declared one (:mod:`pipeline.scale`): a page declared too small
    is rendered larger so its type reaches :data:`OCR_DPI`. ``narrow``: ``lang`` may be narrowed to the packs
    that read the document's first lines (:func:`document_packs`), or where they tell nothing or read this page
    badly, the page's own first words (the default set; a set the user named is read whole). Raises
    :class:`OcrFailed` when Tesseract fails."""
    packs = document_packs(page.parent, lang) if narrow else None
    reading = _Reading(packs or lang, narrow and packs is None, fallback=lang if packs is not None else None)
    try:
        return _read_until_full(reading, page, boxes, scan, scale)
    except _Misread:  # another script than the document's first lines: all the packs, narrowed on this page
        return _read_until_full(_Reading(lang, narrow), page, boxes, scan, scale)


def _read_until_full(
    reading: _Reading, page: pymupdf.Page, boxes: Sequence[Box], scan: Scan | None, scale: float
) -> str:
    for strip in _page_strips(page, boxes, scan, scale):
        reading.read(strip)
        cleaned = clean_words(reading.words, reading.line_ends)
        if len(cleaned.split()) >= pipeline.words.MAX_WORDS:  # a caption holds no more: the rest of the page
            return cleaned  # (later strips, later bands) would be read for nothing
    return clean_words(reading.words, reading.line_ends)


_probed: dict[tuple[str, int, str], str | None] = {}


def document_packs(doc: pymupdf.Document, lang: str) -> str | None:
    """The packs of ``lang`` that read ``doc``'s type (:func:`_narrowed`); ``None`` when its first
    :data:`PROBE_PAGES` pages without a text layer (among its first :data:`PROBE_SEARCH`) give too few words in
    :data:`PROBE_STRIPS` strips each. Each is read from its middle down (its body type, not a masthead), at most
    :data:`PROBE_WIDTH` wide. Found once per document and process (the last document only: a worker's tasks are
    mostly ranges of one file), always on the same pages, so a page gets the same words whichever worker reads it,
    after whatever pages."""
    key = (doc.name, doc.page_count, lang)
    if key not in _probed:
        _probed.clear()
        _probed[key] = _probe(doc, lang)
    return _probed[key]


def _probe(doc: pymupdf.Document, lang: str) -> str | None:
    from pipeline.scan import find_scan

    reading, probed = _Reading(lang, narrow=True), 0
    for index in range(min(PROBE_SEARCH, doc.page_count)):
        try:
            page = doc.load_page(index)
            if page.get_fonts():  # a text layer: its words need no OCR, and say nothing of the packs
                continue
            strips = _page_top_down(page, OCR_DPI / 72, find_scan(page), PROBE_FROM, PROBE_WIDTH)
            for strip in itertools.islice(strips, PROBE_STRIPS):
                reading.read(strip)
                if not reading.narrow:
                    return reading.lang
        except OcrFailed:
            raise
        except Exception:  # noqa: BLE001 - a damaged page says nothing of the packs; its own task records it
            continue
        probed += 1
        if probed >= PROBE_PAGES:
            break
    return None


class _Misread(Exception):
    """A page read with a document's packs gave too few confident words (:data:`MIN_SHARE`), the full set enough."""


@dataclass
class _Reading:
    """A page's words so far, and the packs its next strips are read with."""

    lang: str
    narrow: bool
    fallback: str | None = None
    """The full set, while the page is read with a document's packs: :class:`_Misread` is raised when its words are
    mostly unsure and the full set is surer of the same strip (another script); where it is not (a picture, a
    target: no pack reads it), the page goes on with the document's packs."""
    words: list[str] = field(default_factory=list)
    found: int = 0
    """Words Tesseract gave so far, sure of them or not."""
    line_ends: set[int] = field(default_factory=set)
    read_by: Counter[str] = field(default_factory=Counter)

    def read(self, pixels: np.ndarray) -> None:
        found = _read(self.lang, pixels)
        kept = confident(found)
        self.found += len(found)
        if self.fallback and self.found >= MIN_CHECKED and len(self.words) + len(kept) < MIN_SHARE * self.found:
            again = _read(self.fallback, pixels)
            if len(confident(again)) >= MIN_SHARE * max(1, len(again)):
                raise _Misread
            self.fallback = None
        self.line_ends.update(len(self.words) + i for i, word in enumerate(kept) if word.line_end)
        self.words.extend(word.text for word in kept)
        if self.narrow:
            self.read_by.update(word.lang for word in kept)
            if self.read_by.total() >= NARROW_AFTER:
                self.lang, self.narrow = _narrowed(self.read_by, self.lang), False


def _read(lang: str, pixels: np.ndarray) -> list[tesseract.Word]:
    try:
        return tesseract.engine(lang).read(pixels)
    except tesseract.EngineFailed as exc:
        raise OcrFailed("OCR failed: " + one_line(str(exc))) from None


def confident(found: Sequence[tesseract.Word]) -> list[tesseract.Word]:
    """The words a caption may take: confident, in boxes wide enough for their letters, NFKC-normalised
    (``ſ`` → ``s``, ``ﬁ`` → ``fi``); a line's end stays marked on its last kept word."""
    kept: list[tesseract.Word] = []
    for word in found:
        text = word.text.strip()
        if text and word.confidence >= MIN_CONFIDENCE and word.width >= MIN_ASPECT * word.height * len(text):
            kept.append(replace(word, text=unicodedata.normalize("NFKC", text)))
        elif word.line_end and kept and not kept[-1].line_end:
            kept[-1] = replace(kept[-1], line_end=True)
    return kept


def _narrowed(read_by: Counter[str], lang: str) -> str:
    """The packs of ``lang`` that read at least :data:`PACK_SHARE` of the page's first words, the most used first
    (Tesseract tries its main pack first, the others on words it is unsure of)."""
    total = read_by.total()
    kept = [name for name, count in read_by.most_common() if name in lang.split("+") and count >= PACK_SHARE * total]
    return "+".join(kept) or lang


def _page_strips(page: pymupdf.Page, boxes: Sequence[Box], scan: Scan | None, scale: float) -> Iterator[np.ndarray]:
    """What to read, in reading order, a part at a time so that reading stops once the caption is full: each band
    cut at its pictures' top and bottom edges (:func:`_parts`); without boxes, the whole page from its top, a strip
    at a time, each rendered alone (no 300 dpi page held)."""
    from pipeline.render import render

    for band in bands(page, boxes):
        x0, y0, x1, y1 = band
        area = page.rect.width * (x1 - x0) * page.rect.height * (y1 - y0)
        zoom = min(OCR_DPI / 72 * scale, (MAX_PIXELS / max(area, 1e-6)) ** 0.5)
        if not boxes:
            yield from _page_top_down(page, zoom, scan)
            continue
        pixels = render(page, zoom, "gray", band, scan)
        cuts = [(edge - y0) / (y1 - y0) for box in boxes if y0 <= box[1] < y1 for edge in (box[1], box[3])]
        yield from _parts(pixels, cuts, round(GAP_MM / 25.4 * 72 * zoom))


def _parts(pixels: np.ndarray, cuts: Sequence[float], gap: int) -> list[np.ndarray]:
    """``pixels`` cut at ``cuts`` (fractions of its height: the pictures' top and bottom edges), each part read
    apart, with ``gap`` rows of white above and below it (a legend that its picture's box reaches over, cut at its
    last line, lost letters without them). Read as one, Tesseract's layout analysis takes a legend set close under
    a picture for part of it and reads its letters as the picture's marks, or nothing. A picture is read whole: cut
    in strips, its hatching came out as words (``ww``, ``dog``); the legend under it is not read once the picture
    filled the caption."""
    import numpy as np

    rows = sorted({min(pixels.shape[0], max(0, round(cut * pixels.shape[0]))) for cut in cuts} - {0, pixels.shape[0]})
    return [np.pad(part, ((gap, gap), (0, 0)), constant_values=255) for part in np.split(pixels, rows) if part.shape[0]]


def _page_top_down(
    page: pymupdf.Page, zoom: float, scan: Scan | None, start: float = 0.0, width: int | None = None
) -> Iterator[np.ndarray]:
    """A whole page at ``zoom``, top down (from ``start``, a share of its height), in strips of
    :data:`STRIP_PIXELS`, each cut at the whitest row near its end (between two lines of type) and rendered alone:
    a newspaper page at 300 dpi is ~30 MB of grey that the caption's first lines do not need (a scan is decoded once,
    at its own resolution or reduced). ``width``: at most this many pixels of each strip, from the page's middle."""
    from pipeline.render import render
    from pipeline.scan import decode_page, scan_view

    full, height = round(page.rect.width * zoom), round(page.rect.height * zoom)
    share = min(1.0, (width or full) / max(full, 1))
    x0, x1 = 0.5 - share / 2, 0.5 + share / 2
    rows, top = _first_rows(round(full * share)), round(start * height)
    decoded = decode_page(page, scan, zoom, "gray") if scan is not None else None  # once, not once a strip
    while top < height:
        box = (x0, top / height, x1, min(height, top + rows) / height)
        window = (
            render(page, zoom, "gray", box) if scan is None else scan_view(page, scan, zoom, "gray", box, None, decoded)
        )
        end = _cut(window, top + rows >= height)
        yield window[:end]
        top += end


def _first_rows(width: int) -> int:
    return max(MIN_STRIP_ROWS, STRIP_PIXELS // max(width, 1))


def _cut(window: np.ndarray, last: bool) -> int:
    """Where to end a strip of ``window``: all of it when it is the part's last, else its whitest row in its last
    quarter (between two lines of type)."""
    if last or window.shape[0] < 4:
        return max(1, window.shape[0])
    start = window.shape[0] * 3 // 4
    return start + int(window[start:].mean(axis=1).argmax())
