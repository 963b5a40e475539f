"""The review step (``pipeline.review``) on a zip the real pipeline wrote from a PDF made with PyMuPDF: captions
edited, images left out, the manifest's account of it, kohya's config on request, refusals, and the paging the Space
shows."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tracemalloc
import zipfile
from pathlib import Path

import pytest
import tomllib
from factories import mixed_page, pdf_from_images
from PIL import Image

from pipeline import Execution, Options, run
from pipeline.manifest import COLUMNS
from pipeline.review import (
    REVIEW_COLUMNS,
    DatasetGone,
    Review,
    ReviewError,
    clean_caption,
    kohya_folder,
    read_items,
    reviewed_name,
    thumbnails,
    write_review,
)

TRIGGER = "vstnkmd"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four pages, each a picture above text columns: four region images with their captions."""
    folder = tmp_path_factory.mktemp("review")
    pdf = pdf_from_images(folder / "plates.pdf", [mixed_page(1000, 1400, seed=s) for s in (1, 2, 3, 4)], quality=60)
    summary = run([pdf], folder / "plates_dataset.zip", Options(size=512, min_side=256, trigger=TRIGGER), Execution())
    return summary.output


def _entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _manifest(data: bytes) -> tuple[list[str], list[dict[str, str]]]:
    rows = csv.DictReader(io.StringIO(data.decode("utf-8")))
    return list(rows.fieldnames or []), list(rows)


