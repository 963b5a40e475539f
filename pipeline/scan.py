"""Read a scanned page's own image instead of having MuPDF draw the page.

Most archive pages are one full-page scan, often under an invisible OCR text layer. Drawing such a page
makes MuPDF interpret the text layer, decode the scan and run its general image scaler. When the page *is*
its image (one opaque, upright image covering the page, nothing visible drawn over it), the same pixels come
from decoding the image at a reduced size and one OpenCV resize. ``python bench/scan_view.py`` on the 32
real newspaper pages: 172 → 95 ms per page at ``Matrix(2, 2)`` (2–5× on JPEG scans; the 1-bit fax scans gain
little, their decoding is the cost), 87 → 65 ms at the judge's 72 dpi; on the 205 book pages 12 → 7 ms.
Anything less simple (a rotated or flipped scan, masks, transparency, clips, vector art or visible text on
top) is not a scan and is drawn as before.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO, Literal

import cv2
import numpy as np
import pymupdf

from pipeline.judges import Box

mupdf = pymupdf.mupdf

COVER_TOLERANCE = 1.0
"""How far (PDF points) the image's edges may fall inside the page's and still count as covering it."""


@dataclass(frozen=True)
class Scan:
    """A page that is exactly one image: the image, where it lies on the page, its pixels and channels."""

    image: mupdf.FzImage
    rect: pymupdf.Rect
    """The image's rectangle on the page (PDF points, MuPDF's top-down coordinates)."""
    gray: bool
    """One channel (grey or 1-bit scan): the page renders grey without losing anything."""
    jpeg: bytes | None = None
    """The scan's file when it is a plain grey or RGB JPEG: OpenCV's libjpeg-turbo decodes it ~1.5× faster than
    MuPDF's libjpeg, into one array (no second copy), and only the luminance when grey is asked of a colour scan."""
    bilevel: int | None = None
    """The scan's xref when it is a plain 1-bit grey image (a fax-coded newspaper page): MuPDF decodes its stream
    to packed bits and :func:`_reduce_bits` averages them down, as MuPDF's own subsampling does, without the
    full-size 8-bit image (69 MB for a 7200×9600 page) MuPDF would unpack first."""

    @property
    def width(self) -> int:
        return self.image.w()

    @property
    def height(self) -> int:
        return self.image.h()


_CALLBACKS = (
    "fill_image", "fill_path", "stroke_path", "fill_text", "stroke_text", "fill_shade", "fill_image_mask",
    "clip_path", "clip_stroke_path", "clip_text", "clip_stroke_text", "clip_image_mask", "pop_clip",
    "begin_mask", "begin_group", "end_group",
)  # fmt: skip
"""The device calls :class:`_PaintLog` handles; MuPDF skips the rest (``ignore_text`` included) in C."""


class _PaintLog(mupdf.FzDevice2):
    """A MuPDF device that only notes what paints the page, in order; invisible OCR text never calls it.

    It keeps a stack of what encloses the current drawing (clips, soft masks, transparency groups), each
    marked harmless or not for an image covering ``page``: a clip no smaller than the page, a group with
    normal blending at full opacity (MuPDF wraps whole pages in one). Soft masks and other clips are not.
    """

    def __init__(self, page: pymupdf.Rect) -> None:
        super().__init__()
        self.page = page
        self.images: list[tuple[mupdf.FzImage, mupdf.FzMatrix, float, bool]] = []
        """Each image drawn: the image, its transform, its opacity, whether all that encloses it is harmless."""
        self.painted_after_image = False
        self._enclosing: list[bool] = []
        for name in _CALLBACKS:
            getattr(self, f"use_virtual_{name}")()

    def fill_image(self, ctx, image, ctm, alpha, color_params) -> None:
        image = mupdf.FzImage(mupdf.ll_fz_keep_image(image))
        self.images.append((image, mupdf.FzMatrix(ctm), alpha, all(self._enclosing)))

    def _paint(self, *args: object) -> None:
        if self.images:
            self.painted_after_image = True

    fill_path = stroke_path = fill_text = stroke_text = fill_shade = fill_image_mask = _paint

    def clip_path(self, ctx, path, even_odd, ctm, scissor) -> None:
        self._enclosing.append(_covers(mupdf.FzRect(mupdf.ll_fz_bound_path(path, None, ctm)), self.page))

    def _enclose(self, *args: object) -> None:
        self._enclosing.append(False)

    clip_stroke_path = clip_text = clip_stroke_text = clip_image_mask = begin_mask = _enclose

    def begin_group(self, ctx, area, cs, isolated, knockout, blendmode, alpha) -> None:
        self._enclosing.append(blendmode == mupdf.FZ_BLEND_NORMAL and alpha >= 1.0)

    def _leave(self, *args: object) -> None:
        if self._enclosing:
            self._enclosing.pop()

    pop_clip = end_group = _leave


