import io
import itertools
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from factories import engraving, mixed_page, pdf_from_images, text_page, woodcut
from PIL import Image

from pipeline import Options, run, run_pages
from pipeline.dedupe import (
    _MERGE,
    DEFAULT_THRESHOLD,
    Duplicate,
    DuplicateIndex,
    Fingerprint,
    _keys,
    fingerprint,
    local_features,
    phash,
    same_picture,
)
from pipeline.fit import Fit, fit
from pipeline.writer import read_manifest


@pytest.fixture(scope="module")
def pictures() -> list[Image.Image]:
    return [Image.fromarray(engraving(360, 480, seed)) for seed in range(5)] + [
        Image.fromarray(mixed_page(360, 480, seed=9))
    ]


def _variants(picture: Image.Image) -> dict[str, Image.Image]:
    """Copies a second printing or a second scan would make: rescaled, re-encoded, shifted, cropped."""
    width, height = picture.size
    jpeg = io.BytesIO()
    picture.save(jpeg, format="JPEG", quality=50)
    return {
        "half": picture.resize((width // 2, height // 2), Image.Resampling.LANCZOS),
        "jpeg50": Image.open(io.BytesIO(jpeg.getvalue())),
        "shift1%": picture.crop((width // 100, height // 100, width, height)),
        "crop1%": picture.crop((width // 100, height // 100, width - width // 100, height - height // 100)),
    }


def test_exact_copies_are_found_whatever_object_holds_them(pictures: list[Image.Image]) -> None:
    index = DuplicateIndex()
    for number, picture in enumerate(pictures):
        assert index.check(f"a_p{number:04d}.jpg", fingerprint(picture)) is None
    copy = np.asarray(pictures[2]).copy()
    assert index.check("b_p0003.jpg", fingerprint(copy)) == Duplicate("a_p0002.jpg", "exact", 0)
    assert len(index) == len(pictures)  # the duplicate was not added


def test_near_copies_are_found_and_name_the_original(pictures: list[Image.Image]) -> None:
    index = DuplicateIndex()
    for number, picture in enumerate(pictures):
        index.add(f"a_p{number:04d}.jpg", fingerprint(picture))
    for number, picture in enumerate(pictures):
        for kind, variant in _variants(picture).items():
            duplicate = index.find(fingerprint(variant))
            assert duplicate is not None, kind
            assert duplicate.of == f"a_p{number:04d}.jpg", kind
            assert duplicate.kind == "near" and duplicate.distance <= DEFAULT_THRESHOLD


def test_different_pictures_are_not_duplicates(pictures: list[Image.Image]) -> None:
    fingerprints = [fingerprint(picture) for picture in pictures]
    index = DuplicateIndex()
    assert [index.check(str(n), fp) for n, fp in enumerate(fingerprints)] == [None] * len(pictures)
    phashes = [int(fp.phash, 16) for fp in fingerprints]
    closest = min(bin(a ^ b).count("1") for i, a in enumerate(phashes) for b in phashes[i + 1 :])
    assert closest > DEFAULT_THRESHOLD


def test_a_near_copy_of_a_dropped_duplicate_is_judged_against_kept_images_only(pictures: list[Image.Image]) -> None:
    index = DuplicateIndex(threshold=0)
    index.check("kept.jpg", fingerprint(pictures[0]))
    assert index.check("dup.jpg", fingerprint(pictures[0])) == Duplicate("kept.jpg", "exact", 0)
    assert index.find(fingerprint(pictures[1])) is None


def test_fingerprints_round_trip_through_manifest_strings(pictures: list[Image.Image]) -> None:
    fp = fingerprint(pictures[0])
    text = str(fp)
    assert len(text) == 32 + 1 + 16 and "," not in text and ";" not in text
    assert Fingerprint.parse(text) == fp
    assert Fingerprint.parse(text.upper()) == fp
    for bad in ("", "abc", text.replace(":", ""), "g" * 32 + ":" + "0" * 16):
        with pytest.raises(ValueError):
            Fingerprint.parse(bad)


def test_index_rebuilt_from_manifest_rows_finds_the_same_duplicates(pictures: list[Image.Image]) -> None:
    rows = [(f"a_p{n:04d}.jpg", str(fingerprint(p))) for n, p in enumerate(pictures)]
    index = DuplicateIndex.from_rows(rows)
    assert len(index) == len(pictures)
    assert index.find(fingerprint(pictures[4])) == Duplicate("a_p0004.jpg", "exact", 0)
    half = _variants(pictures[3])["half"]
    found = index.find(fingerprint(half))
    assert found is not None and found.of == "a_p0003.jpg"


def test_lookup_stays_fast_at_100k_images() -> None:
    rng = np.random.default_rng(0)
    index = DuplicateIndex()
    exact = rng.integers(0, 2**63, (100_000, 2), dtype=np.int64)
    phash = rng.integers(0, 2**63, 100_000, dtype=np.int64)
    for number in range(100_000):
        index.add(str(number), Fingerprint(f"{exact[number, 0]:016x}{exact[number, 1]:016x}", f"{phash[number]:016x}"))
    probe = Fingerprint(f"{exact[77_777, 0]:016x}{exact[77_777, 1]:016x}", f"{phash[77_777] ^ 0b101:016x}")
    start = time.perf_counter()
    for _ in range(20):
        found = index.find(probe)
    per_lookup = (time.perf_counter() - start) / 20
    assert found == Duplicate("77777", "exact", 0)
    assert index.find(Fingerprint("0" * 32, f"{phash[123] ^ 0b111:016x}")) == Duplicate("123", "near", 3)
    assert per_lookup < 0.02


def test_threshold_is_validated() -> None:
    with pytest.raises(ValueError):
        DuplicateIndex(threshold=64)


def test_phash_is_imagehashs_bit_for_bit(pictures: list[Image.Image]) -> None:
    import imagehash

    rng = np.random.default_rng(3)
    noise = [Image.fromarray(rng.integers(0, 256, (97, 131, 3), dtype=np.uint8)) for _ in range(20)]
    for picture in [*pictures, *noise, *(v for p in pictures for v in _variants(p).values())]:
        assert phash(picture) == str(imagehash.phash(picture))


def test_fingerprinting_does_not_load_scipy() -> None:
    """imagehash's phash imports SciPy (17 MB in each worker) for one 32×32 DCT; ours does not."""
    code = (
        "import sys, numpy as np; from pipeline.dedupe import fingerprint; "
        "fingerprint(np.zeros((64, 64), np.uint8)); assert 'scipy' not in sys.modules, 'scipy loaded'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


# ---------------------------------------------------------------- the same picture under another box
WOODCUT = woodcut(700, 900, seed=3)
BOX_A = (50, 60, 600, 800)
BOX_B = (20, 90, 660, 860)
"""Two boxes around one picture as two issues' detections might give them: shifted, one ~10 % larger."""


def _written(pixels: np.ndarray) -> Image.Image:
    """As the pipeline writes a region: fitted to its bucket (kept at its size: it is under 1 MP)."""
    return fit(Image.fromarray(pixels), Fit(min_side=64)).image.convert("RGB")


def _cut(box: tuple[int, int, int, int]) -> Image.Image:
    x0, y0, x1, y1 = box
    return _written(WOODCUT[y0:y1, x0:x1])


def _distance(a: Fingerprint, b: Fingerprint) -> int:
    return bin(int(a.phash, 16) ^ int(b.phash, 16)).count("1")


def test_a_picture_cut_with_another_box_is_found_again_by_its_keypoints() -> None:
    a, b = _cut(BOX_A), _cut(BOX_B)
    fa, fb = fingerprint(a), fingerprint(b)
    assert _distance(fa, fb) > DEFAULT_THRESHOLD, "the phash alone would keep both"
    index = DuplicateIndex()
    index.add("first.jpg", fa, local_features(a))
    for seed in range(3):
        other = _written(woodcut(550, 740, seed))
        index.add(f"other{seed}.jpg", fingerprint(other), local_features(other))
    assert index.find(fb) is None, "without keypoints only copies are found"
    assert index.find(fb, local_features(b)) == Duplicate("first.jpg", "recut", _distance(fa, fb))


def test_different_pictures_text_and_a_shared_emblem_are_not_the_same_picture() -> None:
    pictures = [_written(woodcut(550, 740, seed)) for seed in range(4)]
    pictures += [_written(text_page(600, 800, seed=seed)) for seed in range(3)]
    emblem = woodcut(200, 200, seed=42)
    for seed, (y, x) in ((7, (20, 20)), (8, (520, 330))):  # one emblem printed in two different (plain) pictures
        shade = cv2.GaussianBlur(np.random.default_rng(seed).random((740, 550)).astype(np.float32), (0, 0), 40)
        pixels = (60 + 150 * (shade - shade.min()) / np.ptp(shade)).astype(np.uint8)
        pixels[y : y + 200, x : x + 200] = emblem  # nearly all of each picture's keypoints, and they agree
        pictures.append(_written(pixels))
    features = [local_features(p) for p in pictures]
    merged = [
        (i, j) for i, j in itertools.combinations(range(len(features)), 2) if same_picture(features[i], features[j])
    ]
    assert merged == []
    index = DuplicateIndex()
    verdicts = [index.check(str(n), fingerprint(p), f) for n, (p, f) in enumerate(zip(pictures, features, strict=True))]
    assert verdicts == [None] * len(pictures)


def test_index_rebuilt_on_resume_reads_the_written_images_back_for_their_keypoints() -> None:
    a, b = _cut(BOX_A), _cut(BOX_B)
    jpeg = io.BytesIO()
    a.save(jpeg, "JPEG", quality=92)
    index = DuplicateIndex.from_rows([("first.jpg", str(fingerprint(a)))], read={"first.jpg": jpeg.getvalue()}.get)
    found = index.find(fingerprint(b), local_features(b))
    assert found is not None and (found.of, found.kind) == ("first.jpg", "recut")


def test_a_run_drops_the_recut_picture_and_a_resumed_run_still_finds_it(tmp_path: Path) -> None:
    first = pdf_from_images(tmp_path / "issue1.pdf", [WOODCUT[60:800, 50:600]])
    second = pdf_from_images(tmp_path / "issue2.pdf", [WOODCUT[90:860, 20:660]])
    summary = run([first, second], tmp_path / "all.zip", Options(filter="sigma"))
    rows = read_manifest(tmp_path / "all.zip")
    assert [r["kept"] for r in rows] == ["true", "true"] and summary.images == 1 and summary.duplicates == 1
    assert rows[1]["duplicates"] == "issue2_p0001.jpg=issue1_p0001.jpg"
    assert run([first, second], tmp_path / "kept.zip", Options(filter="sigma", dedupe=None)).images == 2

    pages = run_pages([first, second], tmp_path / "resumed.zip", Options(filter="sigma"))
    next(pages)
    pages.close()  # interrupted after the first issue: the second must be judged against it read back
    resumed = run([first, second], tmp_path / "resumed.zip", Options(filter="sigma"))
    assert resumed.resumed == 1 and resumed.duplicates == 1
    assert read_manifest(tmp_path / "resumed.zip")[1]["duplicates"] == rows[1]["duplicates"]


def test_recuts_are_found_among_many_kept_images_once_their_keys_are_merged() -> None:
    a, b = _cut(BOX_A), _cut(BOX_B)
    fillers = [_written(woodcut(320, 400, seed)) for seed in range(100, 100 + 2 * _MERGE)]
    index = DuplicateIndex()
    for number, filler in enumerate(fillers):
        index.add(f"filler{number}.jpg", fingerprint(filler), local_features(filler))
        if number == _MERGE // 2:  # in the middle: its keys sit among others' in the merged arrays
            index.add("first.jpg", fingerprint(a), local_features(a))
    assert _MERGE // 2 + 1 in index._votes._ids, "the first image's keys were merged into the sorted arrays"
    voted = index._votes.most_voted(_keys(local_features(b)), 1)
    assert voted == [_MERGE // 2 + 1], "the recut's keypoint slices vote for its original most"
    found = index.find(fingerprint(b), local_features(b))
    assert found is not None and (found.of, found.kind) == ("first.jpg", "recut")
