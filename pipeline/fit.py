"""Fit a rendered image to the dataset's target size and encode it."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def fit_square(image: np.ndarray, size: int) -> Image.Image:
    """Resize to ``size``×``size`` with LANCZOS, as the seed article does (aspect ratio not kept)."""
    return Image.fromarray(image).resize((size, size), Image.Resampling.LANCZOS)


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """JPEG bytes at ``quality`` (the article's 92 by default), ready for the writer."""
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()
