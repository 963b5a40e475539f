"""Generated pictures of nothing (noise, gradients, shapes, line drawings) for the cattle gate to turn away.

``python -m models.synthetic OUT_DIR [--count 240]`` writes them; ``models.train --not-cattle … OUT_DIR`` trains on
them as ``not_cattle`` beside the real photos.

Why: the gate learns "not cattle" from the photos it is shown, and real photo collections hold no pure noise, no
flat or graded colour, no clip art: before these were added, the built-in model called a picture of random
pixels *likely lumpy skin disease* at 99 %. Nothing here is a photo, so no collection is copied; the pictures are
drawn from a seed, the same every time.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

KINDS = ("noise", "grain", "gradient", "shapes", "lines", "clouds")


def _size(rng: np.random.Generator) -> tuple[int, int]:
    return int(rng.integers(160, 481)), int(rng.integers(160, 481))


def _colour(rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 256, 3).astype(np.float64)


def noise(rng: np.random.Generator) -> Image.Image:
    """Uniform random pixels, colour or grey, sometimes in a narrow range."""
    w, h = _size(rng)
    lo = int(rng.integers(0, 128))
    hi = int(rng.integers(lo + 16, 256))
    channels = 3 if rng.random() < 0.7 else 1
    arr = rng.integers(lo, hi + 1, (h, w, channels)).astype(np.uint8)
    return Image.fromarray(np.repeat(arr, 3 // channels, axis=2))


def grain(rng: np.random.Generator) -> Image.Image:
    """One colour (often a coat's brown) with sensor-like grain."""
    w, h = _size(rng)
    base = np.array([120, 80, 50]) + rng.normal(0, 30, 3) if rng.random() < 0.5 else _colour(rng)
    arr = base + rng.normal(0, rng.uniform(4, 40), (h, w, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def gradient(rng: np.random.Generator) -> Image.Image:
    """A linear blend between two colours at a random angle, with light grain."""
    w, h = _size(rng)
    angle = rng.uniform(0, np.pi)
    yy, xx = np.mgrid[0:h, 0:w]
    t = np.cos(angle) * xx / w + np.sin(angle) * yy / h
    t = (t - t.min()) / max(1e-6, t.max() - t.min())
    arr = _colour(rng) * (1 - t[..., None]) + _colour(rng) * t[..., None] + rng.normal(0, 3, (h, w, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def shapes(rng: np.random.Generator) -> Image.Image:
    """Flat rectangles and ellipses on a flat background: clip art, an icon, a logo."""
    w, h = _size(rng)
    im = Image.new("RGB", (w, h), tuple(int(c) for c in _colour(rng)))
    draw = ImageDraw.Draw(im)
    for _ in range(int(rng.integers(1, 12))):
        x0, x1 = sorted(int(v) for v in rng.integers(0, w, 2))
        y0, y1 = sorted(int(v) for v in rng.integers(0, h, 2))
        fill = tuple(int(c) for c in _colour(rng))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)((x0, y0, x1 + 1, y1 + 1), fill=fill)
    return im


def lines(rng: np.random.Generator) -> Image.Image:
    """Strokes on paper: a sketch, a diagram, handwriting-like scribbles."""
    w, h = _size(rng)
    paper = 255 - int(rng.integers(0, 40))
    im = Image.new("RGB", (w, h), (paper, paper, paper - int(rng.integers(0, 20))))
    draw = ImageDraw.Draw(im)
    ink = tuple(int(c) for c in rng.integers(0, 90, 3))
    for _ in range(int(rng.integers(5, 60))):
        points = [(int(rng.integers(0, w)), int(rng.integers(0, h))) for _ in range(int(rng.integers(2, 6)))]
        draw.line(points, fill=ink, width=int(rng.integers(1, 5)))
    return im


def clouds(rng: np.random.Generator) -> Image.Image:
    """Blurred noise: smoke, fog, an out-of-focus wall."""
    w, h = _size(rng)
    small = rng.integers(0, 256, (max(2, h // 24), max(2, w // 24), 3)).astype(np.uint8)
    im = Image.fromarray(small).resize((w, h), Image.Resampling.BICUBIC)
    return im.filter(ImageFilter.GaussianBlur(float(rng.uniform(1, 8))))


DRAW: dict[str, Callable[[np.random.Generator], Image.Image]] = {
    "noise": noise,
    "grain": grain,
    "gradient": gradient,
    "shapes": shapes,
    "lines": lines,
    "clouds": clouds,
}


def write(folder: Path, count: int = 240, seed: int = 0) -> list[Path]:
    """``count`` pictures, the kinds in turn, as PNG files in ``folder``; the same files for the same seed."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        path = folder / f"{kind}_{i:04d}.png"
        DRAW[kind](rng).save(path)
        out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.synthetic", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="folder to write the pictures to")
    parser.add_argument("--count", type=int, default=240)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"wrote {len(write(args.output, args.count, args.seed))} pictures to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