def _metadata(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def test_every_written_image_is_read_with_its_caption(dataset: Path) -> None:
    entries = _entries(dataset)
    items = read_items(dataset)
    _, rows = _manifest(entries["manifest.csv"])
    assert (
        [item.name for item in items]
        == [row["outputs"] for row in rows]
        == [f"plates_p000{page}_r1.jpg" for page in (1, 2, 3, 4)]
    )
    for item in items:
        assert item.caption == entries[item.name.replace(".jpg", ".txt")].decode("utf-8")
        assert item.caption.startswith(f"{TRIGGER}, monochrome ") and item.source == "plates.pdf"
    assert [item.page for item in items] == [1, 2, 3, 4]


def test_a_review_rewrites_captions_leaves_images_out_and_says_so(dataset: Path, tmp_path: Path) -> None:
    first, second, *_ = read_items(dataset)
    target = tmp_path / reviewed_name(dataset)
    outcome = write_review(dataset, target, {first.name: "  an Engraving,, of a\nhorse , "}, [second.name])
    assert target.name == "plates_dataset_reviewed.zip"
    assert outcome.describe() == "3 images (1 caption edited, 1 image left out), without kohya's dataset_config.toml."

    before, after = _entries(dataset), _entries(target)
    gone = {second.name, second.name.replace(".jpg", ".txt")}
    assert list(after) == [name for name in before if name not in gone], "the same entries, in the same order"
    edited = "an Engraving, of a horse"  # cleaned as the pipeline cleans captions: one line, no empty tags
    assert after[first.name.replace(".jpg", ".txt")] == edited.encode()
    for name in after.keys() - {"manifest.csv", "metadata.jsonl", first.name.replace(".jpg", ".txt")}:
        assert after[name] == before[name], f"{name} is copied unchanged"

    lines_before, lines_after = before["metadata.jsonl"].splitlines(), after["metadata.jsonl"].splitlines()
    assert [line["file_name"] for line in _metadata(after["metadata.jsonl"])] == [
        item.name for item in read_items(dataset) if item.name != second.name
    ]
    assert _metadata(lines_after[0]) == [_metadata(lines_before[0])[0] | {"text": edited}]
    assert lines_after[1:] == lines_before[2:], "the other lines byte for byte"

    columns, rows = _manifest(after["manifest.csv"])
    _, original = _manifest(before["manifest.csv"])
    assert columns == [*COLUMNS, *REVIEW_COLUMNS]
    assert len(rows) == len(original), "every page keeps its row: the judge's verdict is still true"
    assert [r["kept"] for r in rows] == [r["kept"] for r in original] == ["true"] * 4
    assert (rows[0]["outputs"], rows[0]["review_edited"], rows[0]["review_dropped"]) == (first.name, first.name, "")
    assert (rows[1]["outputs"], rows[1]["sizes"], rows[1]["fingerprints"], rows[1]["undersized"]) == ("",) * 4
    assert (rows[1]["review_dropped"], rows[1]["review_edited"]) == (second.name, "")
    assert original[1]["sizes"] and original[1]["fingerprints"], "what was there is what went"
    for row, was in zip(rows, original, strict=True):
        if row["outputs"]:
            assert {k: row[k] for k in COLUMNS} == was, "rows of kept images are the run's"


def test_a_reviewed_zip_reviewed_again_keeps_the_first_reviews_account(dataset: Path, tmp_path: Path) -> None:
    first, second, third, _ = read_items(dataset)
    write_review(dataset, tmp_path / "once.zip", {first.name: "a horse", third.name: "a cart"}, [second.name])
    write_review(tmp_path / "once.zip", tmp_path / "twice.zip", {}, [third.name])
    _, rows = _manifest(_entries(tmp_path / "twice.zip")["manifest.csv"])
    assert [(r["review_dropped"], r["review_edited"]) for r in rows] == [
        ("", first.name),
        (second.name, ""),
        (third.name, ""),  # edited, then left out: left out
        ("", ""),
    ]


def test_kohya_config_is_added_on_request_and_otherwise_left_out(dataset: Path, tmp_path: Path) -> None:
    target = tmp_path / "with.zip"
    write_review(dataset, target, kohya_dir="/data/plates_dataset_reviewed", size=768)
    toml = _entries(target)["dataset_config.toml"].decode()
    config = tomllib.loads(toml)
    assert config["datasets"][0]["subsets"][0]["image_dir"] == "/data/plates_dataset_reviewed"
    assert config["general"]["resolution"] == 768 and config["general"]["caption_extension"] == ".txt"
    assert "unzip with.zip -d /data/plates_dataset_reviewed" in toml.splitlines()[1]
    windows = write_review(dataset, tmp_path / "win.zip", kohya_dir=r"D:\lora\plates")
    assert windows.kohya and tomllib.loads(_entries(tmp_path / "win.zip")["dataset_config.toml"].decode())

    had_one = tmp_path / "had_one.zip"  # a CLI run with --kohya-config: its config names the old folder
    shutil.copy(dataset, had_one)
    with zipfile.ZipFile(had_one, "a") as archive:
        archive.writestr("dataset_config.toml", "[general]\n")
    write_review(had_one, tmp_path / "without.zip")
    assert "dataset_config.toml" not in _entries(tmp_path / "without.zip")
    assert kohya_folder("x/plates_dataset.zip") == "/data/plates_dataset_reviewed"
    assert kohya_folder("plates_dataset.zip", " /mnt/sets/plates ") == "/mnt/sets/plates"


def test_the_same_review_gives_the_same_bytes(dataset: Path, tmp_path: Path) -> None:
    """Entries dated 1980 like the writer's, not by the clock: a reviewed dataset can be checked by its hash."""
    first, second, *_ = read_items(dataset)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        write_review(dataset, tmp_path / folder / "out.zip", {first.name: "a horse"}, [second.name], "/data/x")
    assert (tmp_path / "a" / "out.zip").read_bytes() == (tmp_path / "b" / "out.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "a" / "out.zip") as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert archive.getinfo(first.name).compress_type == zipfile.ZIP_STORED, "JPEGs stay stored"
        assert archive.getinfo("manifest.csv").compress_type == zipfile.ZIP_DEFLATED
        assert archive.testzip() is None


def test_entries_are_streamed_not_read_whole(dataset: Path, tmp_path: Path) -> None:
    """A 48 MB entry goes through in pieces: the rewrite's peak memory stays a fraction of it."""
    big = tmp_path / "big.zip"
    shutil.copy(dataset, big)
    with zipfile.ZipFile(big, "a") as archive:
        archive.writestr("extra.bin", os.urandom(48 * 2**20))
    first, *_ = read_items(big)
    tracemalloc.start()
    try:
        write_review(big, tmp_path / "out.zip", {first.name: "a horse"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MB"
    assert (tmp_path / "out.zip").stat().st_size > 48 * 2**20


@pytest.mark.parametrize(
    ("captions", "drop", "kohya_dir", "message"),
    [
        ({0: " , \n "}, [], None, "The caption of plates_p0001_r1.jpg is empty: write one, or drop the image."),
        ({"nope.jpg": "x"}, [], None, "nope.jpg is not an image of this dataset (4 images)."),
        ({}, ["other.jpg"], None, "other.jpg is not an image of this dataset"),
        ({}, [0, 1, 2, 3], None, "Every image is left out: nothing would be left to train on."),
        ({}, [], "data/plates", "kohya's image folder must be an absolute path, not 'data/plates'"),
    ],
    ids=["empty caption", "unknown caption", "unknown drop", "all dropped", "relative kohya folder"],
)
def test_what_cannot_be_written_is_refused_before_a_byte_is(
    dataset: Path, tmp_path: Path, captions: dict, drop: list, kohya_dir: str | None, message: str
) -> None:
    names = [item.name for item in read_items(dataset)]
    captions = {names[k] if isinstance(k, int) else k: v for k, v in captions.items()}
    drop = [names[k] if isinstance(k, int) else k for k in drop]
    with pytest.raises(ReviewError) as info:
        write_review(dataset, tmp_path / "out.zip", captions, drop, kohya_dir)
    assert str(info.value).startswith(message)
    assert not list(tmp_path.iterdir()), "nothing written, not even a partial file"


def test_an_empty_caption_of_an_image_left_out_is_no_matter(dataset: Path, tmp_path: Path) -> None:
    first, *_ = read_items(dataset)
    assert write_review(dataset, tmp_path / "out.zip", {first.name: ""}, [first.name]).dropped == (first.name,)


def test_what_is_not_a_dataset_zip_is_named(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetGone, match=r"gone\.zip is no longer there"):
        read_items(tmp_path / "gone.zip")
    (tmp_path / "text.zip").write_text("not a zip")
    with pytest.raises(ReviewError, match=r"text\.zip is not a zip that can be read"):
        write_review(tmp_path / "text.zip", tmp_path / "out.zip")
    with zipfile.ZipFile(tmp_path / "pdfs.zip", "w") as archive:
        archive.writestr("issue.pdf", "%PDF-1.7")
    with pytest.raises(ReviewError, match=r"pdfs\.zip is not a dataset zip made by this pipeline"):
        Review.open(tmp_path / "pdfs.zip", 1024)


def _altered(dataset: Path, target: Path, name: str, data: bytes | None) -> Path:
    """``dataset`` with its entry ``name`` replaced by ``data`` (``None``: left out)."""
    with zipfile.ZipFile(dataset) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if info.filename != name:
                out.writestr(info.filename, source.read(info))
        if data is not None:
            out.writestr(name, data)
    return target


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda lines: [b"not json\n", *lines[1:]], "metadata.jsonl line 1 is not an image's record"),
        (lambda lines: [*lines[:2], b'["a list"]\n', *lines[3:]], "metadata.jsonl line 3 is not an image's record"),
        (lambda lines: [b'{"file_name": ["x"], "text": "t"}\n', *lines[1:]], "line 1 is not an image's record"),
        (lambda lines: [b'{"file_name": "a.jpg"}\n', *lines[1:]], "line 1 is not an image's record"),
        (lambda lines: [b"\xff\xfe\n", *lines[1:]], "line 1 is not an image's record"),
        (lambda lines: [b'{"file_name": "gone.jpg", "text": "t"}\n', *lines[1:]], "names gone.jpg, which the zip"),
    ],
)
def test_a_dataset_zip_whose_metadata_is_damaged_is_named_not_a_crash(
    dataset: Path, tmp_path: Path, change, said: str
) -> None:
    """Each of these came back to the Space's caller as a bare "Error" (JSONDecodeError, KeyError, TypeError...)."""
    with zipfile.ZipFile(dataset) as archive:
        lines = archive.read("metadata.jsonl").splitlines(keepends=True)
    damaged = _altered(dataset, tmp_path / "damaged.zip", "metadata.jsonl", b"".join(change(lines)))
    with pytest.raises(ReviewError, match=said):
        Review.open(damaged, 1024)
    if "gone.jpg" not in said:
        with pytest.raises(ReviewError, match=said):
            write_review(damaged, tmp_path / "out.zip")


def test_a_metadata_file_that_unpacks_to_gigabytes_is_refused_unread(dataset: Path, tmp_path: Path) -> None:
    """A half-megabyte upload whose metadata.jsonl is one 512 MB line took 1.6 GB of the server's memory to open."""
    bomb = _altered(dataset, tmp_path / "bomb.zip", "metadata.jsonl", b"x" * (65 << 20))
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ReviewError, match=r"metadata\.jsonl unpacks to 65 MB, more than a review opens"):
            Review.open(bomb, 1024)
        assert tracemalloc.get_traced_memory()[1] < 8 << 20
    finally:
        tracemalloc.stop()


