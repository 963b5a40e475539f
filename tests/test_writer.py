import csv
import io
import zipfile
from pathlib import Path

import pytest

from pipeline.manifest import COLUMNS, PageRecord
from pipeline.writer import FolderWriter, OutputError, ZipWriter, open_writer, read_images


def _manifest(archive: zipfile.ZipFile) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))


def test_zip_stores_images_uncompressed_and_manifest_at_root(tmp_path: Path) -> None:
    writer = open_writer(tmp_path / "out.zip")
    assert isinstance(writer, ZipWriter)
    writer.add_image("doc_p0001.jpg", b"\xff\xd8jpeg")
    writer.add_record(PageRecord("doc.pdf", 1, kept=True, score=50.0, outputs=["doc_p0001.jpg"]))
    writer.add_record(PageRecord("doc.pdf", 2, score=10.0))
    writer.close()
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        assert archive.getinfo("doc_p0001.jpg").compress_type == zipfile.ZIP_STORED
        rows = _manifest(archive)
    assert list(rows[0]) == list(COLUMNS)
    assert rows[0] | {} == {
        "source": "doc.pdf",
        "page": "1",
        "kept": "true",
        "score": "50.0000",
        "boxes": "",
        "outputs": "doc_p0001.jpg",
        "error": "",
    }
    assert rows[1]["kept"] == "false" and rows[1]["outputs"] == ""


def test_folder_writer_flushes_each_manifest_row(tmp_path: Path) -> None:
    writer = open_writer(tmp_path / "dataset")
    assert isinstance(writer, FolderWriter)
    writer.add_record(PageRecord("a.pdf", None, error="a.pdf: not a PDF"))
    rows = list(csv.DictReader((tmp_path / "dataset" / "manifest.csv").open()))
    assert rows == [{"source": "a.pdf", "page": "", "kept": "false", "score": "", "boxes": "", "outputs": "",
                     "error": "a.pdf: not a PDF"}]  # fmt: skip
    writer.close()


def test_manifest_records_boxes_as_page_fractions() -> None:
    row = PageRecord("a.pdf", 3, kept=True, score=0.9, boxes=((0.1, 0.2, 0.5, 0.6), (0, 0, 1, 0.25))).row()
    assert row["boxes"] == "0.1000 0.2000 0.5000 0.6000;0.0000 0.0000 1.0000 0.2500"


def test_unwritable_output_raises_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="cannot write"):
        open_writer(blocker / "out.zip")


def test_read_images_returns_jpegs_with_names(tmp_path: Path) -> None:
    import numpy as np

    from pipeline.fit import encode_jpeg, fit_square

    jpeg = encode_jpeg(fit_square(np.zeros((8, 8, 3), np.uint8), 16), 90)
    writer = open_writer(tmp_path / "out.zip")
    for n in range(3):
        writer.add_image(f"x_p{n:04d}.jpg", jpeg)
    writer.close()
    images = read_images(tmp_path / "out.zip", limit=2)
    assert [name for _, name in images] == ["x_p0000.jpg", "x_p0001.jpg"]
    assert images[0][0].size == (16, 16)
