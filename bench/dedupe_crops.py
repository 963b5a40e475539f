"""Near duplicates whose boxes differ: the same picture cropped a little differently, vs. different pictures.

``python bench/dedupe_crops.py --data ../shared/data [--pairs DIR] [--min-side 512]``

Same picture: every ground-truth picture of ``pages/`` (boxes of 11 books) cropped again with each side moved by
-8 % … +15 % of the box (4 random boxes per picture, seed 0), each fitted to its SDXL bucket and JPEG-encoded as
the pipeline writes it (pictures under ``--min-side``, 512 px as in the pipeline, are skipped); plus the real
pairs of ``--pairs DIR`` (``a.jpg``/``b.jpg`` per sub-folder, e.g. the same advertisement cut by the pipeline
from two issues of a newspaper) and the pairs of :data:`KNOWN_SAME`. Different pictures: every pair of different
pictures (originals and first variants), and windows of text pages of the same books (same typeface and layout:
the hard case for anything comparing textures).

Prints, per method, how many same-picture pairs are caught and how many different-picture pairs are merged, then
the same through :class:`pipeline.dedupe.DuplicateIndex` (originals and text windows indexed in random order,
each variant looked up): caught by the right image, wrongly matched, and ms per lookup.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.dedupe import (  # noqa: E402
    DEFAULT_THRESHOLD,
    DuplicateIndex,
    fingerprint,
    local_features,
    same_picture,
)
from pipeline.fit import Fit, TooSmall, encode_jpeg, fit  # noqa: E402

KNOWN_SAME = {("ercker_aula01_1672_0112.png", "ercker_aula01_1672_0282.png")}
"""Different pages, one picture: the same tailpiece woodcut printed twice in one book (checked by eye)."""


def written(picture: Image.Image, min_side: int = 512) -> Image.Image:
    """The picture as the pipeline writes it: fitted to its bucket, JPEG q92, read back."""
    fitted = fit(picture, Fit(min_side=min_side)).image.convert("RGB")
    return Image.open(io.BytesIO(encode_jpeg(fitted, 92))).convert("RGB")


def moved(box: tuple[int, ...], size: tuple[int, int], rng: np.random.Generator) -> tuple[int, ...]:
    """``box`` with each side moved out by -8 % … +15 % of the box's width or height."""
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    dx0, dy0, dx1, dy1 = rng.uniform(-0.08, 0.15, 4) * (w, h, w, h)
    return (
        max(0, round(x0 - dx0)),
        max(0, round(y0 - dy0)),
        min(size[0], round(x1 + dx1)),
        min(size[1], round(y1 + dy1)),
    )


def pictures(
    data: Path, variants: int, rng: np.random.Generator, min_side: int
) -> tuple[list[str], list[list[Image.Image]]]:
    """Per ground-truth picture: its page's file name and [original, shifted crops...] as written."""
    names, groups = [], []
    for row in csv.DictReader((data / "pages" / "labels.csv").open()):
        if not row["graphic_bboxes_xyxy"]:
            continue
        page = Image.open(data / "pages" / "images" / row["file"]).convert("RGB")
        for text in row["graphic_bboxes_xyxy"].replace("|", ";").split(";"):
            box = tuple(int(float(v)) for v in text.split())
            crops = [page.crop(box)] + [page.crop(moved(box, page.size, rng)) for _ in range(variants)]
            try:
                groups.append([written(c, min_side) for c in crops])
            except TooSmall:
                continue
            names.append(row["file"])
    return names, groups


