"""The purity bench's material: DATA's labelled pages as PDFs, with the source and kind of each, and the same
pages re-wrapped at other declared sizes.

Three materials, each a folder of ``DATA`` (``bench/eval_purity.py`` reads them, never copies them):

* ``pages``: binarized book pages, wrapped one PDF per book (``bench/wrap_pages.py``) as scanners deliver them;
  true boxes in image pixels. Source: the book series (the volumes of one work are one source).
* ``pdfs``: scanned newspaper (and one book) PDFs as they are. Source: the newspaper title, by LCCN.
* ``pages_more``: one-page PDFs of picture kinds without text (albums, archive cards, drawings, plates); true
  boxes as page fractions. Source: the collection, its repository's owner: the two ``altomator`` repositories
  are both BnF Gallica material gathered by one person, so holding one out while fitting on the other would
  not be "a collection never seen".
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import NamedTuple

import pymupdf
from wrap_pages import wrap_pages

from pipeline.scan import find_scan

Box = tuple[float, float, float, float]
Key = tuple[str, int]
"""A page: its PDF's file name and its 1-based page number (as the pipeline's manifest names it)."""
POSITIVE, NEGATIVE, UNSCORED = 1, 0, -1
MATERIALS = ("pages", "pdfs", "pages_more")
BOOK_LABELS = {"illustration": POSITIVE, "text": NEGATIVE, "minor": UNSCORED}
PDF_LABELS = {"illustration": POSITIVE, "text": NEGATIVE, "target": NEGATIVE, "text_minor_cuts": UNSCORED}
MORE_LABELS = {"illustration": POSITIVE, "text": NEGATIVE}
PDF_KINDS = {"text_minor_cuts": "text, small cuts"}


class Truth(NamedTuple):
    """What a page is: its label, its true picture boxes (page fractions), where it comes from and its kind."""

    label: int
    boxes: list[Box]
    material: str
    source: str
    kind: str


def source_of(book: str = "", title: str = "", repo: str = "") -> str:
    """The source a page comes from, for leave-one-source-out: a book series (volumes ``01``, ``02`` of one
    work are one source), a newspaper title (its LCCN when the title names one) or a collection (the owner of
    the repository it was kept in)."""
    if book:
        return "book:" + re.sub(r"\d+$", "", book)
    if repo:
        return "collection:" + repo.split("/")[0]
    lccn = re.search(r"\bsn\d{8}\b", title)
    return "title:" + (lccn.group(0) if lccn else title)


def parse_boxes(text: str) -> list[Box]:
    """Boxes written ``x0 y0 x1 y1``, several joined by ``;``."""
    return [tuple(map(float, part.split())) for part in text.split(";") if part.strip()]  # type: ignore[misc]


def load_truth(data: Path, books_dir: Path, materials: tuple[str, ...] = MATERIALS) -> tuple[dict[Key, Truth], dict]:
    """``({page: Truth}, {material: folder of its PDFs})``; the book pages are wrapped into ``books_dir``."""
    truth: dict[Key, Truth] = {}
    folders: dict[str, Path] = {}
    if "pages" in materials:
        folders["pages"] = books_dir
        layout = wrap_pages(data / "pages", books_dir)
        rows = {r["file"]: r for r in csv.DictReader((data / "pages" / "labels.csv").open(newline=""))}
        for pdf, files in layout.items():
            for i, name in enumerate(files, 1):
                r = rows[name]
                w, h = float(r["width"]), float(r["height"])
                pixels = parse_boxes(r["graphic_bboxes_xyxy"].replace("|", ";"))
                boxes = [(x0 / w, y0 / h, x1 / w, y1 / h) for x0, y0, x1, y1 in pixels]
                source = source_of(book=r["book"])
                truth[(pdf, i)] = Truth(BOOK_LABELS[r["label"]], boxes, "pages", source, "book " + r["label"])
    if "pdfs" in materials:
        folders["pdfs"] = data / "pdfs"
        for r in csv.DictReader((data / "pdfs" / "labels.csv").open(newline="")):
            labels = r["label"].split(";")
            # One PDF is a book page (no LCCN, no "News" in its title); the others are newspaper pages.
            paper = bool(re.search(r"\bsn\d{8}\b", r["title"])) or "News" in r["title"]
            for i in range(int(r["pages"])):
                label = labels[i] if len(labels) > 1 else labels[0]
                if label == "target":
                    kind = "microfilm target"
                else:
                    kind = "newspaper " + PDF_KINDS.get(label, label) if paper else "book " + label
                truth[(r["file"], i + 1)] = Truth(PDF_LABELS[label], [], "pdfs", source_of(title=r["title"]), kind)
    if "pages_more" in materials:
        folders["pages_more"] = data / "pages_more"
        for r in csv.DictReader((data / "pages_more" / "labels.csv").open(newline="")):
            key = (r["file"], 1)
            if key in truth:
                raise ValueError(f"{r['file']} is in two materials: pages are keyed by file name")
            source = source_of(repo=r["source_repo"])
            truth[key] = Truth(MORE_LABELS[r["label"]], parse_boxes(r["boxes"]), "pages_more", source, r["kind"])
    return truth, folders


def rewrap(doc: pymupdf.Document, index: int, scale: float) -> pymupdf.Document:
    """Page ``index`` of ``doc`` in a new one-page PDF whose page is declared ``scale`` times as large each way,
    showing the same embedded image (its stream copied byte for byte, filters and all), as an archive that
    wrapped the scan at another nominal resolution would deliver it. A page that is not one scan is shown
    whole instead (``show_pdf_page``), which keeps its drawing the same too."""
    source = doc[index]
    out = pymupdf.open()
    scan = find_scan(source)
    width, height = source.rect.width * scale, source.rect.height * scale
    if scan is None:
        out.new_page(width=width, height=height).show_pdf_page(pymupdf.Rect(0, 0, width, height), doc, index)
        return out
    out.insert_pdf(doc, from_page=index, to_page=index)
    xref = out[0].get_images(full=True)[0][0]
    page = out.new_page(width=width, height=height)
    x0, y0 = source.rect.x0, source.rect.y0
    rect = pymupdf.Rect(scan.rect.x0 - x0, scan.rect.y0 - y0, scan.rect.x1 - x0, scan.rect.y1 - y0)
    page.insert_image(rect * scale, xref=xref, keep_proportion=False)
    out.delete_page(0)
    return out
