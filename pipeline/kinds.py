"""What kind of picture an image is, measured on the written image itself, for a caption's ``{kind}``.

A caption must never be empty (kohya and diffusers would train that image on an empty prompt), and the judges
only decide *whether* and *where* a picture is, not what it is. Three things can be told apart reliably from
the pixels a LoRA will be trained on, so ``{kind}`` names only those:

* **halftone**: a regular dot screen, which the written image resolves: a strong periodic peak in its
  spectrum together with a second one at right angles (a screen has two directions; hatching, even
  cross-hatching at a varying pitch, peaks far weaker). Synthetic 50-85 lpi screens scanned at 300 dpi and
  written at 2.6-4.4 px per period peak at 150-1,000 times the spectrum's median, the engravings, woodcuts and
  cartoons of ``../shared/data`` at most 60 times.
* **continuous tone**: smooth mid-tones over a real part of the image (photographs, washes, pencil shading,
  a screen too fine to resolve at this size): photographs measure 0.3-0.75 of their pixels, line work under 0.01.
* **line art**: ink and paper with little between: engravings, woodcuts, line drawings, binarised scans. These
  are not told apart from one another (an engraving from a woodcut needs the cut's texture, which a 1 MP image
  of a 19th-century print does not reliably show), so they are not named.

Each is ``monochrome`` or ``colour``: colour when the image has more than one hue, or one strongly (toned paper
and sepia ink are one weak hue, still monochrome).
"""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np
from PIL import Image

SCREEN_PEAK = 100.0
"""A spectral peak this many times the median of its band is a screen (line art: at most ~60)."""
SCREEN_PARTNER = 0.5
"""...when the peak at right angles to it is at least this share of it (a screen has two directions)."""
SCREEN_PERIODS = (2.2, 10.0)
"""Screen periods looked for, in pixels of the written image (finer ones are smooth tone at this size)."""
OFF_AXIS_DEGREES = 5.0
"""Peaks this close to the axes are not a screen (see :func:`_band`)."""
SMOOTH_TONE = 0.1
"""Share of pixels that must be smooth mid-tones for continuous tone (photographs 0.3-0.75, line art < 0.01)."""
HUE_VARIETY = 0.02
"""Share of pixels off the dominant hue that makes an image colour (sepia renderings of photographs: at most
0.012; most colour photographs 0.03-0.3)."""
STRONG_CHROMA = 25.0
"""95th percentile of CIELAB chroma above which even one hue is colour (sepia renderings: 15-18)."""
SPECTRUM_SIDE = 512
"""The spectrum is taken of the central square of at most this side: enough cycles of any screen."""


def picture_kind(picture: Image.Image | np.ndarray) -> str:
    """``"monochrome line art"``, ``"colour halftone"``, ... (see the module's docstring) for a written image."""
    pixels = np.asarray(picture)
    if pixels.ndim == 3 and pixels.shape[2] == 4:
        pixels = pixels[..., :3]
    gray = cv2.cvtColor(pixels, cv2.COLOR_RGB2GRAY) if pixels.ndim == 3 else pixels
    colour = "colour" if pixels.ndim == 3 and _colourful(pixels) else "monochrome"
    if _screened(gray):
        return f"{colour} halftone"
    if _smooth_tone(gray) >= SMOOTH_TONE:
        return f"{colour} continuous tone"
    return f"{colour} line art"


CANDIDATE_SIDE = 512
"""A judge's candidate is measured on its view sampled every few pixels down to at most this long side..."""
CANDIDATE_COLOUR_SIDE = 256
"""...and its colour to this one (~50k pixels: hues are counted, not shapes; four times faster)."""