def find_scan(page: pymupdf.Page) -> Scan | None:
    """The page's scan when drawing the page would show exactly that one image, else ``None``.

    Runs the page through a device that records painting operations only (~1 ms, or ~13 ms with a large
    OCR layer, which MuPDF still parses): it neither decodes nor draws anything.
    """
    log = _PaintLog(page.rect)
    try:
        mupdf.fz_run_page(page.this, log, mupdf.FzMatrix(), mupdf.FzCookie())
        mupdf.fz_close_device(log)
    except Exception:  # noqa: BLE001 - a page MuPDF cannot run is drawn (and fails) the usual way
        return None
    if log.painted_after_image or not log.images:
        return None
    image, ctm, alpha, harmless = log.images[-1]
    upright = ctm.a > 0 and ctm.d > 0 and abs(ctm.b) < 1e-6 and abs(ctm.c) < 1e-6
    opaque = alpha >= 1.0 and not image.imagemask() and not image.mask().m_internal and not image.use_colorkey()
    if not (harmless and upright and opaque and image.w() > 0 and image.h() > 0):
        return None
    rect = pymupdf.Rect(ctm.e, ctm.f, ctm.e + ctm.a, ctm.f + ctm.d)
    if not _covers(rect, page.rect):
        return None
    listed = _only_image(page, image)
    return Scan(
        image, rect, gray=image.n() == 1, jpeg=_plain_jpeg(page, image, listed), bilevel=_plain_bilevel(image, listed)
    )


def _only_image(page: pymupdf.Page, image: mupdf.FzImage) -> tuple | None:
    """The page's image list entry (``get_images(full=True)``) of ``image`` when it is the page's only image, has
    no /Decode and its listed size is the decoded one: only then can its stream stand for its pixels."""
    images = page.get_images(full=True)
    if len(images) != 1 or image.use_decode():
        return None
    _xref, _smask, width, height, *_ = images[0]
    return images[0] if (width, height) == (image.w(), image.h()) else None


def _plain_jpeg(page: pymupdf.Page, image: mupdf.FzImage, listed: tuple | None) -> bytes | None:
    """The scan's JPEG data when it is the page's only image (``listed``, :func:`_only_image`), grey or RGB, with
    no /DecodeParms (which could change how its samples read): then any JPEG decoder sees what MuPDF sees. An ICC
    profile is not applied, as in MuPDF's own decoding of a grey or RGB image (:func:`_rgb_or_gray`)."""
    grey_or_rgb = mupdf.fz_colorspace_is_gray(image.colorspace()) or mupdf.fz_colorspace_is_rgb(image.colorspace())
    if listed is None or not grey_or_rgb:
        return None
    xref, *_, decoder = listed[:9]
    doc = page.parent
    plain = doc.xref_get_key(xref, "DecodeParms")[0] == "null" and doc.xref_get_key(xref, "Decode")[0] == "null"
    return doc.xref_stream_raw(xref) if decoder == "DCTDecode" and plain else None


BILEVEL_FILTERS = ("CCITTFaxDecode", "JBIG2Decode", "FlateDecode", "LZWDecode", "RunLengthDecode")
"""Filters MuPDF's stream decoding undoes, as it does when it decodes the image itself."""


def _plain_bilevel(image: mupdf.FzImage, listed: tuple | None) -> int | None:
    """The scan's xref when it is the page's only image (``listed``, :func:`_only_image`), 1-bit DeviceGray, a
    whole number of bytes wide and decoded by a filter in :data:`BILEVEL_FILTERS`: then its decoded stream is
    its pixels."""
    if listed is None or image.n() != 1:
        return None
    xref, _smask, width, _height, bpc, colorspace, _alt, _name, decoder, *_ = listed
    plain = bpc == 1 and colorspace == "DeviceGray" and decoder in BILEVEL_FILTERS and width % 8 == 0
    return xref if plain else None


def _covers(outer: pymupdf.Rect | mupdf.FzRect, page: pymupdf.Rect) -> bool:
    return (
        outer.x0 <= page.x0 + COVER_TOLERANCE
        and outer.y0 <= page.y0 + COVER_TOLERANCE
        and outer.x1 >= page.x1 - COVER_TOLERANCE
        and outer.y1 >= page.y1 - COVER_TOLERANCE
    )


