"""Scanned PDF archive → curated image dataset, one page at a time (no torch, no gradio here).

A run is ``run(inputs, layout, options, execution)``: what the dataset is (:class:`Options`), where it is
written (:class:`ZipLayout`, :class:`FolderLayout`, :class:`ShardsLayout`, or a path read by :func:`layout_for`)
and how the run goes (:class:`Execution`, which never changes a byte of the output).
"""

from pipeline.execution import Execution, default_workers
from pipeline.layout import FolderLayout, Layout, ShardsLayout, ZipLayout, layout_for
from pipeline.options import Options
from pipeline.orchestrator import FileSummary, NothingToDo, Progress, Summary, run, run_pages
from pipeline.source import PdfError, check_pdf, find_pdfs, unpack_pdfs
from pipeline.writer import OutputError

__all__ = [
    "Execution",
    "FileSummary",
    "FolderLayout",
    "Layout",
    "NothingToDo",
    "Options",
    "OutputError",
    "PdfError",
    "Progress",
    "ShardsLayout",
    "Summary",
    "ZipLayout",
    "check_pdf",
    "default_workers",
    "find_pdfs",
    "layout_for",
    "run",
    "run_pages",
    "unpack_pdfs",
]
