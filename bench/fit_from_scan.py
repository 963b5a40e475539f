"""The article's square fit from the scan decoded at the output's scale, against today's fit from the σ view.

Issue 33 suggests decoding each scan once at the smallest scale the output needs (libjpeg-turbo's DCT scaling, a
1-bit scan's subsampling) and judging and fitting from that. Today ``--filter sigma --fit square`` judges the
page at the article's ``Matrix(2, 2)`` (the scan decoded, then resized to that view) and fits the view, which
keeps the article's σ and its pictures' pixels. ``python bench/fit_from_scan.py ../shared/data/pdfs`` prints, per
folder of PDFs, for every page that is one scan: ms per page for σ + 1024² LANCZOS fit each way, the largest σ
difference and the decisions it flips at ``--threshold``, and each output's PSNR against the article's own output
(MuPDF's drawing at ``Matrix(2, 2)``, then LANCZOS) and against an antialiased reference (the scan at full
resolution, area-averaged to 1024²). ``gap`` is how many times the output's size the decoded scan must keep:
1 is the smallest decode that covers the output, 2 leaves LANCZOS at least a halving to filter.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pymupdf
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline.fit import Fit, fit, render_scale
from pipeline.judges.sigma import SigmaJudge
from pipeline.render import native_zoom
from pipeline.scan import Scan, _decode, find_scan
from pipeline.worker import judge_page

SPEC = Fit("square", 1024, upscale=True)
"""The article's fit: 1024² LANCZOS, aspect not kept, small pages resampled up."""


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * math.log10(255**2 / mse)


def page_of_scan(doc: pymupdf.Document, page: pymupdf.Page, scan: Scan, width: float, height: float) -> np.ndarray:
    """The page's part of its scan, decoded grey at no less than ``width``×``height`` (reduced where that suffices)."""
    decoded, _ = _decode(doc, scan, max(1.0, width), max(1.0, height), "gray")
    rect, (dh, dw) = page.rect, decoded.shape[:2]
    left = round((rect.x0 - scan.rect.x0) / scan.rect.width * dw)
    top = round((rect.y0 - scan.rect.y0) / scan.rect.height * dh)
    right = round((rect.x1 - scan.rect.x0) / scan.rect.width * dw)
    bottom = round((rect.y1 - scan.rect.y0) / scan.rect.height * dh)
    return np.ascontiguousarray(decoded[max(0, top) : bottom, max(0, left) : right])


def grey(picture: Image.Image) -> np.ndarray:
    return np.asarray(picture.convert("L"))


def measure(folder: Path, threshold: float, gaps: tuple[int, ...]) -> None:
    judge = SigmaJudge(threshold)
    seconds = {"today": 0.0, **{f"gap {g}": 0.0 for g in gaps}}
    sigma_diff = dict.fromkeys(gaps, 0.0)
    flipped = dict.fromkeys(gaps, 0)
    vs_seed: dict[str, list[float]] = {name: [] for name in seconds}
    vs_truth: dict[str, list[float]] = {name: [] for name in seconds}
    pages = 0
    for path in sorted(folder.rglob("*.pdf")):
        with pymupdf.open(path) as doc:
            for page in doc:
                pymupdf.TOOLS.store_shrink(100)
                start = time.perf_counter()
                scan = find_scan(page)  # found again inside judge_page: counted once for each way
                finding = time.perf_counter() - start
                if scan is None:
                    continue
                pages += 1
                pymupdf.TOOLS.store_shrink(100)
                start = time.perf_counter()
                verdict, view, *_ = judge_page(page, judge)
                outputs = {"today": grey(fit(view, SPEC).image)}
                seconds["today"] += time.perf_counter() - start
                del view
                native = native_zoom(page)
                need = render_scale(page.rect.width * native, page.rect.height * native, SPEC)
                for gap in gaps:
                    pymupdf.TOOLS.store_shrink(100)
                    start = time.perf_counter()
                    pixels = page_of_scan(doc, page, scan, scan.width * need * gap, scan.height * need * gap)
                    sigma = float(cv2.meanStdDev(pixels)[1][0, 0])
                    outputs[f"gap {gap}"] = grey(fit(pixels, SPEC).image)
                    seconds[f"gap {gap}"] += time.perf_counter() - start + finding
                    sigma_diff[gap] = max(sigma_diff[gap], abs(sigma - verdict.score))
                    flipped[gap] += (sigma > threshold) != verdict.keep
                drawn = page.get_pixmap(matrix=pymupdf.Matrix(2, 2), colorspace=pymupdf.csGRAY)
                seed = np.asarray(
                    Image.frombytes("L", (drawn.width, drawn.height), drawn.samples).resize(
                        (SPEC.size, SPEC.size), Image.Resampling.LANCZOS
                    )
                )
                del drawn
                full = page_of_scan(doc, page, scan, scan.width, scan.height)
                truth = cv2.resize(full, (SPEC.size, SPEC.size), interpolation=cv2.INTER_AREA)
                del full
                for name, output in outputs.items():
                    vs_seed[name].append(psnr(output, seed))
                    vs_truth[name].append(psnr(output, truth))
    if not pages:
        print(f"{folder}: no page is one scan")
        return
    print(f"{folder}: {pages} pages that are one scan, σ threshold {threshold:g}, square {SPEC.size}² LANCZOS")
    print("| σ + fit from | ms per page | max σ difference | decisions flipped | PSNR vs the article's output "
          "(median, min) | PSNR vs the scan area-averaged (median, min) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for name in seconds:
        gap = None if name == "today" else int(name.split()[1])
        what = "the Matrix(2, 2) view (today)" if gap is None else f"the scan at ≥ {gap}× the output"
        seed, truth = vs_seed[name], vs_truth[name]
        print(
            f"| {what} | {1000 * seconds[name] / pages:.1f} | {'—' if gap is None else f'{sigma_diff[gap]:.1f}'} | "
            f"{'—' if gap is None else flipped[gap]} | {statistics.median(seed):.1f}, {min(seed):.1f} dB | "
            f"{statistics.median(truth):.1f}, {min(truth):.1f} dB |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders of PDFs (searched recursively)")
    parser.add_argument("--threshold", type=float, default=45.0, help="the article's σ threshold")
    parser.add_argument("--gaps", type=int, nargs="+", default=[1, 2], help="decoded size over the output's")
    args = parser.parse_args()
    cv2.setNumThreads(1)  # as in the workers
    for folder in args.folders:
        measure(folder, args.threshold, tuple(args.gaps))


if __name__ == "__main__":
    main()
