"""Where the near-duplicate threshold comes from: phash distances of copies vs. of different pictures.

``python bench/phash_threshold.py [--labels ../shared/data/pages/labels.csv]``: generated engravings, text and
mixed pages, plus the illustration crops of the labelled book scans when the labels file exists; each picture
gets 12 variants (rescaled, re-JPEGed, shifted, cropped, brightened). Prints, per variant, the largest distance
and the share caught at thresholds 6/8/10, then the closest pairs of different pictures, and the lookup time of
:class:`pipeline.dedupe.DuplicateIndex` at 100 000 images.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import sys
import time
from pathlib import Path

import imagehash
import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from factories import engraving, mixed_page, text_page

from pipeline.dedupe import DuplicateIndex, Fingerprint


def variants(picture: Image.Image) -> dict[str, Image.Image]:
    width, height = picture.size
    out = {
        "half": picture.resize((width // 2, height // 2), Image.Resampling.LANCZOS),
        "x0.75": picture.resize((width * 3 // 4, height * 3 // 4), Image.Resampling.BILINEAR),
        "bright+15": Image.fromarray(np.clip(np.asarray(picture).astype(int) + 15, 0, 255).astype(np.uint8)),
    }
    for quality in (40, 75):
        out[f"jpeg{quality}"] = _jpeg(picture, quality)
    for pct in (1, 2, 4):
        dx, dy = width * pct // 100, height * pct // 100
        out[f"shift{pct}%"] = picture.crop((dx, dy, width, height))
        out[f"crop{pct}%"] = picture.crop((dx, dy, width - dx, height - dy))
    small = picture.resize((width * 2 // 3, height * 2 // 3), Image.Resampling.LANCZOS)
    out["combo"] = _jpeg(small.crop((5, 5, small.width - 3, small.height - 6)), 60)
    return out


def _jpeg(picture: Image.Image, quality: int) -> Image.Image:
    buffer = io.BytesIO()
    picture.save(buffer, format="JPEG", quality=quality)
    return Image.open(io.BytesIO(buffer.getvalue()))


def pictures(labels: Path) -> dict[str, Image.Image]:
    found = {f"engraving{s}": Image.fromarray(engraving(700, 900, seed=s)) for s in range(12)}
    found |= {f"text{s}": Image.fromarray(text_page(700, 900, seed=s)) for s in range(4)}
    found |= {f"mixed{s}": Image.fromarray(mixed_page(700, 900, seed=s)) for s in range(4)}
    if labels.exists():
        with open(labels, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["label"] != "illustration" or not row["graphic_bboxes_xyxy"]:
                    continue
                page = Image.open(labels.parent / "images" / row["file"]).convert("L")
                for k, box in enumerate(row["graphic_bboxes_xyxy"].split("|")):
                    x0, y0, x1, y1 = map(int, box.split())
                    if min(x1 - x0, y1 - y0) >= 300:
                        found[f"{row['file']}#{k}"] = page.crop((x0, y0, x1, y1))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=Path("../shared/data/pages/labels.csv"))
    args = parser.parse_args()
    sources = pictures(args.labels)
    hashes = {name: imagehash.phash(picture) for name, picture in sources.items()}
    copies: dict[str, list[int]] = {}
    for name, picture in sources.items():
        for kind, variant in variants(picture).items():
            copies.setdefault(kind, []).append(hashes[name] - imagehash.phash(variant))
    print(f"{len(sources)} pictures; copies: largest distance, share caught at 6 / 8 / 10 bits")
    for kind, distances in copies.items():
        caught = " / ".join(f"{np.mean(np.array(distances) <= t):4.0%}" for t in (6, 8, 10))
        print(f"  {kind:10s} {max(distances):3d}   {caught}")
    pairs = sorted((hashes[a] - hashes[b], a, b) for a, b in itertools.combinations(hashes, 2))
    print("closest different pictures:")
    for distance, a, b in pairs[:6]:
        print(f"  {distance:3d}  {a}  {b}")
    rng = np.random.default_rng(0)
    index = DuplicateIndex()
    for number in range(100_000):
        index.add(str(number), Fingerprint(f"{rng.integers(2**62):032x}", f"{rng.integers(2**62):016x}"))
    start = time.perf_counter()
    for _ in range(200):
        index.find(Fingerprint("1" * 32, "5" * 16))
    print(f"lookup at 100 000 images: {(time.perf_counter() - start) / 200 * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