def text_windows(data: Path, count: int, rng: np.random.Generator) -> list[Image.Image]:
    """Square windows (35-60 % of the page's shorter side) of random text pages."""
    rows = [r for r in csv.DictReader((data / "pages" / "labels.csv").open()) if r["label"] == "text"]
    out = []
    for row in rng.choice(rows, size=count, replace=False):
        page = Image.open(data / "pages" / "images" / row["file"]).convert("RGB")
        side = int(min(page.size) * rng.uniform(0.35, 0.6))
        x, y = int(rng.integers(0, page.width - side)), int(rng.integers(0, page.height - side))
        out.append(written(page.crop((x, y, x + side, y + side))))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--pairs", type=Path, help="folder of sub-folders each holding a.jpg and b.jpg")
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--text-windows", type=int, default=60)
    parser.add_argument("--min-side", type=int, default=512, help="skip smaller pictures, as the pipeline does")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    names, groups = pictures(args.data, args.variants, rng, args.min_side)
    windows = text_windows(args.data, args.text_windows, rng)
    real = []
    if args.pairs:
        for folder in sorted(p for p in args.pairs.iterdir() if p.is_dir()):
            real.append((folder.name, Image.open(folder / "a.jpg").convert("RGB"), Image.open(folder / "b.jpg")))
    known = {tuple(sorted((names[i], names[j]))) for i, j in itertools.combinations(range(len(groups)), 2)}
    known &= KNOWN_SAME
    for i, j in itertools.combinations(range(len(groups)), 2):
        if (names[i], names[j]) in known:
            real.append((f"{names[i]} ~ {names[j]}", groups[i][0], groups[j][0]))

    images = [im for g in groups for im in g] + windows + [x for _, a, b in real for x in (a, b)]
    fps = {id(im): fingerprint(im) for im in images}
    start = time.perf_counter()
    feats = {id(im): local_features(im) for im in images}
    feature_ms = (time.perf_counter() - start) * 1000 / len(images)

    def distance(a: Image.Image, b: Image.Image) -> int:
        return bin(int(fps[id(a)].phash, 16) ^ int(fps[id(b)].phash, 16)).count("1")

    positives = [(g[0], v) for g in groups for v in g[1:]]
    negatives = [
        (a, b)
        for i, j in itertools.combinations(range(len(groups)), 2)
        if (names[i], names[j]) not in known
        for a in groups[i][:2]
        for b in groups[j][:2]
    ] + list(itertools.combinations(windows, 2))
    print(
        f"{len(groups)} pictures × {args.variants + 1} crops, {len(windows)} text windows, {len(real)} real pairs; "
        f"{len(positives)} shifted-crop pairs, {len(negatives)} different-picture pairs; "
        f"keypoints {feature_ms:.1f} ms/image"
    )
    methods = {
        f"phash ≤ {DEFAULT_THRESHOLD} (before)": lambda a, b: distance(a, b) <= DEFAULT_THRESHOLD,
        f"phash ≤ {DEFAULT_THRESHOLD}, else same_picture": lambda a, b: (
            distance(a, b) <= DEFAULT_THRESHOLD or same_picture(feats[id(a)], feats[id(b)])
        ),
    }
    print("\n| method | shifted crops caught | real pairs caught | different pictures merged | ms/pair |")
    print("| --- | --- | --- | --- | --- |")
    for label, same in methods.items():
        start = time.perf_counter()
        caught = sum(same(a, b) for a, b in positives)
        merged = sum(same(a, b) for a, b in negatives)
        found = [name for name, a, b in real if same(a, b)]
        ms = (time.perf_counter() - start) * 1000 / (len(positives) + len(negatives))
        print(
            f"| {label} | {caught}/{len(positives)} ({caught / len(positives):.1%}) | {len(found)}/{len(real)} "
            f"| {merged}/{len(negatives)} | {ms:.3f} |"
        )
    distances = [distance(a, b) for a, b in positives]
    print(
        f"\nphash distance of shifted crops to their original: median {np.median(distances):.0f}, max {max(distances)}"
    )

    index = DuplicateIndex()
    originals = [(f"picture{i}", g[0]) for i, g in enumerate(groups)] + [(f"text{i}", w) for i, w in enumerate(windows)]
    for k in rng.permutation(len(originals)):
        name, image = originals[k]
        index.add(name, fps[id(image)], feats[id(image)])
    right = wrong = 0
    start = time.perf_counter()
    for i, group in enumerate(groups):
        for variant in group[1:]:
            duplicate = index.find(fps[id(variant)], feats[id(variant)])
            right += duplicate is not None and duplicate.of == f"picture{i}"
            wrong += (
                duplicate is not None
                and duplicate.of != f"picture{i}"
                and not any(duplicate.of == f"picture{j}" and (names[i], names[j]) in known for j in range(len(groups)))
            )
    lookup_ms = (time.perf_counter() - start) * 1000 / len(positives)
    print(
        f"DuplicateIndex of {len(index)} images: {right}/{len(positives)} shifted crops found their original, "
        f"{wrong} matched another picture; {lookup_ms:.2f} ms per lookup"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
