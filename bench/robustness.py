"""Robustness bench: do the judge's decisions survive what archives do to a scan?

``python bench/robustness.py --data ../shared/data`` takes every real page of ``pages/`` (binarized book
scans, 300 dpi) and ``pdfs/`` (newspaper scans, drawn at 144 dpi from their embedded scan), perturbs each
one at that resolution as scanners and microfilm perturb pages, makes the judge's 72 dpi view from it as
``pipeline.scan`` does from a scan (an area resize) and judges it. Per perturbation it reports the share of
pages whose decision differs from the unperturbed page's, split into lost (kept → dropped) and gained
(dropped → kept), how many flips make a labelled page wrong (an illustration dropped, a text page or target
kept; ``minor`` and ``text_minor_cuts`` pages are unlabelled either way), and how many illustration pages it
sends to score 0 (something found on the unperturbed
page, nothing at all on the perturbed one).

Perturbations: black frames of 2–15 % on 1–4 sides (the page pasted onto a black canvas, sometimes the
page itself tinted grey), a gutter shadow (a smooth darkening over 12 % of the width toward one edge), a
dark edge strip (a grey band along one edge),
paper tint with lowered contrast (yellowed or greenish microfilm), ±2° rotation, JPEG at quality 30,
down-scaling to 100 dpi, and grey vs binarized (binarized pages blurred to grey, grey pages Otsu-binarized).
Page size: the same pixels in a PDF whose page is declared ×0.25 … ×4 its real size (archives wrap scans at
any nominal resolution), so the 72 dpi view holds that many times the pixels each way.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np
import pymupdf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.budget import OverBudget  # noqa: E402
from pipeline.judges import Judge, Verdict, make_judge  # noqa: E402
from pipeline.render import render  # noqa: E402
from pipeline.scan import find_scan  # noqa: E402
from pipeline.worker import judge_page  # noqa: E402

BOOK_DPI, PDF_DPI = 300.0, 144.0
Perturb = Callable[[np.ndarray, float], np.ndarray]


def frame(fraction: float, sides: str, tint: float = 1.0) -> Perturb:
    """Paste the page onto a black canvas whose border is ``fraction`` of the page's size on each side
    named in ``sides`` (``t b l r``); ``tint`` < 1 darkens the page itself (a grey microfilm frame)."""

    def apply(img: np.ndarray, _dpi: float) -> np.ndarray:
        h, w = img.shape
        pad = {s: round(fraction * (h if s in "tb" else w)) if s in sides else 0 for s in "tblr"}
        page = (img.astype(np.float32) * tint).astype(np.uint8)
        rng = np.random.default_rng(0)
        out = rng.integers(5, 30, (h + pad["t"] + pad["b"], w + pad["l"] + pad["r"]), dtype=np.uint8)
        out[pad["t"] : pad["t"] + h, pad["l"] : pad["l"] + w] = page
        return out

    return apply


def shadow(side: str, depth: float = 0.35) -> Perturb:
    """A gutter shadow: the page darkens smoothly over 12 % of its width toward ``side`` (``l`` or ``r``), to
    ``depth`` of its brightness at the edge."""

    def apply(img: np.ndarray, _dpi: float) -> np.ndarray:
        w = img.shape[1]
        n = max(1, int(0.12 * w))
        ramp = np.ones(w, np.float32)
        ramp[:n] = depth + (1 - depth) * np.sin(np.linspace(0, np.pi / 2, n)) ** 2
        if side == "r":
            ramp = ramp[::-1]
        return (img.astype(np.float32) * ramp).astype(np.uint8)

    return apply


def strip(side: str, width: float = 0.04, tone: float = 0.6) -> Perturb:
    """A dark edge strip: a band ``width`` of the page wide along ``side`` at ``tone`` of the page's
    brightness with a soft inner edge (the facing page's edge, a curled margin, a microfilm splice)."""

    def apply(img: np.ndarray, dpi: float) -> np.ndarray:
        w = img.shape[1]
        n, soft = max(1, int(width * w)), max(1, int(dpi / 25.4))
        ramp = np.ones(w, np.float32)
        ramp[:n] = tone
        ramp[n : n + soft] = np.linspace(tone, 1.0, len(ramp[n : n + soft]))
        if side == "r":
            ramp = ramp[::-1]
        return (img.astype(np.float32) * ramp).astype(np.uint8)

    return apply


def tint(paper: int, ink: int) -> Perturb:
    """Tinted, low-contrast paper: grey levels mapped linearly so white becomes ``paper`` and black ``ink``
    (yellowed or greenish microfilm seen in grey)."""

    def apply(img: np.ndarray, _dpi: float) -> np.ndarray:
        return (ink + img.astype(np.float32) * ((paper - ink) / 255.0)).astype(np.uint8)

    return apply


def rotate(degrees: float) -> Perturb:
    """A skewed page; the corners it uncovers get the paper's tone (as deskewing software fills them; a dark
    scanner bed around a page is the frame perturbation's case)."""

    def apply(img: np.ndarray, _dpi: float) -> np.ndarray:
        h, w = img.shape
        m = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
        paper = int(np.percentile(img[::8, ::8], 95))
        return cv2.warpAffine(img, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=paper)

    return apply


def jpeg(quality: int) -> Perturb:
    def apply(img: np.ndarray, _dpi: float) -> np.ndarray:
        return cv2.imdecode(cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])[1], cv2.IMREAD_GRAYSCALE)

    return apply