def scan_view(
    page: pymupdf.Page,
    scan: Scan,
    zoom: float,
    colorspace: Literal["gray", "rgb"] = "rgb",
    box: Box | None = None,
    inspect: Callable[[np.ndarray, float], None] | None = None,
    decoded: np.ndarray | None = None,
) -> np.ndarray:
    """The page (or ``box`` of it, page fractions) at ``zoom``, the size ``page.get_pixmap`` would give, from
    the scan alone. A grey scan is returned grey whatever ``colorspace`` says, as the renderer does.
    ``inspect`` is shown the decoded pixels (often up to twice the view's resolution, at no extra cost) and the
    view's pixels per decoded pixel, before they are reduced to the view. ``decoded``: the scan already decoded
    for the whole page at this zoom (:func:`decode_page`), for a page read in strips."""
    clip, width, height, scales = _request(page, scan, zoom, box)
    if decoded is None:
        decoded, owner = _decode(page.parent, scan, *scales, colorspace)
    else:
        owner = None
    dh, dw = decoded.shape[:2]
    left = round((clip.x0 - scan.rect.x0) / scan.rect.width * dw)
    top = round((clip.y0 - scan.rect.y0) / scan.rect.height * dh)
    right = round((clip.x1 - scan.rect.x0) / scan.rect.width * dw)
    bottom = round((clip.y1 - scan.rect.y0) / scan.rect.height * dh)
    region = decoded[max(0, top) : max(top + 1, bottom), max(0, left) : max(left + 1, right)]
    if region.ndim == 3 and colorspace == "gray":
        region = cv2.cvtColor(region, cv2.COLOR_RGB2GRAY)
    if inspect is not None:
        inspect(region, height / region.shape[0])
    # Area averaging where the scan is reduced by more than a fifth; above that, linear interpolation: as fast
    # as a copy, and nearer MuPDF's own scaler (a triangle filter) than an area resize at ratios near 1.
    shrinking = width <= 0.8 * region.shape[1] and height <= 0.8 * region.shape[0]
    view = cv2.resize(region, (width, height), interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)
    del decoded, region, owner  # ``owner`` holds the decoded pixels until the resize has copied them
    return view


def decode_page(page: pymupdf.Page, scan: Scan, zoom: float, colorspace: Literal["gray", "rgb"] = "rgb") -> np.ndarray:
    """The scan decoded as :func:`scan_view` would for the whole page at ``zoom``: OCR reads a page in strips, and
    decoding the scan again for each (0.05-0.1 s on a newspaper page) cost more than reading it. The pixels are the
    scan's own (or reduced), no larger than one strip's decode was."""
    return held(*_decode(page.parent, scan, *_request(page, scan, zoom, None)[3], colorspace))


def _request(
    page: pymupdf.Page, scan: Scan, zoom: float, box: Box | None
) -> tuple[pymupdf.Rect, int, int, tuple[float, float]]:
    """What :func:`scan_view` of ``box`` (page fractions; ``None``: the whole page) at ``zoom`` draws: the clip on
    the page (rounded out to whole pixels, as MuPDF's pixmap covers it), the view's width and height, and the scan's
    least decoded size for it (its width and height in pixels, at least 1)."""
    rect = page.rect
    x0, y0, x1, y1 = box or (0.0, 0.0, 1.0, 1.0)
    clip = pymupdf.Rect(
        rect.x0 + x0 * rect.width, rect.y0 + y0 * rect.height, rect.x0 + x1 * rect.width, rect.y0 + y1 * rect.height
    )
    target = (clip * pymupdf.Matrix(zoom, zoom)).irect
    width, height = max(1, target.width), max(1, target.height)
    clip = pymupdf.Rect(target) / zoom
    scale_x, scale_y = width / (clip.width / scan.rect.width), height / (clip.height / scan.rect.height)
    return clip, width, height, (max(1.0, scale_x), max(1.0, scale_y))


_JPEG_FLAGS = {
    ("gray", 1): cv2.IMREAD_GRAYSCALE,
    ("gray", 2): cv2.IMREAD_REDUCED_GRAYSCALE_2,
    ("gray", 4): cv2.IMREAD_REDUCED_GRAYSCALE_4,
    ("gray", 8): cv2.IMREAD_REDUCED_GRAYSCALE_8,
    ("rgb", 1): cv2.IMREAD_COLOR,
    ("rgb", 2): cv2.IMREAD_REDUCED_COLOR_2,
    ("rgb", 4): cv2.IMREAD_REDUCED_COLOR_4,
    ("rgb", 8): cv2.IMREAD_REDUCED_COLOR_8,
}
"""OpenCV's libjpeg-turbo decoding, reduced in the DCT domain by 1/2, 1/4 or 1/8, straight into one array."""


