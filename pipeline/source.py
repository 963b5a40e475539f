"""Find PDFs and open them by path, turning MuPDF's failures into messages that name the file."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pymupdf


class PdfError(Exception):
    """A PDF that cannot be processed at all; the message names the file and the reason."""


def find_pdfs(inputs: Iterable[str | Path]) -> list[Path]:
    """PDF files among ``inputs``: files as given, folders searched recursively, sorted, no repeats.

    Raises ``FileNotFoundError`` for an input that does not exist, so a typo is not a silent no-op.
    """
    found: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            found.extend(sorted(p for p in item.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()))
        elif item.is_file():
            found.append(item)
        else:
            raise FileNotFoundError(f"{item}: no such file or folder")
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def open_pdf(path: str | Path) -> pymupdf.Document:
    """Open a PDF by path (MuPDF reads it lazily; the file is never loaded whole).

    Raises ``PdfError`` for a file that is not a PDF, is encrypted, is damaged or has no pages.
    """
    import pymupdf  # here, not at the top: the main process of a parallel run never opens a PDF

    name = Path(path).name
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except pymupdf.EmptyFileError:
        raise PdfError(f"{name}: the file is empty") from None
    except pymupdf.FileDataError:
        raise PdfError(f"{name}: not a PDF, or damaged beyond repair") from None
    except (RuntimeError, ValueError) as exc:
        raise PdfError(f"{name}: cannot be opened ({exc})") from None
    if doc.needs_pass:
        doc.close()
        raise PdfError(f"{name}: encrypted (password protected); decrypt it first")
    if doc.page_count == 0:
        doc.close()
        raise PdfError(f"{name}: has no pages")
    return doc


def check_pdf(path: str | Path) -> int:
    """Validate a PDF before a run and return its page count (``PdfError`` when unusable)."""
    with open_pdf(path) as doc:
        return doc.page_count
