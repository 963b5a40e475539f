"""Scanned PDF archive → curated image dataset, one page at a time (no torch, no gradio here)."""

from pipeline.options import Options
from pipeline.orchestrator import FileSummary, NothingToDo, Progress, Summary, default_workers, run, run_pages
from pipeline.source import PdfError, check_pdf, find_pdfs, unpack_pdfs
from pipeline.writer import OutputError

__all__ = [
    "FileSummary",
    "NothingToDo",
    "Options",
    "OutputError",
    "PdfError",
    "Progress",
    "Summary",
    "check_pdf",
    "default_workers",
    "find_pdfs",
    "run",
    "run_pages",
    "unpack_pdfs",
]