def _decode(
    doc: pymupdf.Document, scan: Scan, width: float, height: float, colorspace: Literal["gray", "rgb"]
) -> tuple[np.ndarray, object]:
    """The whole scan decoded at no less than ``width``×``height`` pixels (reduced by a power of two where that
    suffices: JPEGs are decoded reduced, other formats subsampled), as ``HxW`` or ``HxWx3`` uint8, with the
    object that owns the pixels."""
    if scan.jpeg is not None and scan.jpeg.rstrip(b"\0\r\n ").endswith(b"\xff\xd9"):  # complete (ends in EOI)
        reduction = next(r for r in (8, 4, 2, 1) if r == 1 or (scan.width // r >= width and scan.height // r >= height))
        flags = _JPEG_FLAGS[("gray" if colorspace == "gray" or scan.gray else "rgb", reduction)]
        with _libjpeg_messages() as messages:
            pixels = cv2.imdecode(np.frombuffer(scan.jpeg, np.uint8), flags | cv2.IMREAD_IGNORE_ORIENTATION)
        _decoder_warnings.extend(messages)
        if pixels is not None:
            pixels = cv2.cvtColor(pixels, cv2.COLOR_BGR2RGB, dst=pixels) if pixels.ndim == 3 else pixels
            return pixels, pixels
    factor = _subsampling(scan, width, height) if scan.bilevel is not None else 1
    if factor in _PAIR_COUNTS:
        packed = doc.xref_stream(scan.bilevel)
        if len(packed) == scan.width // 8 * scan.height:  # else damaged: MuPDF decodes what is there, and says so
            pixels = _reduce_bits(packed, scan.width, scan.height, factor)
            return pixels, pixels
    # Anything else, and a truncated JPEG (MuPDF decodes what is there and says so: the page's warning).
    request = mupdf.FzMatrix(width, 0, 0, height, 0, 0)
    pixmap = _rgb_or_gray(
        mupdf.fz_get_pixmap_from_image(scan.image, mupdf.FzIrect(mupdf.fz_infinite_irect), request)[0]
    )
    return _samples(pixmap), pixmap


def _subsampling(scan: Scan, width: float, height: float) -> int:
    """MuPDF's subsampling factor for an image decoded to at least ``width``×``height``: the largest power of two
    (at most 2⁶) that leaves both sides at least 2 pixels over the (rounded) request (``fz_get_pixmap_from_image``)."""
    w, h = min(scan.width, math.floor(width + 0.5)), min(scan.height, math.floor(height + 0.5))
    factor = 1
    while scan.width // (2 * factor) >= w + 2 and scan.height // (2 * factor) >= h + 2 and factor < 64:
        factor *= 2
    return factor


def _pair_counts(factor: int) -> np.ndarray:
    """For two rows' bytes ``a`` and ``b``, at index ``a * 256 + b``: their set bits counted in runs of ``factor``
    over both rows, one count a byte, as one integer (so a lookup of a pair of rows is a row of counts, read back
    as ``uint8``). One lookup per two input bytes does what unpacking, adding and reshaping would."""
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1)
    runs = bits.reshape(256, 8 // factor, factor).sum(2, dtype=np.uint8)
    pairs = (runs[:, None, :] + runs[None, :, :]).reshape(65536, 8 // factor)
    return np.ascontiguousarray(pairs).view({2: np.uint32, 4: np.uint16, 8: np.uint8}[factor]).ravel()


_PAIR_COUNTS = {factor: _pair_counts(factor) for factor in (2, 4, 8)}
"""1-bit scans are reduced here by 2, 4 or 8 (whole bytes); at full size or by more, MuPDF decodes them
(256 kB, 128 kB and 64 kB of tables)."""

_GREY = {factor: np.minimum(np.arange(256) * 255 // (factor * factor), 255).astype(np.uint8) for factor in (2, 4, 8)}
"""A block's count of white bits to its grey level, as MuPDF rounds it (down)."""


def _reduce_bits(packed: bytes, width: int, height: int, factor: int, strip: int = 256) -> np.ndarray:
    """Packed 1-bit rows (1 white) reduced by ``factor`` as MuPDF's ``fz_subsample_pixmap`` does: each output
    pixel the floor of the mean of its block's 0/255 values (a shorter block on the last row), bit for bit. Worked
    ``strip`` output rows at a time, so nothing holds the full-size image; each pair of rows is one table lookup
    (``python bench/scan_view.py``: a 7200×9600 fax page by 2 in 15 ms, was 43 with a lookup per row)."""
    rows = np.frombuffer(packed, np.uint8).reshape(height, width // 8)
    out = np.empty(((height + factor - 1) // factor, width // factor), np.uint8)
    whole = height - height % factor
    for top in range(0, whole, strip * factor):
        part = rows[top : min(top + strip * factor, whole)]
        blocks = len(part) // factor
        index = part[0::2].astype(np.uint16)
        index <<= 8
        index |= part[1::2]
        counts = np.take(_PAIR_COUNTS[factor], index).view(np.uint8).reshape(blocks, factor // 2, width // factor)
        total = counts[:, 0] if factor == 2 else counts.sum(1, dtype=np.uint8)
        cv2.LUT(total, _GREY[factor], dst=out[top // factor : top // factor + blocks])
    if stray := height - whole:
        last = np.unpackbits(rows[whole:], axis=1).reshape(stray, width // factor, factor)
        out[-1] = last.sum((0, 2), dtype=np.uint16) * 255 // (stray * factor)
    return out


def _rgb_or_gray(pixmap: mupdf.FzPixmap) -> mupdf.FzPixmap:
    """``pixmap`` as it is when grey or RGB without alpha, else converted to RGB (CMYK, Lab, indexed, alpha)."""
    if pixmap.alpha() == 0 and (
        pixmap.n() == 1 or (pixmap.n() == 3 and mupdf.fz_colorspace_is_rgb(pixmap.colorspace()))
    ):
        return pixmap
    return mupdf.fz_convert_pixmap(
        pixmap, mupdf.fz_device_rgb(), mupdf.FzColorspace(), mupdf.FzDefaultColorspaces(None), mupdf.FzColorParams(), 0
    )


def _samples(pixmap: mupdf.FzPixmap) -> np.ndarray:
    """A ``HxW`` or ``HxWx3`` uint8 view of a grey or RGB pixmap's samples (no copy)."""
    n = pixmap.n()
    rows = np.frombuffer(mupdf.fz_pixmap_samples_memoryview(pixmap), dtype=np.uint8).reshape(pixmap.h(), -1)
    pixels = rows[:, : pixmap.w() * n].reshape(pixmap.h(), pixmap.w(), n)
    return held(pixels[..., 0] if n == 1 else pixels, pixmap)


def held(pixels: np.ndarray, pixmap: object) -> np.ndarray:
    """``pixels`` (a view of ``pixmap``'s samples) as an array that keeps ``pixmap`` alive, it and every array
    made from it, plain views included. MuPDF's memoryview does not hold its pixmap, and numpy links a view to
    the array that owns the memory, skipping an ndarray subclass that held it: ``np.asarray`` of such an array
    read freed memory (OCR's band of a drawn page: stale words, and a worker's crash under its allocator
    settings, where a freed block of 4 MB or more is unmapped at once)."""
    return np.asarray(_Holder(pixels, pixmap))


class _Holder:
    """What numpy sees of a pixmap's samples (``__array_interface__``: their address, shape and strides): the base
    of every array made from it, holding the pixmap."""

    def __init__(self, pixels: np.ndarray, pixmap: object) -> None:
        self.__array_interface__ = pixels.__array_interface__
        self.pixels, self.pixmap = pixels, pixmap


LIBJPEG_WARNINGS = ("Corrupt JPEG data", "Premature end of JPEG", "Invalid JPEG", "Bogus", "Warning:", "Unsupported")
"""How libjpeg's warnings begin: it prints them on the process's stderr and decodes on (grey or stale blocks)."""

_decoder_warnings: list[str] = []
_sink: BinaryIO | None = None


def decoder_warnings() -> list[str]:
    """What the JPEG decoder reported since the last call (``Corrupt JPEG data: …``), once each; then forgets."""
    warnings = list(dict.fromkeys(_decoder_warnings))
    _decoder_warnings.clear()
    return warnings


@contextmanager
def _libjpeg_messages() -> Iterator[list[str]]:
    """libjpeg's warnings printed while the block runs, caught from file descriptor 2 (libjpeg writes them
    there, not to its caller): a damaged scan is then flagged in the manifest instead of only on a console.
    Anything else printed meanwhile (another thread of the Space) is passed on to stderr."""
    global _sink
    if _sink is None:
        _sink = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the process: one file, reused per decode
    messages: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    _sink.seek(0)
    _sink.truncate()
    os.dup2(_sink.fileno(), 2)
    try:
        yield messages
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        _sink.seek(0)
        others = []
        for line in _sink.read().decode("utf-8", "replace").splitlines():
            (messages if line.startswith(LIBJPEG_WARNINGS) else others).append(line)
        if others:
            os.write(2, ("\n".join(others) + "\n").encode())
