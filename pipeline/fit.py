"""Fit a rendered image to the dataset's target size and encode it.

Three modes (``--fit``):

* ``square``: the seed article's ``size``×``size`` LANCZOS resize (aspect ratio not kept), kept for fidelity.
* ``bucket``: keep the aspect ratio and fit to the nearest SDXL bucket of about ``size``² pixels by a LANCZOS
  downscale that covers the bucket and a minimal centre crop. Squashing distorts engravings and lies to
  SDXL's size/crop conditioning; buckets are what SDXL was trained on and what kohya sd-scripts buckets to.
* ``max-side``: keep the aspect ratio, cap the longer side at ``size``; no crop at all.

Nothing is upscaled unless asked (``upscale=True``): interpolated pixels are blur the LoRA would learn.
An image smaller than its target is kept at its own size and flagged ``undersized``; in ``square`` and
``bucket`` modes it is centre-cropped to sides that are multiples of :data:`STEP` (64, kohya's default
``bucket_reso_steps``, so kohya's ``bucket_no_upscale`` bucketing then uses it as it is, without a second
crop). An image whose shorter side is below ``min_side`` is not fitted at all (:class:`TooSmall`).
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import Image

FitMode = Literal["square", "bucket", "max-side"]
MODES: tuple[FitMode, ...] = ("square", "bucket", "max-side")
DEFAULT_MODE: FitMode = "bucket"

STEP = 64
"""Sides of cropped undersized images are rounded down to this (kohya's default ``bucket_reso_steps``)."""

DEFAULT_MIN_SIDE = 512
"""Shorter sides below this are dropped: 512 px is SD 1.5's native size and half of SDXL's; a smaller picture
covers less than a quarter of SDXL's 1 MP training area, so kohya would train it in a tiny bucket whose
detail SDXL cannot use, and it is usually a vignette or ornament rather than a plate."""

SDXL_BUCKETS: tuple[tuple[int, int], ...] = (
    (1024, 1024),
    (1152, 896),
    (1216, 832),
    (1344, 768),
    (1536, 640),
    (896, 1152),
    (832, 1216),
    (768, 1344),
    (640, 1536),
)
"""SDXL's training resolutions (width, height) around 1 MP, landscape and portrait."""


REDUCING_GAP = 2.0
"""Pillow's two-step LANCZOS for bucket and max-side fits: an integer box reduction first, then LANCZOS over
at least twice the target. Measured on a 2× newspaper view (3354×5090 → 832×1216): 43 ms instead of 92 ms,
mean difference 0.66 grey levels. ``square`` keeps the article's plain LANCZOS, for fidelity."""


class TooSmall(ValueError):
    """The image's shorter side is below ``min_side``; the caller drops it and records why."""


@dataclass(frozen=True)
class Fit:
    """How to fit images: mode, target ``size`` (square side, bucket base, or longer-side cap) and limits."""

    mode: FitMode = DEFAULT_MODE
    size: int = 1024
    min_side: int = DEFAULT_MIN_SIDE
    upscale: bool = False
    """Resample small images up to the target (the article's behaviour in ``square`` mode); off by default."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown fit mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if not 16 <= self.size <= 8192:
            raise ValueError(f"fit size must be between 16 and 8192 pixels, got {self.size}")
        if self.min_side < 1:
            raise ValueError(f"min_side must be at least 1, got {self.min_side}")

    def buckets(self) -> tuple[tuple[int, int], ...]:
        """SDXL's buckets scaled to ``size`` (identical at 1024), sides rounded to multiples of :data:`STEP`."""
        scale = self.size / 1024
        return tuple((_round_step(w * scale), _round_step(h * scale)) for w, h in SDXL_BUCKETS)

    def target(self, width: int, height: int) -> tuple[int, int]:
        """The output size an image of ``width``×``height`` is fitted to when it is large enough."""
        if self.mode == "square":
            return self.size, self.size
        if self.mode == "bucket":
            return nearest_bucket(width, height, self.buckets())
        scale = self.size / max(width, height)
        return max(1, round(width * scale)), max(1, round(height * scale))


def parse_fit(text: str, size: int = 1024, min_side: int = DEFAULT_MIN_SIDE, upscale: bool = False) -> Fit:
    """A :class:`Fit` from the CLI's ``--fit`` text: ``square``, ``bucket``, or ``max-side N`` (also ``max-side:N``,
    ``max-side=N``; plain ``max-side`` caps at ``size``)."""
    match = re.fullmatch(r"\s*(square|bucket|max-side)(?:[\s:=]+(\d+))?\s*", text)
    if match is None:
        raise ValueError(f"unknown fit {text!r}; use square, bucket or max-side N")
    mode, number = match.groups()
    if number is not None and mode != "max-side":
        raise ValueError(f"fit {mode!r} takes no number (use --size); got {text!r}")
    return Fit(mode, int(number) if number else size, min_side, upscale)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Fitted:
    """A fitted image with what was done to it, for the manifest."""

    image: Image.Image
    original_size: tuple[int, int]
    """``(width, height)`` of the image that was fitted."""
    upscaled: bool
    """Some pixels were interpolated up (only with ``Fit(upscale=True)``)."""
    undersized: bool
    """Smaller than the target and kept at (about) its own size instead of being upscaled."""

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size


def nearest_bucket(width: int, height: int, buckets: tuple[tuple[int, int], ...] = SDXL_BUCKETS) -> tuple[int, int]:
    """The bucket whose aspect ratio is closest to ``width/height`` in log ratio (so 2:1 and 1:2 are as far
    from 1:1); ties go to the earlier bucket."""
    aspect = math.log(width / height)
    return min(buckets, key=lambda bucket: abs(math.log(bucket[0] / bucket[1]) - aspect))


def fit(image: np.ndarray | Image.Image, spec: Fit) -> Fitted:
    """Fit ``image`` (an ``HxW``/``HxWx3`` uint8 array or a PIL image) as ``spec`` says.

    Raises :class:`TooSmall` when the shorter side is below ``spec.min_side``.
    """
    width, height = (image.shape[1], image.shape[0]) if isinstance(image, np.ndarray) else image.size
    if min(width, height) < spec.min_side:
        raise TooSmall(f"{width}×{height} px is below the minimum side of {spec.min_side} px")
    target_w, target_h = spec.target(width, height)
    if spec.mode == "square" and (spec.upscale or min(width, height) >= spec.size):
        resized = _lanczos_by_rows(image, (spec.size, spec.size))
        return Fitted(resized, (width, height), spec.size > min(width, height), False)
    if spec.mode == "square":
        side = _floor_step(min(width, height))
        return Fitted(_lanczos_by_rows(image, (side, side)), (width, height), False, True)
    picture = _picture(image, spec, (target_w, target_h))
    if spec.mode == "max-side":
        return _fit_max_side(picture, (width, height), (target_w, target_h), spec.upscale)
    scale = max(target_w / width, target_h / height)
    if scale <= 1 or spec.upscale:
        cover = (max(target_w, math.ceil(width * scale - 1e-6)), max(target_h, math.ceil(height * scale - 1e-6)))
        resized = _resize(picture, cover, REDUCING_GAP)
        return Fitted(_center_crop(resized, (target_w, target_h)), (width, height), scale > 1, False)
    crop_w, crop_h = _largest_with_aspect(width, height, target_w / target_h)
    return Fitted(_center_crop(picture, (_floor_step(crop_w), _floor_step(crop_h))), (width, height), False, True)


def render_scale(width: float, height: float, spec: Fit) -> float:
    """The fraction (≤ 1, or more only with ``upscale``) of a source region's full resolution to render it at.

    ``width``×``height`` is the region's size in pixels at full resolution (e.g. at the orchestrator's
    maximum zoom). Rendering at ``scale`` gives the smallest image :func:`fit` needs — enough to cover the
    target with one pixel to spare for MuPDF's rounding, never more than the source holds. Raises
    :class:`TooSmall` when the region will be dropped anyway, so it need not be rendered.
    """
    if min(width, height) < spec.min_side:
        raise TooSmall(f"{width:.0f}×{height:.0f} px is below the minimum side of {spec.min_side} px")
    target_w, target_h = spec.target(round(width), round(height))
    needed = max((target_w + 1) / width, (target_h + 1) / height)
    return needed if spec.upscale else min(1.0, needed)


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """JPEG bytes at ``quality`` (the article's 92 by default), ready for the writer."""
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def _picture(image: np.ndarray | Image.Image, spec: Fit, target: tuple[int, int]) -> Image.Image:
    """A PIL image to fit; a large array is first area-reduced by OpenCV to :data:`REDUCING_GAP` × the size
    LANCZOS will finish at (what Pillow's ``reducing_gap`` does with an integer box, at any ratio, and without
    first copying the full-size array into Pillow: a 2× newspaper view is 20–40 MB)."""
    if not isinstance(image, np.ndarray):
        return image
    height, width = image.shape[:2]
    cover = max(target[0] / width, target[1] / height)  # bucket: cover the bucket, then crop
    scale = cover if spec.mode == "bucket" else min(target[0] / width, target[1] / height)  # max-side: fit inside
    if scale * REDUCING_GAP < 1:
        import cv2  # only workers fit images; the main process does not load OpenCV

        size = (math.ceil(width * scale * REDUCING_GAP), math.ceil(height * scale * REDUCING_GAP))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return Image.fromarray(image)


STRIP_ROWS = 256
"""Rows of an array resized across at a time by :func:`_lanczos_by_rows` (2.8 MB of a 2814-pixel-wide colour view)."""


def _lanczos_by_rows(image: np.ndarray | Image.Image, size: tuple[int, int]) -> Image.Image:
    """``image`` resized to ``size`` with LANCZOS, byte for byte what Pillow's one ``resize`` gives, without first
    copying a whole array into Pillow (which keeps colour at 4 bytes a pixel: a 2814×3944 scan is 33 MB as an
    array and 44 MB more as an image). Pillow resizes across each row, rounds to 8 bits, then down each column,
    so the first pass is done here on ``STRIP_ROWS`` rows at a time into a ``size[0]``-wide image and the second
    on that: a worker's peak on a colour newspaper page is 25 MB above its view instead of 62. A grey array is
    Pillow's own layout, shared without a copy, so it is resized in one call (80 ms for a 2891×4448 view to
    1024², 94 ms in strips)."""
    if not isinstance(image, np.ndarray) or image.ndim == 2:
        return _resize(Image.fromarray(image) if isinstance(image, np.ndarray) else image, size)
    height, width = image.shape[:2]
    if width == size[0]:
        across = Image.fromarray(image)
    else:
        across = Image.new("L" if image.ndim == 2 else "RGB", (size[0], height))
        for top in range(0, height, STRIP_ROWS):
            rows = Image.fromarray(image[top : top + STRIP_ROWS])
            across.paste(rows.resize((size[0], rows.height), Image.Resampling.LANCZOS), (0, top))
    return across if across.size == size else across.resize(size, Image.Resampling.LANCZOS)


def _fit_max_side(picture: Image.Image, original: tuple[int, int], target: tuple[int, int], upscale: bool) -> Fitted:
    width, height = original
    if max(width, height) > max(target) or (upscale and max(width, height) < max(target)):
        return Fitted(_resize(picture, target, REDUCING_GAP), (width, height), max(width, height) < max(target), False)
    return Fitted(picture.copy(), (width, height), False, max(width, height) < max(target))


def _resize(picture: Image.Image, size: tuple[int, int], reducing_gap: float | None = None) -> Image.Image:
    if picture.size == size:
        return picture.copy()
    return picture.resize(size, Image.Resampling.LANCZOS, reducing_gap=reducing_gap)


def _center_crop(picture: Image.Image, size: tuple[int, int]) -> Image.Image:
    width, height = picture.size
    left, top = (width - size[0]) // 2, (height - size[1]) // 2
    return picture.crop((left, top, left + size[0], top + size[1]))


def _largest_with_aspect(width: int, height: int, aspect: float) -> tuple[int, int]:
    """The largest ``w``×``h`` inside ``width``×``height`` with ``w/h`` = ``aspect``."""
    if width / height > aspect:
        return round(height * aspect), height
    return width, round(width / aspect)


def _round_step(value: float) -> int:
    return max(STEP, round(value / STEP) * STEP)


def _floor_step(value: int) -> int:
    """Round down to a multiple of :data:`STEP`; sides smaller than one step are kept (min_side guards that)."""
    return value - value % STEP if value >= STEP else value
