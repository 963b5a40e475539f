"""The seed article's method, written as the article describes it, as the baseline for the benchmarks.

PyMuPDF renders every page at ``Matrix(2, 2)`` (RGB), OpenCV computes the grey standard deviation, pages
with σ > 45 are resized to 1024×1024 with LANCZOS and saved as JPEG q92, then ``del`` + ``gc.collect()``
after every page. Usage: ``python bench/reference.py INPUT... -o OUT_DIR`` (prints one JSON line).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from pathlib import Path

import cv2
import numpy as np
import pymupdf
from PIL import Image


def is_image_page(cv_img: np.ndarray, min_variance: float = 45) -> bool:
    """The article's filter, verbatim."""
    gray = cv2.cvtColor(cv_img, cv2.COLOR_RGB2GRAY)
    return gray.std() > min_variance


def reference_run(pdfs: list[Path], out_dir: Path) -> list[dict]:
    """Process ``pdfs`` the article's way; return one ``{source, page, sigma, kept}`` per page."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for pdf in pdfs:
        doc = pymupdf.open(pdf)
        for index in range(doc.page_count):
            page = doc[index]
            pix = page.get_pixmap(matrix=pymupdf.Matrix(2, 2))
            cv_img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)
            sigma = float(cv2.cvtColor(cv_img, cv2.COLOR_RGB2GRAY).std())
            kept = bool(is_image_page(cv_img))
            if kept:
                image = Image.fromarray(cv_img).resize((1024, 1024), Image.LANCZOS)
                image.save(out_dir / f"{pdf.stem}_p{index + 1:04d}.jpg", quality=92)
                del image
            rows.append({"source": pdf.name, "page": index + 1, "sigma": sigma, "kept": kept})
            del cv_img, pix, page
            gc.collect()
        doc.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True, help="output folder")
    args = parser.parse_args()
    pdfs = sorted(p for item in args.inputs for p in ([item] if item.is_file() else item.rglob("*.pdf")))
    start = time.perf_counter()
    rows = reference_run(pdfs, args.output)
    seconds = time.perf_counter() - start
    print(json.dumps({"pages": len(rows), "kept": sum(r["kept"] for r in rows), "seconds": seconds, "rows": rows}))


if __name__ == "__main__":
    main()
