"""A page that is one scan is read from the scan; anything MuPDF would draw differently is not a scan."""

import dataclasses
import gc
import io
import zlib
from pathlib import Path

import cv2
import numpy as np
import pymupdf
import pytest
from factories import ARTICLE, engraving, mixed_page, pdf_from_images, text_page
from PIL import Image

from pipeline import Options, run
from pipeline.render import render
from pipeline.scan import find_scan, scan_view
from pipeline.writer import read_manifest


def _scan_page(tmp_path: Path, image: np.ndarray, name: str = "scan.pdf") -> pymupdf.Document:
    return pymupdf.open(pdf_from_images(tmp_path / name, [image]))


def _jpeg(image: np.ndarray, mode: str = "L") -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image).convert(mode).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _mean_difference(a: np.ndarray, b: np.ndarray) -> float:
    a = cv2.cvtColor(a, cv2.COLOR_RGB2GRAY) if a.ndim == 3 else a
    b = cv2.cvtColor(b, cv2.COLOR_RGB2GRAY) if b.ndim == 3 else b
    return float(np.abs(a.astype(np.int16) - b).mean())


def test_a_plain_array_made_from_a_drawing_keeps_its_pixels_once_the_drawing_is_gone() -> None:
    """``render`` hands out MuPDF's own pixels (no copy): any array made from them, ``np.asarray`` as OCR did
    included, must keep the pixmap alive, or it reads freed memory that the next drawing fills."""
    with pymupdf.open() as doc:
        page = doc.new_page(width=600, height=800)
        page.insert_text((50, 100), "THE IMPERIAL PALACE", fontsize=40)
        expected = np.array(render(page, 4.0, "gray"))  # a copy
        plain = np.asarray(render(page, 4.0, "gray"))  # the array render returned is gone at once
        gc.collect()
        others = [pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 2400, 3200), 0) for _ in range(3)]
        for other in others:
            other.clear_with(7)
        assert type(plain) is np.ndarray and np.array_equal(plain, expected)


@pytest.mark.parametrize("zoom", [0.5, 1.0, 72 / 100, 2.0])
def test_a_scan_view_has_the_drawings_size_and_pixels(tmp_path: Path, zoom: float) -> None:
    page = _scan_page(tmp_path, mixed_page(900, 1200, seed=4))[0]
    scan = find_scan(page)
    assert scan is not None and scan.gray and (scan.width, scan.height) == (900, 1200)
    assert scan.jpeg is not None  # a plain grey JPEG: decoded by Pillow
    drawn, decoded = render(page, zoom, "gray"), scan_view(page, scan, zoom, "gray")
    assert decoded.shape == drawn.shape
    assert _mean_difference(decoded, drawn) < 4.0  # resampling differences on pixel-sized noise (of 0..255)


def test_a_region_of_a_scan_is_the_same_region_drawn(tmp_path: Path) -> None:
    # The region is cropped from the scan at whole pixels: up to half a pixel off MuPDF's grid, so not equal
    # pixel for pixel, but far nearer to the drawn region than the same region two pixels further on.
    page = _scan_page(tmp_path, mixed_page(900, 1200, seed=5))[0]
    scan, box = find_scan(page), (0.1, 0.45, 0.9, 0.95)
    drawn, decoded = render(page, 1.5, "gray", box), render(page, 1.5, "gray", box, scan)
    assert decoded.shape == drawn.shape
    for shift in [(0, 2), (2, 0)]:
        assert _mean_difference(decoded, drawn) < 0.5 * _mean_difference(np.roll(decoded, shift, (0, 1)), drawn)


def test_colour_scans_come_rgb_and_grey_scans_grey_whatever_is_asked(tmp_path: Path) -> None:
    colour = np.dstack([engraving(600, 800, seed=1), text_page(600, 800, seed=2), engraving(600, 800, seed=3)])
    page = _scan_page(tmp_path, colour, "colour.pdf")[0]
    scan = find_scan(page)
    assert scan is not None and not scan.gray
    rgb = scan_view(page, scan, 1.0, "rgb")
    assert rgb.ndim == 3 and _mean_difference(rgb, render(page, 1.0, "rgb")) < 3.0
    assert scan_view(page, scan, 1.0, "gray").ndim == 2
    grey_page = _scan_page(tmp_path, text_page(600, 800), "grey.pdf")[0]
    assert scan_view(grey_page, find_scan(grey_page), 1.0, "rgb").ndim == 2


