"""Render one page (or one region of it) to a numpy array at a chosen scale."""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pymupdf

from pipeline.judges import Box
from pipeline.scan import Scan, held, scan_view

_COLORSPACES = {"gray": pymupdf.csGRAY, "rgb": pymupdf.csRGB}


def render(
    page: pymupdf.Page,
    zoom: float,
    colorspace: Literal["gray", "rgb"] = "rgb",
    box: Box | None = None,
    scan: Scan | None = None,
) -> np.ndarray:
    """Rasterise ``page`` at ``zoom`` × 72 dpi; ``box`` (page fractions) restricts it to a region.

    Returns an ``HxW`` (gray) or ``HxWx3`` (rgb) uint8 array over the pixmap itself (no copy). Given the
    page's ``scan`` (:func:`pipeline.scan.find_scan`), the same view comes from decoding the scan instead,
    faster (``pipeline/scan.py``); a grey scan then comes back grey even when ``rgb`` is asked for.
    """
    if scan is not None:
        return scan_view(page, scan, zoom, colorspace, box)
    clip = None
    if box is not None:
        rect = page.rect
        visible = pymupdf.Rect(
            rect.x0 + box[0] * rect.width,
            rect.y0 + box[1] * rect.height,
            rect.x0 + box[2] * rect.width,
            rect.y0 + box[3] * rect.height,
        )
        clip = visible * page.derotation_matrix if page.rotation else visible
    matrix = pymupdf.Matrix(zoom, zoom)
    return _pixmap_array(page.get_pixmap(matrix=matrix, colorspace=_COLORSPACES[colorspace], clip=clip))


def _pixmap_array(pix: pymupdf.Pixmap) -> np.ndarray:
    """A numpy view of ``pix``'s samples, without a copy (a 2× newspaper page is ~20 MB), that holds the pixmap:
    it is freed when the array and every array made from it are gone (:func:`pipeline.scan.held`)."""
    shape = (pix.height, pix.width) if pix.n == 1 else (pix.height, pix.width, pix.n)
    return held(np.frombuffer(pix.samples_mv, dtype=np.uint8).reshape(shape), pix)


FALLBACK_ZOOM = 300 / 72
"""Full resolution for pages without a scan (born-digital): 300 dpi."""


def native_zoom(page: pymupdf.Page) -> float:
    """The scan's own resolution in pixels per PDF point: rendering above it only interpolates pixels that
    are not there (an upscale in disguise). From the images' pixel sizes over the page's size (exact for a
    full-page scan, a lower bound for smaller images, so never an upscale); without any image, 300 dpi.

    Reading each image's placement instead (``get_image_info``) costs ~35 ms on a page with an OCR layer."""
    rect = page.rect
    scales = [max(image[2] / rect.width, image[3] / rect.height) for image in page.get_images(full=True)]
    return max(scales, default=FALLBACK_ZOOM)


def is_grayscale(page: pymupdf.Page) -> bool:
    """True when the page is a grey or 1-bit scan: every image on it has one channel, so no colour is lost
    by rendering grey (a third of the pixels to make, convert and resize). Pages without images are not.
    """
    images = page.get_images(full=True)
    return bool(images) and all(_channels(page.parent, image) == 1 for image in images)


def _channels(doc: pymupdf.Document, image: tuple) -> int:
    xref, colorspace = image[0], image[5]
    if colorspace in ("DeviceGray", "CalGray") or doc.xref_get_key(xref, "ImageMask")[1] == "true":
        return 1
    if colorspace == "ICCBased":
        kind, value = doc.xref_get_key(xref, "ColorSpace")
        if kind == "xref":  # the colour space array is an object of its own
            value = doc.xref_object(int(value.split()[0]), compressed=True)
        icc = re.search(r"/ICCBased\s+(\d+)\s+0\s+R", value)
        if icc and doc.xref_get_key(int(icc.group(1)), "N")[1] == "1":
            return 1
    return 3


def zoom_to_cover(page: pymupdf.Page, size: int, box: Box | None = None) -> float:
    """The smallest zoom at which the page (or region) is at least ``size`` pixels on both sides.

    Rendering larger than needed only to downscale again wastes time; rendering smaller would upscale.
    """
    width, height = page.rect.width, page.rect.height
    if box is not None:
        width, height = width * (box[2] - box[0]), height * (box[3] - box[1])
    return size / max(min(width, height), 1e-6)
