"""Wrap scanned page images into PDFs the way scanners deliver them: one PDF per book, one image per page.

``python bench/wrap_pages.py ../shared/data/pages -o /tmp/books`` reads ``labels.csv`` (columns ``file`` and
``book``) and writes ``<book>.pdf`` with pages sized to the scan at ``--dpi`` (default 300), in file order.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import pymupdf
from PIL import Image


def wrap_pages(pages_dir: Path, out_dir: Path, dpi: int = 300) -> dict[str, list[str]]:
    """Write one PDF per book; returns ``{pdf name: [image file per page, in page order]}``."""
    books: dict[str, list[str]] = defaultdict(list)
    with (pages_dir / "labels.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            books[row["book"]].append(row["file"])
    out_dir.mkdir(parents=True, exist_ok=True)
    layout = {}
    for book, files in sorted(books.items()):
        files.sort()
        doc = pymupdf.open()
        for name in files:
            path = pages_dir / "images" / name
            with Image.open(path) as image:
                width, height = image.size
            page = doc.new_page(width=width * 72 / dpi, height=height * 72 / dpi)
            page.insert_image(page.rect, filename=str(path))
        doc.save(out_dir / f"{book}.pdf", garbage=1, deflate=True)
        doc.close()
        layout[f"{book}.pdf"] = files
    return layout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages_dir", type=Path, help="folder with labels.csv and images/")
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder for the PDFs")
    parser.add_argument("--dpi", type=int, default=300)
    args = parser.parse_args()
    layout = wrap_pages(args.pages_dir, args.output, args.dpi)
    print(f"{len(layout)} PDFs, {sum(map(len, layout.values()))} pages → {args.output}")


if __name__ == "__main__":
    main()