def candidate_kind(view: np.ndarray, colour: bool = True) -> str:
    """The kind of the judge's best candidate on a page, kept or dropped, measured on the judge's view cut to
    it (for the manifest's ``page_kind`` and the report's *Pictures by kind*): ``"line art"`` or ``"continuous
    tone"``, with ``monochrome`` / ``colour`` in front when ``colour`` (the view has the page's colours: not the
    structure judge's grey view of a colour page); ``""`` for a flat crop (nothing on it).

    Cheaper than :func:`picture_kind` and the same on every page whatever its fate: the view is sampled (every
    n-th pixel, no averaging that would turn line work into mid-tones) to :data:`CANDIDATE_SIDE`, and no
    halftone is looked for, since a view (72-144 dpi) rarely resolves a screen: a halftone photograph counts as
    continuous tone here."""
    height, width = view.shape[:2]
    step = max(1, -(-max(height, width) // CANDIDATE_SIDE))
    pixels = view[::step, ::step]
    if pixels.ndim == 3 and pixels.shape[2] == 4:
        pixels = pixels[..., :3]
    gray = cv2.cvtColor(np.ascontiguousarray(pixels), cv2.COLOR_RGB2GRAY) if pixels.ndim == 3 else pixels
    lo, hi = _percentiles(gray, (1, 99))
    if hi - lo < 16:
        return ""
    tone = "continuous tone" if _smooth_tone(gray) >= SMOOTH_TONE else "line art"
    if not colour:
        return tone
    if pixels.ndim == 2:
        return f"monochrome {tone}"
    step = max(1, -(-max(pixels.shape[:2]) // CANDIDATE_COLOUR_SIDE))
    return f"{'colour' if _colourful(pixels[::step, ::step]) else 'monochrome'} {tone}"


def _colourful(rgb: np.ndarray) -> bool:
    """Whether the image has colours of more than one hue (:data:`HUE_VARIETY` of its pixels over 30 degrees of
    CIELAB hue from its dominant one), or one hue strongly (:data:`STRONG_CHROMA`): toned paper and sepia or
    brown ink are one weak hue."""
    step = max(1, int(np.sqrt(rgb.shape[0] * rgb.shape[1] / 65_536)))  # ~65k samples are plenty
    lab = cv2.cvtColor(np.ascontiguousarray(rgb[::step, ::step]), cv2.COLOR_RGB2LAB).reshape(-1, 3)
    a, b = lab[:, 1].astype(np.float32) - 128, lab[:, 2].astype(np.float32) - 128
    chroma = np.hypot(a, b)
    if float(np.percentile(chroma, 95)) > STRONG_CHROMA:
        return True
    tinted = chroma > 6
    if not tinted.any():
        return False
    hue = np.arctan2(b[tinted], a[tinted])
    dominant = np.angle(np.sum(chroma[tinted] * np.exp(1j * hue)))
    off = np.abs(np.angle(np.exp(1j * (hue - dominant))))
    return bool(np.count_nonzero(off > np.radians(30)) > HUE_VARIETY * chroma.size)


def _smooth_tone(gray: np.ndarray) -> float:
    """Share of pixels that are mid-tones (a fifth to four fifths between the image's ink and paper) in a
    smooth neighbourhood (3x3 standard deviation under a tenth of that range): line work's mid-tones lie on
    its edges, a photograph's in its areas."""
    lo, hi = _percentiles(gray[:: max(1, gray.shape[0] // 512), :: max(1, gray.shape[1] // 512)], (1, 99))
    if hi - lo < 16:
        return 0.0  # a flat image: no tone to speak of
    if gray.dtype == np.uint8:  # each grey level's tone and whether it is a mid-tone, looked up: the same values
        levels = (np.arange(256, dtype=np.uint8).astype(np.float32) - lo) / (hi - lo)
        tone = cv2.LUT(gray, levels)
        mid = cv2.LUT(gray, ((levels > 0.2) & (levels < 0.8)).view(np.uint8)).view(bool)
    else:
        tone = (gray.astype(np.float32) - lo) / (hi - lo)
        mid = (tone > 0.2) & (tone < 0.8)
    # in place, three image-sized float arrays at most (four more were made here: 16 MB at 1 MP)
    mean = cv2.blur(tone, (3, 3))
    variance = cv2.blur(np.multiply(tone, tone, out=tone), (3, 3), dst=tone)
    variance -= np.multiply(mean, mean, out=mean)
    return float(np.count_nonzero(mid & (variance < _SMOOTH_VARIANCE)) / variance.size)


def _variance_under(std: float) -> np.float32:
    """The least float32 variance whose square root (as float32, rounded as NumPy rounds it) is not under
    ``std``: ``variance < it`` is exactly ``sqrt(max(variance, 0)) < std``, without the square roots."""
    guess = np.array([std * std], dtype=np.float32).view(np.int32)[0]
    bits = np.arange(guess - 64, guess + 64, dtype=np.int32).view(np.float32)
    under = np.sqrt(bits) < std
    assert under[0] and not under[-1] and not np.any(np.diff(under.view(np.int8)) > 0)
    return bits[np.argmin(under)]


_SMOOTH_VARIANCE = _variance_under(0.1)


def _percentiles(sample: np.ndarray, quantiles: tuple[float, float]) -> tuple[float, float]:
    """``np.percentile(sample, quantiles)``; of a uint8 sample read from its histogram where the sorted values
    around each percentile are equal (then NumPy's interpolation between them is that value), which is ~10
    times faster than NumPy's partition."""
    if sample.dtype == np.uint8:
        ends = np.cumsum(np.bincount(sample.ravel(), minlength=256))
        n = int(ends[-1])
        values = []
        for quantile in quantiles:
            index = int((n - 1) * quantile / 100)
            below, above = np.searchsorted(ends, [max(0, index - 1), min(n - 1, index + 2)], side="right")
            if below != above:
                break
            values.append(float(below))
        else:
            return values[0], values[1]
    lo, hi = np.percentile(sample, quantiles)
    return float(lo), float(hi)


def _screened(gray: np.ndarray) -> bool:
    """Whether the central square's spectrum shows a dot screen: a peak of :data:`SCREEN_PEAK` over the median
    of the band of screen periods, a partner at right angles, and no pixel grid's peaks on the axes."""
    h, w = gray.shape
    side = min(h, w, SPECTRUM_SIDE)
    if side < 64:
        return False
    top, left = (h - side) // 2, (w - side) // 2
    square = gray[top : top + side, left : left + side].astype(np.float32)
    square -= square.mean()
    window = _window(side)
    spectrum = np.abs(np.fft.fftshift(np.fft.fft2(square * window)))
    band = _band(side)
    median = float(np.median(spectrum[band]))
    if median <= 0:
        return False
    peaks = np.where(band, spectrum, 0.0)
    y, x = np.unravel_index(int(np.argmax(peaks)), peaks.shape)
    peak = peaks[y, x] / median
    if peak < SCREEN_PEAK:
        return False
    c = side // 2
    dy, dx = y - c, x - c
    partner = _near(spectrum, c + dx, c - dy) / median  # the same frequency turned by 90 degrees
    # a pixel grid (an upscaled image's, JPEG's blocks) peaks off the axes too, at sums of its peaks on them:
    # a screen's lattice has nothing at the peak's projections onto the axes
    grid = max(_near(spectrum, c, x), _near(spectrum, y, c)) / median
    return bool(partner >= SCREEN_PARTNER * peak and grid < SCREEN_PARTNER * peak)


def _near(spectrum: np.ndarray, y: int, x: int, reach: int = 2) -> float:
    """The spectrum's largest value within ``reach`` bins of ``(y, x)``."""
    return float(spectrum[max(0, y - reach) : y + reach + 1, max(0, x - reach) : x + reach + 1].max())


@cache
def _window(side: int) -> np.ndarray:
    window = np.hanning(side).astype(np.float32)
    return np.outer(window, window)


@cache
def _band(side: int) -> np.ndarray:
    """The frequencies of :data:`SCREEN_PERIODS`, without those within :data:`OFF_AXIS_DEGREES` of the axes:
    JPEG's 8x8 blocks and the pixel grid of an upscaled image peak there in both directions, like a screen
    (a black screen is set at 45 degrees; only yellow, the faintest ink, at 0)."""
    fy, fx = np.mgrid[0:side, 0:side]
    fy, fx = np.abs(fy - side // 2), np.abs(fx - side // 2)
    radius = np.hypot(fx, fy) / side
    off_axis = np.minimum(fx, fy) > np.tan(np.radians(OFF_AXIS_DEGREES)) * np.maximum(fx, fy)
    return (radius > 1 / SCREEN_PERIODS[1]) & (radius < 1 / SCREEN_PERIODS[0]) & off_axis