def test_an_entry_that_is_no_image_or_a_bomb_is_named_when_shown(dataset: Path, tmp_path: Path) -> None:
    first = read_items(dataset)[0].name
    for data, said in ((b"not an image", "cannot identify image file"), (_png_bomb(), "decompression bomb")):
        damaged = _altered(dataset, tmp_path / "damaged.zip", first, data)
        with pytest.raises(ReviewError, match=f"{first} in the zip is not an image that can be shown .*{said}"):
            thumbnails(damaged, [first])


def _png_bomb() -> bytes:
    """A 20,000² PNG of one colour: a few kilobytes that decode to 400 MP."""
    buffer = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_a_manifest_field_past_the_csv_modules_limit_is_named(dataset: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(dataset) as archive:
        manifest = archive.read("manifest.csv").decode()
    header, first, *rest = manifest.splitlines(keepends=True)
    long = '"' + "w" * 200_000 + '"' + first[first.index(",") :]  # its source cell, 200,000 characters
    damaged = _altered(dataset, tmp_path / "damaged.zip", "manifest.csv", (header + long + "".join(rest)).encode())
    with pytest.raises(ReviewError, match=r"damaged\.zip is damaged \(field larger than field limit"):
        write_review(damaged, tmp_path / "out.zip")


def test_captions_are_cleaned_as_the_pipeline_cleans_them() -> None:
    assert clean_caption(" a,  b\n\nc ,, ,d\t") == "a, b c, d"
    assert clean_caption("bad \udcff byte") == "bad \ufffd byte"
    assert clean_caption(" ,\n, ") == ""


def test_a_review_goes_page_by_page_and_takes_each_pages_edits(dataset: Path) -> None:
    review = Review.open(dataset, 512)
    review.page_size = 3
    names = [item.name for item in review.items]
    assert review.pages == 2 and review.choices() == [("1: images 1–3", 1), ("2: images 4–4", 2)]
    assert [row[0] for row in review.rows(2)] == [4] and review.clamp(9) == 2 and review.clamp(None) == 1
    rows = review.rows(1)
    assert rows == [[n, True, item.caption] for n, item in enumerate(review.items[:3], start=1)]
    rows[0][2] = "a horse,\nplate"
    rows[1][1] = False
    review.apply(list(reversed(rows)))  # in another order: rows are matched by their number
    assert review.captions == {names[0]: "a horse, plate"} and review.dropped == {names[1]}
    assert review.rows(1)[0][2] == "a horse, plate" and review.rows(1)[1][1] is False
    assert review.describe(1) == "Page 1 of 2: images 1–3 of 4 · 1 caption edited, 1 image unticked so far"

    rows = review.rows(1)
    rows[2][2] = "  "
    with pytest.raises(ReviewError, match=f"The caption of #3 {names[2]} is empty"):
        review.apply(rows)
    assert review.captions == {names[0]: "a horse, plate"} and review.dropped == {names[1]}, "nothing taken"

    rows = review.rows(1)
    rows[0][2] = review.items[0].caption  # written back as it was: no longer an edit
    rows[1][0], rows[1][1] = "2.0", "true"  # ticked again (a hand-made request's strings)
    review.apply([*rows, [9, True, "added row"], ["", True, "x"], [1, True]])  # rows the table added are no image
    assert review.captions == {} and review.dropped == set()


def test_thumbnails_are_small_and_in_order(dataset: Path) -> None:
    names = [item.name for item in read_items(dataset)][::-1]
    pictures = thumbnails(dataset, names, side=128)
    with zipfile.ZipFile(dataset) as archive:
        sizes = [Image.open(archive.open(name)).size for name in names]
    assert [max(p.size) for p in pictures] == [128] * 4
    assert [round(p.size[0] / p.size[1], 1) for p in pictures] == [round(w / h, 1) for w, h in sizes]
