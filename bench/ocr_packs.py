"""Which of Tesseract's language packs read an archive best: OCR of the scan against the page's own text layer.

``{words}`` comes from Tesseract where a page has no text layer, read with ``--ocr-lang``'s packs (five by
default: an archive's languages are not known in advance). Many scanned archives carry a text layer on some of
their pages (a library's OCR, itself noisy): there the words Tesseract reads from the scan alone can be scored
against it. ``python bench/ocr_packs.py DATA/pdfs --langs eng+rus+fra+deu+frk eng frk`` takes two strips (each 6 %
of the page's height, full width, at 25 % and 60 % down) of every page whose text layer has at least
``--min-words`` words, draws them from the scan at the pipeline's OCR resolution, reads them the pipeline's way
(``pipeline.ocr``: the process's engine, one thread, words under 60 % confidence and boxes too narrow for their
letters dropped) with each language argument, and prints per argument: precision (the share of Tesseract's words
that the text layer has in the strip), recall (the share of the layer's words Tesseract found), words and seconds
per strip. Words are compared lower case, letters and digits only, at least two characters, numbers left out.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline import tesseract
from pipeline.ocr import MAX_PIXELS, OCR_DPI, confident
from pipeline.render import render
from pipeline.scan import find_scan

STRIPS = (0.25, 0.60)
"""Where the strips start, as fractions of the page's height (body text on most newspaper and book pages)."""
STRIP_HEIGHT = 0.06


def tokens(words: list[str]) -> list[str]:
    """Words as compared: lower case, letters and digits only, two characters or more, no bare numbers."""
    out = [re.sub(r"\W", "", word.lower()) for word in words]
    return [t for t in out if len(t) >= 2 and not t.isdigit()]


def strips(paths: list[Path], min_words: int) -> list[tuple[np.ndarray, list[str]]]:
    """(pixels drawn from the scan, the text layer's tokens there) for each strip of each page with a text layer."""
    found = []
    for path in paths:
        with pymupdf.open(path) as doc:
            for page in doc:
                layer = page.get_text("words")
                if len(layer) < min_words:
                    continue
                scan, rect = find_scan(page), page.rect
                for top in STRIPS:
                    band = (0.0, top, 1.0, top + STRIP_HEIGHT)
                    area = rect.width * rect.height * STRIP_HEIGHT
                    zoom = min(OCR_DPI / 72, (MAX_PIXELS / area) ** 0.5)
                    pixels = np.ascontiguousarray(render(page, zoom, "gray", band, scan))
                    y0, y1 = rect.y0 + top * rect.height, rect.y0 + (top + STRIP_HEIGHT) * rect.height
                    inside = [w[4] for w in layer if y0 <= (w[1] + w[3]) / 2 <= y1]
                    found.append((pixels, tokens(inside)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="PDFs or folders of PDFs (searched recursively)")
    parser.add_argument("--langs", nargs="+", default=["eng+rus+fra+deu+frk", "eng"], help="language arguments")
    parser.add_argument("--min-words", type=int, default=1000, help="text-layer words a page needs to be scored")
    args = parser.parse_args()
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # as in the workers
    paths = sorted(p for i in args.inputs for p in ([i] if i.is_file() else i.rglob("*.pdf")))
    found = strips(paths, args.min_words)
    if not found:
        sys.exit(f"no page with a text layer of {args.min_words} words or more")
    print(f"{len(found)} strips of {len(found) // len(STRIPS)} pages with a text layer ({len(paths)} PDFs)")
    print("| --ocr-lang | precision | recall | words per strip | s per strip |\n| --- | --- | --- | --- | --- |")
    for lang in args.langs:
        matched = read = layer = 0
        seconds = 0.0
        for pixels, reference in found:
            start = time.perf_counter()
            words = [word.text for word in confident(tesseract.engine(lang).read(pixels))]
            seconds += time.perf_counter() - start
            mine = tokens(words)
            matched += sum((collections.Counter(mine) & collections.Counter(reference)).values())
            read, layer = read + len(mine), layer + len(reference)
        print(
            f"| {lang} | {matched / max(read, 1):.3f} | {matched / max(layer, 1):.3f} | {read / len(found):.0f} | "
            f"{seconds / len(found):.2f} |"
        )


if __name__ == "__main__":
    main()
