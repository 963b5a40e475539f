"""Seeded fuzzing: mutated copies of generated PDFs through the whole pipeline, and of photos through the
classifier's input path. Every PDF must end in manifest rows (a verdict or a recorded error per page, or one
error row for the file) and every photo in an image or a clear error: never a crash or a hang."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from factories import ARTICLE, engraving, mixed_page, pdf_from_images, text_page
from PIL import Image

from pipeline import Execution, Options, run
from pipeline.writer import read_manifest

MUTANTS = 100


def _mutants(seed_pdf: Path, folder: Path, seed: int) -> list[Path]:
    """Byte flips, zeroed runs, truncations and spliced duplicates of ``seed_pdf``, reproducible by ``seed``."""
    rng = np.random.default_rng(seed)
    data = np.frombuffer(seed_pdf.read_bytes(), dtype=np.uint8)
    paths = []
    for number in range(MUTANTS):
        mutant = data.copy()
        kind = number % 4
        if kind == 0:  # scattered byte flips
            where = rng.integers(0, len(mutant), size=int(rng.integers(1, 64)))
            mutant[where] ^= rng.integers(1, 256, size=len(where), dtype=np.uint8)
        elif kind == 1:  # a run of zeros (a bad sector)
            start = int(rng.integers(0, len(mutant)))
            mutant[start : start + int(rng.integers(16, 4096))] = 0
        elif kind == 2:  # truncated (an interrupted download)
            mutant = mutant[: int(rng.integers(16, len(mutant)))]
        else:  # a block copied over another (offsets and streams no longer match)
            size = int(rng.integers(64, 2048))
            source, target = rng.integers(0, len(mutant) - size, size=2)
            mutant[target : target + size] = mutant[source : source + size].copy()
        path = folder / f"mutant{number:02d}.pdf"
        path.write_bytes(mutant.tobytes())
        paths.append(path)
    return paths


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mutated_pdfs_always_end_in_manifest_rows(tmp_path: Path, seed: int) -> None:
    original = pdf_from_images(
        tmp_path / "original.pdf",
        [engraving(300, 400, seed=seed), text_page(300, 400, seed=seed), mixed_page(400, 550)],
    )
    folder = tmp_path / "mutants"
    folder.mkdir()
    _mutants(original, folder, seed)
    summary = run([folder], tmp_path / "out.zip", Options(**ARTICLE, size=64), Execution(workers=2))

    rows = read_manifest(tmp_path / "out.zip")
    sources = {row["source"] for row in rows}
    assert sources == {f"mutant{n:02d}.pdf" for n in range(MUTANTS)}, "every file has its rows"
    for row in rows:
        assert row["error"] or row["score"], f"a page with neither a verdict nor an error: {row}"
        assert row["page"] or row["error"], "a file-level row always says why"
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        names = archive.namelist()
        assert archive.testzip() is None and len(names) == len(set(names))
        assert {"manifest.csv", "metadata.jsonl", "report.html"} <= set(names)
    written = [name for row in rows for name in row["outputs"].split(";") if name]
    assert sorted(written) == sorted(n for n in names if n.endswith(".jpg"))
    assert summary.pages + sum(1 for row in rows if not row["page"]) == len(rows)


@pytest.mark.parametrize("kind", ["JPEG", "PNG", "WEBP"])
def test_mutated_photos_give_an_image_or_a_clear_error(tmp_path: Path, kind: str) -> None:
    """The classifier's input path: each mutant is read as an upright RGB image or refused with a message
    for people (``ImageInputError``), never another exception."""
    import models

    rng = np.random.default_rng(7)
    original = tmp_path / f"cow.{kind.lower()}"
    Image.fromarray(rng.integers(0, 255, (90, 120, 3), dtype=np.uint8)).save(original, format=kind)
    data = np.frombuffer(original.read_bytes(), dtype=np.uint8)
    outcomes = {"image": 0, "refused": 0}
    for number in range(60):
        mutant = data.copy()
        if number % 3 == 0:
            where = rng.integers(0, len(mutant), size=int(rng.integers(1, 16)))
            mutant[where] ^= rng.integers(1, 256, size=len(where), dtype=np.uint8)
        elif number % 3 == 1:
            mutant = mutant[: int(rng.integers(1, len(mutant)))]
        else:
            start = int(rng.integers(0, len(mutant)))
            mutant[start : start + int(rng.integers(4, 256))] = 0
        path = tmp_path / f"mutant{number}.{kind.lower()}"
        path.write_bytes(mutant.tobytes())
        try:
            (image,) = models.open_images([path])
        except models.ImageInputError as exc:
            assert path.name in str(exc)
            outcomes["refused"] += 1
        else:
            assert image.mode == "RGB" and image.size[0] > 0
            outcomes["image"] += 1
    assert outcomes["refused"] > 0, outcomes  # the mutations do break files
