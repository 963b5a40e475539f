"""Pages that declare more pixels than a worker should hold are refused before anything is decoded or drawn."""

from pathlib import Path

import pymupdf
import pytest
from factories import ARTICLE, engraving, pdf_from_images

from pipeline import Options, run
from pipeline.budget import MAX_DECODE_BYTES, MAX_VIEW_PIXELS
from pipeline.writer import read_manifest


def _declare_jpx(path: Path, page: int, width: int, height: int) -> Path:
    """Make the page's image a JPEG 2000 image declaring ``width`` × ``height`` pixels (its data stays small,
    as in a crafted file; a real one, 8.8 KB, took 2.0 GB to draw)."""
    with pymupdf.open(path) as doc:
        xref = doc[page].get_images(full=True)[0][0]
        doc.xref_set_key(xref, "Filter", "/JPXDecode")
        doc.xref_set_key(xref, "Width", str(width))
        doc.xref_set_key(xref, "Height", str(height))
        doc.saveIncr()
    return path


def test_a_page_kilometres_wide_is_refused_and_the_run_goes_on(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page(width=14_400, height=14_400).insert_text((100, 200), "A poster " * 50, fontsize=40)
    doc.save(tmp_path / "poster.pdf")
    pdf_from_images(tmp_path / "plate.pdf", [engraving(300, 400)])
    run([tmp_path / "poster.pdf", tmp_path / "plate.pdf"], tmp_path / "out.zip", Options(**ARTICLE, size=64))
    poster, plate = read_manifest(tmp_path / "out.zip")
    assert "5,080 × 5,080 mm" in poster["error"] and "over the budget of 50 MP" in poster["error"]
    assert poster["kept"] == "false" and plate["kept"] == "true" and not plate["error"]


def test_an_image_declaring_400_megapixels_is_refused_before_decoding(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "bomb.pdf", [engraving(300, 400), engraving(300, 400, seed=1)])
    _declare_jpx(pdf, 1, 20_000, 20_000)
    summary = run([pdf], tmp_path / "out.zip", Options(**ARTICLE, size=64))
    first, second = read_manifest(tmp_path / "out.zip")
    assert first["kept"] == "true" and not first["error"]
    assert "decoded" in second["error"] and f"over the budget of {MAX_DECODE_BYTES // 2**20:,} MB" in second["error"]
    assert summary.errors == 1


@pytest.mark.parametrize(("zoom_pages", "expected"), [(1, True), (2, False)])
def test_the_judges_resolution_counts(tmp_path: Path, zoom_pages: int, expected: bool) -> None:
    """The sigma judge draws at 2×: a page that fits the budget at 72 dpi may not at 144."""
    side = int((MAX_VIEW_PIXELS / 2) ** 0.5)  # half the budget at 1×, twice it at 2×
    doc = pymupdf.open()
    doc.new_page(width=side, height=side).insert_text((50, 50), "text", fontsize=12)
    doc.save(tmp_path / "big.pdf")
    judge = "structure" if zoom_pages == 1 else "sigma"
    run([tmp_path / "big.pdf"], tmp_path / "out.zip", Options(filter=judge))
    (row,) = read_manifest(tmp_path / "out.zip")
    assert (not row["error"]) is expected, row["error"]