def test_cmyk_scans_are_converted_as_mupdf_draws_them(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    colour = np.dstack([engraving(600, 800, seed=1), mixed_page(600, 800, seed=2), engraving(600, 800, seed=3)])
    page.insert_image(page.rect, stream=_jpeg(colour, "CMYK"))
    scan = find_scan(page)
    assert scan is not None and scan.jpeg is None  # CMYK: MuPDF decodes and converts it
    assert _mean_difference(scan_view(page, scan, 1.0, "rgb"), render(page, 1.0, "rgb")) < 3.0


def test_invisible_ocr_text_over_the_scan_keeps_it_a_scan(tmp_path: Path) -> None:
    page = _scan_page(tmp_path, text_page(600, 800))[0]
    page.insert_text((50, 100), "OCR layer " * 20, render_mode=3)
    assert find_scan(page) is not None


def test_white_text_under_the_scan_keeps_it_a_scan() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    page.insert_text((50, 100), "hidden under the scan", color=(1, 1, 1))
    page.insert_image(page.rect, stream=_jpeg(text_page(600, 800)))
    assert find_scan(page) is not None


@pytest.mark.parametrize(
    "draw_over",
    [
        lambda page: page.insert_text((50, 100), "visible text", render_mode=0),
        lambda page: page.draw_rect(pymupdf.Rect(10, 10, 100, 100), color=(1, 0, 0)),
        lambda page: page.insert_image(pymupdf.Rect(0, 0, 50, 50), stream=_jpeg(engraving(64, 64))),
    ],
    ids=["text", "vector", "second image"],
)
def test_anything_visible_over_the_scan_means_the_page_is_drawn(tmp_path: Path, draw_over) -> None:
    page = _scan_page(tmp_path, text_page(600, 800))[0]
    draw_over(page)
    assert find_scan(page) is None


def test_an_image_that_does_not_cover_the_page_is_not_a_scan() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    page.insert_image(pymupdf.Rect(36, 36, 396, 540), stream=_jpeg(engraving(600, 800)))
    assert find_scan(page) is None


@pytest.mark.parametrize("rotate", [90, 180])
def test_rotated_scans_are_drawn_not_decoded(rotate: int) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=576, height=576)
    page.insert_image(page.rect, stream=_jpeg(engraving(700, 700)), rotate=rotate, keep_proportion=False)
    assert find_scan(page) is None


def test_a_rotated_page_is_drawn_not_decoded(tmp_path: Path) -> None:
    page = _scan_page(tmp_path, text_page(600, 800))[0]
    page.set_rotation(90)
    assert find_scan(page) is None


def test_a_scan_with_transparency_is_not_a_scan() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    rgba = np.dstack([engraving(600, 800)] * 3 + [np.full((800, 600), 128, np.uint8)])
    buffer = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buffer, format="PNG")
    page.insert_image(page.rect, stream=buffer.getvalue())
    assert find_scan(page) is None


def test_a_clip_smaller_than_the_page_makes_it_drawn(tmp_path: Path) -> None:
    doc = _scan_page(tmp_path, text_page(600, 800))
    page = doc[0]
    xref = page.get_contents()[0]
    doc.update_stream(xref, b"q 20 20 200 300 re W n\n" + doc.xref_stream(xref) + b"\nQ")
    assert find_scan(doc[0]) is None
    doc.update_stream(xref, b"q 0 0 1000 1000 re W n\n" + doc.xref_stream(xref)[len(b"q 20 20 200 300 re W n\n") :])
    assert find_scan(doc[0]) is not None  # a clip larger than the page changes nothing


def test_one_bit_scans_are_decoded_like_mupdf_draws_them() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    bits = (text_page(1200, 1600, seed=7) > 128).astype(np.uint8) * 255
    buffer = io.BytesIO()
    Image.fromarray(bits).convert("1").save(buffer, format="TIFF", compression="group4")
    page.insert_image(page.rect, stream=buffer.getvalue())
    scan = find_scan(page)
    assert scan is not None and scan.gray and scan.jpeg is None
    assert _mean_difference(scan_view(page, scan, 1.0, "gray"), render(page, 1.0, "gray")) < 4.0