def downscale(dpi: float) -> Perturb:
    """Rescan at ``dpi``: down to it and back up (the view is then made from the coarser scan)."""

    def apply(img: np.ndarray, src_dpi: float) -> np.ndarray:
        h, w = img.shape
        small = cv2.resize(img, (round(w * dpi / src_dpi), round(h * dpi / src_dpi)), interpolation=cv2.INTER_AREA)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)

    return apply


def flip_binarization(img: np.ndarray, dpi: float) -> np.ndarray:
    """A binarized page made grey (blurred ~0.1 mm, scanner noise), a grey page binarized (Otsu)."""
    if np.count_nonzero((img > 5) & (img < 250)) < 0.01 * img.size:
        sigma = 0.1 * dpi / 25.4
        grey = cv2.GaussianBlur(img.astype(np.float32), (0, 0), sigma) * 0.85 + 20
        noise = np.random.default_rng(0).normal(0, 4, img.shape).astype(np.float32)
        return np.clip(grey + noise, 0, 255).astype(np.uint8)
    return cv2.threshold(img, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1]


PERTURBATIONS: dict[str, Perturb] = {
    "frame 2 % (4 sides)": frame(0.02, "tblr"),
    "frame 15 % (4 sides)": frame(0.15, "tblr"),
    "frame 8 % (left)": frame(0.08, "l"),
    "frame 12 % (top, right)": frame(0.12, "tr"),
    "frame 5 % (3 sides)": frame(0.05, "tbl"),
    "frame 10 %, page tinted grey": frame(0.10, "tblr", tint=0.7),
    "gutter shadow (left)": shadow("l"),
    "gutter shadow (right)": shadow("r"),
    "deep gutter shadow (left)": shadow("l", depth=0.15),
    "dark edge strip (left)": strip("l"),
    "dark edge strip (right), 8 %": strip("r", width=0.08, tone=0.45),
    "yellowed paper, low contrast": tint(215, 120),
    "green microfilm, faint": tint(175, 95),
    "rotation +2°": rotate(2.0),
    "rotation -2°": rotate(-2.0),
    "JPEG quality 30": jpeg(30),
    "down-scaled to 100 dpi": downscale(100.0),
    "grey <-> binarized": flip_binarization,
}


DECLARED: dict[str, float] = {f"page declared ×{s:g}": s for s in (0.25, 0.5, 2.0, 4.0)}
"""Page-size perturbations: the declared page is ``s`` times the real one, so its 72 dpi view is ``s`` times the
pixels each way of the real page's."""


def declared(img: np.ndarray, dpi: float, size: float, judge: Judge) -> Verdict:
    """The verdict on ``img`` (a scan at ``dpi``) as the pipeline gives it when the scan fills a PDF page declared
    ``size`` times its real size: binarized pages as PNG, grey ones as JPEG (quality 90), judged by the worker's
    own ``judge_page``, which sees the page's declared size as the pipeline does."""
    h, w = img.shape
    binary = np.count_nonzero((img > 5) & (img < 250)) < 0.01 * img.size
    data = cv2.imencode(".png", img)[1] if binary else cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])[1]
    with pymupdf.open() as doc:
        page = doc.new_page(width=w / dpi * 72 * size, height=h / dpi * 72 * size)
        page.insert_image(page.rect, stream=data.tobytes())
        try:
            return judge_page(page, judge)[0]
        except OverBudget:  # the pipeline refuses such a page (recorded as an error): nothing is kept
            return Verdict(keep=False, score=0.0)


