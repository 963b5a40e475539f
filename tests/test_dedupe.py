import io
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from factories import engraving, mixed_page
from PIL import Image

from pipeline.dedupe import DEFAULT_THRESHOLD, Duplicate, DuplicateIndex, Fingerprint, fingerprint, phash


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