def _one_bit_page(bits: np.ndarray, compression: str) -> pymupdf.Page:
    """A page that is one 1-bit DeviceGray scan of ``bits`` (0/255), CCITT G4 or Flate coded as archives have them."""
    height, width = bits.shape
    if compression == "CCITTFaxDecode":
        buffer = io.BytesIO()
        Image.fromarray(bits).convert("1").save(buffer, format="TIFF", compression="group4")
        tiff = Image.open(buffer)
        start, length = tiff.tag_v2[273][0], tiff.tag_v2[279][0]
        data, parms = buffer.getvalue()[start : start + length], f"<< /K -1 /Columns {width} /Rows {height} >>"
    else:
        data, parms = zlib.compress(np.packbits(bits > 0, axis=1).tobytes()), None
    doc = pymupdf.open()
    page = doc.new_page(width=288, height=288 * height / width)
    page.insert_image(page.rect, stream=_jpeg(bits))
    xref = page.get_images()[0][0]
    image = f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height} /BitsPerComponent 1 >>"
    doc.update_object(xref, image)
    doc.update_stream(xref, data, compress=False)
    doc.xref_set_key(xref, "ColorSpace", "/DeviceGray")
    doc.xref_set_key(xref, "Filter", f"/{compression}")
    if parms:
        doc.xref_set_key(xref, "DecodeParms", parms)
    return doc[0]


@pytest.mark.parametrize("compression", ["CCITTFaxDecode", "FlateDecode"])
@pytest.mark.parametrize("zoom", [2.0, 1.0, 0.5, 0.2])  # MuPDF subsamples by 2, 4, 8; by 16 it decodes it itself
def test_one_bit_scans_reduced_from_their_bits_are_mupdfs_own_pixels(compression: str, zoom: float) -> None:
    page = _one_bit_page((text_page(1200, 1603, seed=3) > 128).astype(np.uint8) * 255, compression)  # 1603: a
    scan = find_scan(page)  # shorter last block
    assert scan is not None and scan.bilevel is not None
    decoded_by_mupdf = scan_view(page, dataclasses.replace(scan, bilevel=None), zoom, "gray")
    pymupdf.TOOLS.store_shrink(100)  # else MuPDF would reuse its decoded image
    assert np.array_equal(scan_view(page, scan, zoom, "gray"), decoded_by_mupdf)


def test_a_truncated_jpeg_scan_is_decoded_as_far_as_mupdf_can() -> None:
    data = _jpeg(text_page(600, 800))
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    page.insert_image(page.rect, stream=data[: len(data) * 2 // 3])  # Pillow refuses it; MuPDF decodes the rest
    scan = find_scan(page)
    assert scan is not None and scan.jpeg is not None
    view = scan_view(page, scan, 1.0, "gray")
    assert view.shape == (576, 432) and _mean_difference(view, render(page, 1.0, "gray")) < 3.0


def test_a_damaged_jpeg_scan_is_flagged_in_the_manifest(tmp_path: Path) -> None:
    """libjpeg decodes damaged data on and only prints a warning: the page's warning column must say so."""
    _, jpeg = cv2.imencode(".jpg", engraving(300, 400), [cv2.IMWRITE_JPEG_QUALITY, 90])
    data = jpeg.tobytes()
    damaged = data[:-2] + b"\x00" * 40 + data[-2:]  # junk before the end marker
    doc = pymupdf.open()
    for stream in (data, damaged):
        page = doc.new_page(width=216, height=288)
        page.insert_image(page.rect, stream=stream)
    doc.save(tmp_path / "scans.pdf")
    run([tmp_path / "scans.pdf"], tmp_path / "out.zip", Options(**ARTICLE, size=64))
    clean, flagged = read_manifest(tmp_path / "out.zip")
    assert clean["warning"] == ""
    assert (
        flagged["warning"].startswith("Corrupt JPEG data: ")
        and "extraneous bytes before marker 0xd9" in flagged["warning"]
    )
    assert flagged["kept"] == "true", "still processed: the picture is whole"
