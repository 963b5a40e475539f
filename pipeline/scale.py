"""The page's real size from its own pixels: text line pitch, for PDFs that declare the wrong page size.

Archives wrap scans at any nominal resolution: a 300 dpi scan in a page declared at 600 dpi (half its real
size), thumbnails and derivatives in 72 dpi wrappers. The judge measures in millimetres of the declared
page, so a page declared half its size shows text of half its height: lines 1.2 mm apart merge into a grey
texture at the judge's 72 dpi, and text pages are kept as pictures. No body type is set tighter than agate
(5.5 pt on a 6 pt body, 2.1 mm line pitch), so a pitch below :data:`MIN_PITCH_MM` says the declared page is
too small; the page is then viewed as if its lines were :data:`ASSUMED_PITCH_MM` apart (small newspaper
type, the tightest common print: the correction never makes a page larger than the smallest real type
allows). A pitch within print's range leaves the declared size alone: a page declared right is judged as
before. Where there is no text, nothing here changes the view: the judge's picture-page decisions are
fractions of the page.
"""

from __future__ import annotations

import cv2
import numpy as np

MM_PER_INCH = 25.4
MIN_PITCH_MM = 2.2
"""Below this the page's text would be smaller than any body type: its declared size is wrong."""
ASSUMED_PITCH_MM = 2.6
"""The line pitch a page declared too small is viewed at (6-7 pt newspaper type)."""
MAX_CORRECTION = 4.0
"""At most this many times the declared size (the view's pixels grow with its square)."""
STRIPS = 12
"""Vertical strips whose row profiles are measured: a few per text column on any page."""
LEADING = 0.2
"""A cell's lightest row holds at most this share of its darkest row's ink: the leading between lines."""
LINED = 0.3
"""Share of a region's inked cells with regular lines that makes it text."""
SAMPLES = 24
"""Columns sampled per strip for its row profile."""
BLOCKS = 8
"""Each strip is measured in this many blocks of rows."""
MIN_CELLS = 6
"""Fewer cells with regular lines than this are no text to measure (a caption, a few words on a plate)."""
MIN_PERIOD_PX = 3
"""Shorter periods are halftone screens, hatching or noise, not lines of type (which need ~3 px to resolve)."""
MIN_PEAK = 0.4
"""A strip's autocorrelation at its period: text lines repeat strongly, texture and pictures do not."""
AGREEING = 0.5
"""Share of the measured strips that must give the same period (±15 %): one column of regular lines is no
evidence when the rest of the page says otherwise."""


def line_pitch(image: np.ndarray) -> float | None:
    """The distance in pixels between lines of text on ``image`` (grey or RGB), or ``None`` when it shows no
    regular lines. The page is cut into :data:`STRIPS` x :data:`BLOCKS` cells (a text block is regular, a
    whole column of headlines, ads and rules is not); each cell's row profile gives its first strong
    autocorrelation peak past the first negative lobe (below it the profile still overlaps itself), and the
    mean of the cells that agree with their median is the pitch. One area resize and a small FFT: a few ms."""
    periods, _cells = _cell_periods(image, BLOCKS)
    if periods.size < MIN_CELLS:
        return None
    median = float(np.median(periods))
    agree = periods[np.abs(periods - median) <= 0.15 * median]
    return float(agree.mean()) if agree.size >= AGREEING * periods.size else None


def has_lines(image: np.ndarray, blocks: int = 0) -> bool:
    """Whether ``image`` shows lines of type, of one size or several (body text and footnotes): enough of its
    inked cells (see :func:`line_pitch`) repeat their rows regularly, whatever the period."""
    periods, cells = _cell_periods(image, blocks or BLOCKS)
    return periods.size >= max(MIN_CELLS, LINED * cells)


def _cell_periods(image: np.ndarray, blocks: int) -> tuple[np.ndarray, int]:
    """The row period (pixels) of each cell of ``image`` with regular lines, and how many cells hold ink with
    leading (the cells that could be text)."""
    h = image.shape[0]
    rows = h // blocks
    if rows < 4 * MIN_PERIOD_PX or image.shape[1] < STRIPS:
        return np.zeros(0, np.int64), 0
    # every few columns of whole strips (a strip's mean needs no more), then an exact area reduction by an
    # integer factor, which takes cv2's fast path
    step = max(1, image.shape[1] // (STRIPS * SAMPLES))
    sampled = np.ascontiguousarray(image[:, ::step])
    w = sampled.shape[1] - sampled.shape[1] % STRIPS
    profiles = cv2.resize(sampled[:, :w], (STRIPS, h), interpolation=cv2.INTER_AREA).astype(np.float32)
    if profiles.ndim == 3:
        profiles = profiles.mean(axis=2)
    # one column per cell: BLOCKS runs of ``rows`` rows in each strip
    cells = profiles[: rows * blocks].reshape(blocks, rows, STRIPS).transpose(1, 0, 2).reshape(rows, -1)
    # lines of type have leading: some row of a cell is (nearly) paper, however dense the lines; hatching,
    # screens and tone put ink in every row. Paper is the brightest row nearby (a block up or down, a strip
    # either side), not of the whole page: stained, mottled or unevenly lit paper is lighter in places than
    # under the text by more than faint ink is dark
    paper = cv2.dilate(profiles[: rows * blocks], np.ones((2 * rows + 1, 3), np.uint8))
    ink = (paper.reshape(blocks, rows, STRIPS).transpose(1, 0, 2).reshape(rows, -1)) - cells
    leaded = ink.min(axis=0) <= LEADING * ink.max(axis=0)
    cells = cells - cells.mean(axis=0, keepdims=True)
    spectrum = np.fft.rfft(cells, n=2 * rows, axis=0)
    corr = np.fft.irfft(spectrum * np.conj(spectrum), axis=0)[: rows // 3]
    inked = (corr[0] > 1.0 * rows) & leaded  # a cell of paper alone has no profile to speak of
    a = corr[:, inked] / corr[0, inked]
    lag = np.arange(a.shape[0])[:, None]
    negative = a < 0
    start = np.maximum(MIN_PERIOD_PX, np.argmax(negative, axis=0))
    seg = np.where(lag >= start, a, -np.inf)
    top = seg.max(axis=0)
    # the first local maximum past ``start`` that is nearly as high as the highest
    peak = np.zeros_like(negative)
    peak[1:-1] = (seg[1:-1] >= seg[:-2]) & (seg[1:-1] >= seg[2:]) & (seg[1:-1] >= 0.7 * top)
    found = peak.any(axis=0) & negative.any(axis=0) & (top >= MIN_PEAK)
    periods = np.argmax(peak, axis=0)[found]
    return periods, int(np.count_nonzero(inked))


def true_zoom(pitch_px: float | None, zoom: float) -> float:
    """The zoom (of the declared page) at which a view shows the page at ``zoom`` x 72 dpi of its real size,
    given its text's ``pitch_px`` measured on a view at ``zoom``: ``zoom`` itself unless the text is
    implausibly small for print (see the module's docstring)."""
    if pitch_px is None:
        return zoom
    pitch_mm = pitch_px / (72.0 * zoom) * MM_PER_INCH
    return zoom * min(MAX_CORRECTION, ASSUMED_PITCH_MM / pitch_mm) if pitch_mm < MIN_PITCH_MM else zoom
