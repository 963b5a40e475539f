"""A case report for the veterinarian: one PDF page with the photos, the verdict and how sure the model is, each
photo's answer and numbers, the advice, whom to call, the date and the model, in the visitor's language.

Why a PDF: a farmer can pass one file on (messaging apps, print) and a vet can read it without the Space. It is
laid out as HTML by PyMuPDF's ``insert_htmlbox``, which shapes complex scripts (Devanagari's conjuncts and vowel
signs) and falls back to the Noto fonts PyMuPDF ships for any script the base font lacks, so no font is installed
or downloaded; ``scale_low=0`` shrinks the content until it fits the one page.
"""

from __future__ import annotations

import functools
import hashlib
import html
import io
import os
import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pymupdf

from models import advice, animals, contacts
from models.classifier import photo_preview
from models.i18n import ENGLISH, text
from models.triage import CaseVerdict

PAGE = pymupdf.paper_rect("a4")
MARGIN = 36
THUMBNAIL = 360
"""Longest side, in pixels, of a photo in the report (shown about 125 pt wide: sharp when printed)."""
PICTURE_NAME = 24
"""Most characters of a photo's name under its picture (a quarter of the page wide), its start and end kept."""
TABLE_NAME = 40
"""Most characters of a photo's name in the table: the longest that leaves every column on the page."""
CSS = """
body { font-size: 11pt; }
h1 { font-size: 17pt; margin: 0 0 4pt 0; }
h2 { font-size: 13pt; margin: 10pt 0 3pt 0; }
p { margin: 3pt 0; }
.meta, .small { font-size: 9pt; color: #444; }
.headline { font-size: 14pt; font-weight: bold; }
table { border-collapse: collapse; }
.numbers td, .numbers th { border: 1px solid #888; padding: 2pt 5pt; font-size: 9.5pt; }
.photos td { padding: 2pt; font-size: 8pt; vertical-align: top; }
.disclaimer { font-size: 9pt; margin-top: 12pt; }
"""


@functools.cache
def model_version(model_id: str) -> str:
    """The model as the report names it: its name, and for a local folder the first 12 hex digits of its weights'
    SHA-256, which tell two trainings of the same name apart."""
    path = Path(model_id).expanduser()
    weights = next((p for p in (path / "model.safetensors", path / "pytorch_model.bin") if p.is_file()), None)
    if not path.exists():
        return model_id
    if weights is None:
        return path.name
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"{path.name} (sha256 {digest.hexdigest()[:12]})"


def _html(markdown: str) -> str:
    """The little Markdown the advice uses (paragraphs, ``**bold**``, ``*italic*``, ``- `` items) as HTML."""
    out = []
    for block in markdown.split("\n\n"):
        lines = [html.escape(line) for line in block.splitlines()]
        lines = [re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", line) for line in lines]
        lines = [re.sub(r"\*(.+?)\*", r"<i>\1</i>", line) for line in lines]
        if lines and all(line.startswith("- ") for line in lines):
            out.append("<ul>" + "".join(f"<li>{line[2:]}</li>" for line in lines) + "</ul>")
        else:
            out.append(f"<p>{'<br/>'.join(lines)}</p>")
    return "".join(out)


def _contacts_html(configured: contacts.Contacts, region: str | None, lang: str) -> str:
    regions = contacts.shown(configured, region)
    if not regions:
        return _html(text("contacts.none", lang))
    parts = []
    for name, entries in regions.items():
        if len(regions) > 1:
            parts.append(f"<p><b>{html.escape(name)}</b></p>")
        items = "".join(
            f"<li>{html.escape(c.name_in(lang))}: <b>{html.escape(c.phone)}</b>"
            + (f" ({html.escape(c.note_in(lang))})" if c.note else "")
            + "</li>"
            for c in entries
        )
        parts.append(f"<ul>{items}</ul>")
    return "".join(parts)


def build(
    case: CaseVerdict,
    names: Sequence[str],
    photos: Sequence[str | os.PathLike[str] | None],
    folder: str | os.PathLike[str],
    *,
    lang: str = ENGLISH,
    model: str = "",
    when: datetime,
    configured: contacts.Contacts | None = None,
    region: str | None = None,
) -> Path:
    """Write the case's report into a new folder under ``folder``; returns the PDF's path.

    ``names`` are the photos' names as the visitor knows them and ``photos`` their files (a file gone from the
    server's cache is left out of the pictures, not of the table); ``when`` is printed as given (give it a zone)."""
    archive = pymupdf.Archive()
    cells = []
    for i, (path, photo_name) in enumerate(zip(photos, names, strict=True)):
        image = photo_preview(path, THUMBNAIL) if path and Path(path).is_file() else None
        if image is None:
            continue
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=85)
        archive.add(buffer.getvalue(), f"photo{i}.jpg")
        shown = advice.shown_name(photo_name, PICTURE_NAME)
        cells.append(f'<td><img src="photo{i}.jpg" width="125"/><br/>{html.escape(shown)}</td>')
    rows = ["".join(cells[i : i + 4]) for i in range(0, len(cells), 4)]
    pictures = f'<table class="photos">{"".join(f"<tr>{r}</tr>" for r in rows)}</table>' if rows else ""

    # a long name has no space to break at: it widened the table until its numbers fell off the page
    header, table = advice.table_rows(case, [advice.shown_name(n, TABLE_NAME) for n in names], lang)
    lines = ["<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    lines += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table]

    headline = advice.headline(case, lang)
    sure = advice.sureness(case, lang)
    judged = animals.covered(case.animal)  # another animal's photos: no model, no numbers
    used = f" · {html.escape(text('report.model', lang))}: {html.escape(model)}" if judged else ""
    body = [
        f"<h1>{html.escape(text('report.title', lang))}</h1>",
        f'<p class="meta">{html.escape(text("report.date", lang))}: {when:%Y-%m-%d %H:%M %Z}{used}</p>',
        f"<h2>{html.escape(text('report.result', lang))}</h2>",
        f'<p class="headline">{html.escape(headline)}</p>',
        f"<p>{html.escape(text('report.sure', lang))}: {html.escape(sure)}</p>" if sure else "",
        f"<h2>{html.escape(text('report.photos', lang))}</h2>",
        pictures,
        f'<p class="small">{html.escape(text("report.numbers", lang))}</p>' if judged else "",
        f'<table class="numbers">{"".join(lines)}</table>' if judged else "",
        f"<h2>{html.escape(text('report.advice', lang))}</h2>",
        _html(advice.advice(case, lang)),
    ]
    if advice.calls_vet(case):
        body += [
            f"<h2>{html.escape(text('report.contacts', lang))}</h2>",
            _contacts_html(configured or {}, region, lang),
        ]
    body.append(f'<p class="disclaimer"><i>{html.escape(text("report.disclaimer", lang))}</i></p>')

    target = Path(folder) / uuid.uuid4().hex
    target.mkdir(parents=True)
    path = target / f"case-report-{when:%Y%m%d-%H%M}-{lang}.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page(width=PAGE.width, height=PAGE.height)
        where = pymupdf.Rect(MARGIN, MARGIN, PAGE.width - MARGIN, PAGE.height - MARGIN)
        page.insert_htmlbox(where, "".join(body), css=CSS, archive=archive, scale_low=0)
        doc.set_metadata({"title": f"{text('report.title', lang)}: {headline}", "creator": model})
        doc.save(path, garbage=3, deflate=True)
    return path