def pages(data: Path) -> Iterator[tuple[str, str, np.ndarray, float]]:
    """``(name, label, grey scan, dpi)`` for every labelled page: book pages as scanned, newspaper pages drawn
    from their scan at 144 dpi. Labels: ``illustration`` is positive, ``text`` / ``target`` negative, the
    rest (``minor``, ``text_minor_cuts``) unscored."""
    for r in csv.DictReader((data / "pages" / "labels.csv").open(newline="")):
        img = cv2.imread(str(data / "pages" / "images" / r["file"]), cv2.IMREAD_GRAYSCALE)
        yield r["file"], r["label"], img, BOOK_DPI
    for r in csv.DictReader((data / "pdfs" / "labels.csv").open(newline="")):
        labels = r["label"].split(";")
        with pymupdf.open(data / "pdfs" / r["file"]) as doc:
            for i, page in enumerate(doc):
                img = np.array(render(page, PDF_DPI / 72, "gray", scan=find_scan(page)))
                yield f"{r['file']} p{i + 1}", labels[i] if len(labels) > 1 else labels[0], img, PDF_DPI


def view(img: np.ndarray, dpi: float) -> np.ndarray:
    """The judge's 72 dpi view of a scan at ``dpi``, made as ``pipeline.scan`` makes it (an area resize)."""
    f = 72.0 / dpi
    h, w = img.shape
    return cv2.resize(img, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--judge", default="structure")
    parser.add_argument("--only", nargs="*", help="perturbations whose name contains one of these words")
    parser.add_argument("--flips", action="store_true", help="list every page whose decision flips")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    judge = make_judge(args.judge)
    every: dict[str, Perturb | float] = {**PERTURBATIONS, **DECLARED}
    chosen = {k: v for k, v in every.items() if not args.only or any(w in k for w in args.only)}
    rows = {k: {"lost": 0, "gained": 0, "wrong": 0, "zero": 0, "n": 0} for k in chosen}
    base_pos = base_neg = n_pos = 0
    t0 = time.perf_counter()
    for name, label, img, dpi in pages(args.data):
        base = judge(view(img, dpi))
        as_declared = declared(img, dpi, 1.0, judge) if any(isinstance(p, float) for p in chosen.values()) else base
        n_pos += label == "illustration"
        base_pos += label == "illustration" and base.keep
        base_neg += label in ("text", "target") and base.keep
        for key, perturb in chosen.items():
            if isinstance(perturb, float):  # the page's scan in a PDF page declared ``perturb`` x its size
                v, b = declared(img, dpi, perturb, judge), as_declared
            else:
                v, b = judge(view(perturb(img, dpi), dpi)), base
            row = rows[key]
            row["n"] += 1
            row["lost"] += b.keep and not v.keep
            row["gained"] += v.keep and not b.keep
            row["zero"] += label == "illustration" and b.score > 0.0 and v.score == 0.0
            truth = {"illustration": True, "text": False, "target": False}.get(label)
            row["wrong"] += v.keep != b.keep and truth is not None and v.keep != truth
            if args.flips and v.keep != b.keep:
                print(f"  {key}: {name} ({label}) {b.score:.2f} -> {v.score:.2f}")
    print(
        f"\n{rows[next(iter(rows))]['n'] if rows else 0} pages ({n_pos} illustration); unperturbed: "
        f"{base_pos} illustration pages kept, {base_neg} text/target pages kept; {time.perf_counter() - t0:.0f} s"
    )
    head = "perturbation | decisions flipped | kept → dropped | dropped → kept | of them wrong | pictures sent to 0"
    print(f"\n| {head} |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key, r in rows.items():
        flips = r["lost"] + r["gained"]
        share = f"{flips} ({100 * flips / r['n']:.1f} %)"
        print(f"| {key} | {share} | {r['lost']} | {r['gained']} | {r['wrong']} | {r['zero']} of {n_pos} |")


if __name__ == "__main__":
    main()
