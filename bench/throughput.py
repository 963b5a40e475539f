"""Throughput and memory on the same input, in one go: the article's reference method, pdf2image/poppler
doing the same work (where installed), and this pipeline with ``--filter sigma`` (same decisions as the
reference, so the same work) and with its default filter.

``python bench/throughput.py DATA/pdfs [--scale 1 10] [--workers N] [--repeat 3] [--doc docs/speed-and-memory.md]``
merges the PDFs into one, repeated ``--scale`` times (each scale in turn), and prints pages/s, pages/hour,
whole-process-tree peak RSS and the ratio to the reference (with ``--repeat``: the median rate and the highest
peak of the runs). Every method runs in a fresh process; memory is sampled as the summed RSS of the process tree
(every 20 ms) and as its summed PSS (every 200 ms; workers share library pages, which RSS counts once per process).
``--doc`` writes the table into that Markdown file.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import pymupdf
from measure import measure

from docs import markdown_table, write_section

HERE = Path(__file__).resolve().parent
ARTICLE_OPTIONS = ("--filter", "sigma", "--threshold", "45", "--fit", "square", "--upscale")
"""The article's own work in the pipeline's options: σ > 45, 1024² LANCZOS whatever the page's size."""

PDF2IMAGE = """
import gc, sys
import cv2, numpy as np
from pdf2image import convert_from_path
out = sys.argv[2]
pages = kept = 0
for image in convert_from_path(sys.argv[1], dpi=144):  # Matrix(2, 2) = 144 dpi; pdf2image renders all pages first
    pages += 1
    rgb = np.asarray(image.convert("RGB"))
    if cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).std() > 45:
        kept += 1
        image.resize((1024, 1024), 1).save(f"{out}/p{pages:05d}.jpg", quality=92)  # 1 = LANCZOS
    del rgb
    gc.collect()
print(pages, "pages")
"""


def merge(sources: list[Path], target: Path, scale: int) -> int:
    """One PDF holding every page of ``sources``, ``scale`` times over; returns its page count."""
    merged = pymupdf.open()
    for _ in range(scale):
        for source in sources:
            with pymupdf.open(source) as doc:
                merged.insert_pdf(doc)
    merged.save(target)
    count = merged.page_count
    merged.close()
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="PDFs or folders of PDFs")
    parser.add_argument("--scale", type=int, nargs="+", default=[1], help="repeat the merged pages this many times")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--skip", nargs="*", default=[], help="methods to leave out")
    parser.add_argument("--repeat", type=int, default=1, help="runs per method: median rate, highest peak")
    parser.add_argument("--doc", type=Path, help="also write the table into this Markdown file (docs/...)")
    args = parser.parse_args()
    sources = sorted(p for item in args.inputs for p in ([item] if item.is_file() else item.rglob("*.pdf")))
    rows = [row for scale in args.scale for row in measure_scale(sources, scale, args)]
    if args.doc:
        header = ["input", "method", "pages/s", "pages/hour", "peak RSS MB", "peak PSS MB", "× reference"]
        note = f"{len(sources)} PDFs merged ×{'/'.join(map(str, args.scale))}, {args.workers} workers"
        note += f", median of {args.repeat} run(s) each."
        write_section(args.doc, f"{note}\n\n{markdown_table(header, rows)}")


def measure_scale(sources: list[Path], scale: int, args: argparse.Namespace) -> list[list[str]]:
    """Every method on the PDFs merged ``scale`` times; prints the table and returns its rows."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        merged = tmp_path / "merged.pdf"
        pages = merge(sources, merged, scale)
        size_mb = merged.stat().st_size / 2**20
        print(f"input: {len(sources)} PDFs merged ×{scale} → {pages} pages, {size_mb:.0f} MB; {args.workers} workers")

        def out(name: str) -> str:
            folder = tmp_path / name
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            return str(folder)

        pipeline = [sys.executable, "-m", "pipeline", str(merged), "--workers", str(args.workers), "--no-resume"]
        methods = {
            "reference (article)": [sys.executable, str(HERE / "reference.py"), str(merged), "-o", out("ref")],
            "pipeline --filter sigma": [*pipeline, "-o", str(tmp_path / "sigma.zip"), "--filter", "sigma"],
            "pipeline --filter sigma --no-ocr": [  # the article reads no words: the same work as the reference
                *pipeline,
                "-o",
                str(tmp_path / "sigma-no-ocr.zip"),
                "--filter",
                "sigma",
                "--no-ocr",
            ],
            "pipeline, the article's options, --no-ocr": [  # its filter, fit and size, reading no words
                *pipeline,
                "-o",
                str(tmp_path / "article.zip"),
                *ARTICLE_OPTIONS,
                "--no-ocr",
            ],
            "pipeline (default filter)": [*pipeline, "-o", str(tmp_path / "default.zip")],
        }
        if importlib.util.find_spec("pdf2image") and shutil.which("pdftoppm"):
            methods["pdf2image/poppler"] = [sys.executable, "-c", PDF2IMAGE, str(merged), out("p2i")]
        else:
            print("pdf2image/poppler: not installed (pip install pdf2image; apt install poppler-utils), skipped")
        print(f"{'method':<42}{'pages/s':>9}{'pages/h':>10}{'peak RSS MB':>13}{'peak PSS MB':>13}{'× reference':>13}")
        reference, rows = None, []
        for name, command in methods.items():
            if any(skip in name for skip in args.skip):
                continue
            results = [measure(command) for _ in range(args.repeat)]
            rate = pages / statistics.median(result.seconds for result in results)
            reference = reference or rate
            rss, pss = max(r.peak_rss_mb for r in results), max(r.peak_pss_mb for r in results)
            print(f"{name:<42}{rate:9.2f}{rate * 3600:10.0f}{rss:13.0f}{pss:13.0f}{rate / reference:13.2f}")
            rows.append(
                [f"{pages} pages", name, f"{rate:.2f}", f"{rate * 3600:,.0f}", f"{rss:,.0f}", f"{pss:,.0f}",
                 f"{rate / reference:.2f}"]
            )  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
