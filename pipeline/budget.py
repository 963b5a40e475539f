"""A pixel budget per page, checked before anything is decoded or drawn.

A 13 KB PDF can declare a page five metres wide, and an 8.8 KB one a 20,000² JPEG 2000 image: drawn or
decoded, each takes gigabytes in one worker. Such a page is refused (a manifest error that says why) before
MuPDF allocates anything, so a run's memory stays bounded whatever its inputs declare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pymupdf

MAX_VIEW_PIXELS = 50_000_000
"""Most pixels of any view drawn of a page: a judge's view (a 1.2 m square page at 2× still fits) or an output."""

MAX_DECODE_BYTES = 768 * 2**20
"""Most bytes the images of one page may take decoded (the 1856 1-bit scans, 7,200 × 9,600, take 69 MB)."""

DECODE_COST = {"DCTDecode": 1 / 64, "JPXDecode": 5.0}
"""Bytes per decoded sample relative to a plain raster: JPEGs are decoded reduced in the DCT domain (down to
1/8 per side) when drawn small; OpenJPEG holds 32-bit samples beside the output (measured: a 400 MP grey
JPEG 2000 image took 2.0 GB to draw)."""


class OverBudget(Exception):
    """The page would take more memory to judge or render than the budget allows."""


def check_view(width: float, height: float, what: str) -> None:
    """Refuse a view of ``width`` × ``height`` pixels over :data:`MAX_VIEW_PIXELS`."""
    pixels = width * height
    if pixels > MAX_VIEW_PIXELS:
        raise OverBudget(
            f"{what} would be {width:,.0f} × {height:,.0f} px ({pixels / 1e6:,.0f} MP), over the budget of "
            f"{MAX_VIEW_PIXELS / 1e6:,.0f} MP"
        )


def check_page(page: pymupdf.Page, zoom: float) -> None:
    """Refuse a page whose view at ``zoom`` or whose images, decoded, are over the budget (``OverBudget``)."""
    rect = page.rect
    width_mm, height_mm = rect.width * 25.4 / 72, rect.height * 25.4 / 72
    check_view(
        rect.width * zoom, rect.height * zoom, f"the page ({width_mm:,.0f} × {height_mm:,.0f} mm) drawn to judge"
    )
    cost = 0.0
    for image in page.get_images(full=True):
        _xref, _smask, width, height, _bpc, colorspace, _alt, _name, decoder = image[:9]
        samples = 1 if colorspace in ("DeviceGray", "CalGray", "") else 4 if colorspace == "DeviceCMYK" else 3
        cost += width * height * samples * DECODE_COST.get(decoder, 1.0)
    if cost > MAX_DECODE_BYTES:
        raise OverBudget(
            f"its images would take {cost / 2**20:,.0f} MB decoded (largest "
            f"{max(i[2] * i[3] for i in page.get_images(full=True)) / 1e6:,.0f} MP), over the budget of "
            f"{MAX_DECODE_BYTES / 2**20:,.0f} MB"
        )
