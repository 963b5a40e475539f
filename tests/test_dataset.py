"""End to end: generated scanned PDFs → a LoRA-ready dataset (buckets, no upscaling, no duplicates, captions)."""

import csv
import io
import json
import math
import zipfile
from pathlib import Path

import pytest
import tomllib
from factories import large_engraving, pdf_from_images, text_page
from PIL import Image

from pipeline import Options, run

CAPTION = "an engraving in the style of {trigger}, {source} page {page}"


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Portrait, landscape, panoramic and a small plate (below the target, above the minimum), plus text."""
    folder = tmp_path_factory.mktemp("scans")
    pages = [
        large_engraving(1500, 2000, seed=1),  # 3:4 portrait, larger than any bucket
        large_engraving(2400, 1500, seed=2),  # 16:10 landscape
        large_engraving(3000, 1200, seed=3),  # 5:2 panorama
        large_engraving(700, 600, seed=4),  # small: kept at its size, not upscaled
        large_engraving(400, 300, seed=5),  # under --min-side: dropped
        text_page(1200, 1600, seed=6, ink=0.05),
    ]
    pdf_from_images(folder / "vestnik 1890.pdf", pages, dpi=150)
    return folder


def _read(zip_path: Path) -> tuple[list[dict[str, str]], zipfile.ZipFile]:
    archive = zipfile.ZipFile(zip_path)
    return list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode()))), archive


def test_bucket_fit_keeps_aspect_ratios_and_never_upscales(tmp_path: Path, scans: Path) -> None:
    summary = run([scans], tmp_path / "out.zip", Options(filter="sigma", caption=CAPTION, trigger="vestnik mody"))
    rows, archive = _read(tmp_path / "out.zip")
    by_page = {int(row["page"]): row for row in rows}
    assert [by_page[p]["kept"] for p in range(1, 7)] == ["true"] * 5 + ["false"]
    expected = {1: (896, 1152), 2: (1344, 768), 3: (1536, 640)}  # 3:4, 16:10 (nearer 7:4 than 19:13), 5:2
    for page, bucket in expected.items():
        with Image.open(archive.open(f"vestnik 1890_p{page:04d}.jpg")) as image:
            assert image.size == bucket
        assert by_page[page]["sizes"] == f"{bucket[0]}x{bucket[1]}"
    with Image.open(archive.open("vestnik 1890_p0004.jpg")) as small:
        width, height = small.size
    assert width <= 700 and height <= 600 and width % 64 == 0 and height % 64 == 0  # its own pixels, cropped
    assert math.isclose(width / height, 1024 / 1024, rel_tol=0.2)
    assert by_page[4]["undersized"] == "vestnik 1890_p0004.jpg"
    assert by_page[5]["too_small"] == "vestnik 1890_p0005.jpg" and by_page[5]["outputs"] == ""
    assert (summary.images, summary.too_small) == (4, 1)
    assert (
        archive.read("vestnik 1890_p0002.txt").decode()
        == "an engraving in the style of vestnik mody, vestnik 1890 page 2"
    )
    assert "threshold 45" in archive.read("report.html").decode()


def test_the_same_pdfs_twice_keep_each_image_once(tmp_path: Path, scans: Path) -> None:
    twice = tmp_path / "twice"
    twice.mkdir()
    original = (scans / "vestnik 1890.pdf").read_bytes()
    (twice / "a.pdf").write_bytes(original)
    (twice / "b.pdf").write_bytes(original)
    summary = run([twice], tmp_path / "out.zip", Options(filter="sigma"))
    rows, archive = _read(tmp_path / "out.zip")
    images = [name for name in archive.namelist() if name.endswith(".jpg")]
    assert sorted(images) == [f"a_p000{p}.jpg" for p in (1, 2, 3, 4)]
    second = {int(row["page"]): row for row in rows if row["source"] == "b.pdf"}
    for page in (1, 2, 3, 4):
        assert second[page]["duplicates"] == f"b_p000{page}.jpg=a_p000{page}.jpg"
        assert second[page]["outputs"] == ""
    assert summary.duplicates == 4


def test_dedupe_can_be_turned_off(tmp_path: Path, scans: Path) -> None:
    twice = tmp_path / "twice"
    twice.mkdir()
    for name in ("a.pdf", "b.pdf"):
        (twice / name).write_bytes((scans / "vestnik 1890.pdf").read_bytes())
    summary = run([twice], tmp_path / "out", Options(filter="sigma", dedupe=None))
    assert summary.images == 8 and summary.duplicates == 0


def test_the_dataset_loads_with_hugging_face_imagefolder(tmp_path: Path, scans: Path) -> None:
    datasets = pytest.importorskip("datasets")
    run(
        [scans],
        tmp_path / "dataset",
        Options(filter="sigma", caption=CAPTION, trigger="vestnik mody", kohya_config=True),
    )
    loaded = datasets.load_dataset("imagefolder", data_dir=str(tmp_path / "dataset"), split="train")
    assert len(loaded) == 4
    texts = sorted(loaded["text"])
    assert texts[0] == "an engraving in the style of vestnik mody, vestnik 1890 page 1"
    sizes = sorted(image.size for image in loaded["image"])
    assert (1536, 640) in sizes and (896, 1152) in sizes
    config = (tmp_path / "dataset" / "dataset_config.toml").read_text()
    assert "bucket_no_upscale = true" in config and "enable_bucket = true" in config
    image_dir = Path(tomllib.loads(config)["datasets"][0]["subsets"][0]["image_dir"])
    assert image_dir.is_absolute() and image_dir == (tmp_path / "dataset").resolve(), "kohya finds it from anywhere"
    assert len(list(image_dir.glob("*.jpg"))) == 4
    lines = (tmp_path / "dataset" / "metadata.jsonl").read_text().splitlines()
    assert {json.loads(line)["file_name"] for line in lines} == {f"vestnik 1890_p000{p}.jpg" for p in (1, 2, 3, 4)}


def test_the_kohya_config_of_a_zip_names_where_to_extract_it(tmp_path: Path, scans: Path) -> None:
    run([scans], tmp_path / "out.zip", Options(filter="sigma", kohya_config=True))
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        config = archive.read("dataset_config.toml").decode()
        image_dir = Path(tomllib.loads(config)["datasets"][0]["subsets"][0]["image_dir"])
        assert image_dir == (tmp_path / "out").resolve()
        assert f"unzip {tmp_path / 'out.zip'} -d {image_dir}" in config
        archive.extractall(image_dir)  # what the command in the config does
    assert len(list(image_dir.glob("*.jpg"))) == 4 and len(list(image_dir.glob("*.txt"))) == 4
