"""Command line: ``python -m pipeline INPUT... -o OUT.zip`` with a progress bar and a one-line summary."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from contextlib import ExitStack

from tqdm import tqdm

from pipeline.captions import CAPTIONER_LOADER, Captioner, CaptionerLoader, captioner_note, trigger_note
from pipeline.execution import Execution
from pipeline.journal import ResumeMismatch
from pipeline.layout import Layout, layout_for
from pipeline.manifest import PageRecord
from pipeline.ocr import ocr_note
from pipeline.options import Options
from pipeline.orchestrator import NothingToDo, Progress, run
from pipeline.settings import add_settings, from_args
from pipeline.source import is_url
from pipeline.writer import OutputError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline",
        description="Turn scanned PDFs into a curated image dataset: pages are streamed one at a time, "
        "judged, and the kept ones written as JPEGs with a manifest.csv (one row per page).",
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="PDF files and/or folders (searched recursively), local or any URL fsspec reads (s3://bucket/scans/, "
        "hf://datasets/org/archive, https://host/issue.pdf; globs too)",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="OUT.zip for a zip (JPEGs stored, manifest.csv at its root), or DIR/ for a folder",
    )
    parser.add_argument(
        "--shard-size",
        type=int,
        default=None,
        metavar="N",
        help="write numbered shards of N pages each (OUT-00000.zip... or DIR/00000/...), each with its own "
        "manifest, and an index; OUT may then be an fsspec URL (s3://bucket/ds/), shards uploaded as they close",
    )
    parser.add_argument(
        "--captioner-loader",
        default=CAPTIONER_LOADER,
        metavar="MODULE:FUNCTION",
        help="with --captioner: the function that loads its model (pipeline.captions.CaptionerLoader; default: "
        "%(default)s)",
    )
    add_settings(parser.add_argument_group("what the dataset is"), Options)
    add_settings(parser.add_argument_group("how the run goes (the output is the same whichever)"), Execution)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 when the run finished, even with bad pages)."""
    args = build_parser().parse_args(argv)
    try:
        options, execution = from_args(Options, args), from_args(Execution, args)
        layout = layout_for(args.output, args.shard_size)
    except (ValueError, OutputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    template = options.captions()
    for note in (
        trigger_note(template),
        captioner_note(template, options.captioner),
        ocr_note(template, options.ocr, options.ocr_lang),
    ):
        if note:  # once each, before the progress bar
            print(note, file=sys.stderr)
    with ExitStack() as held:  # the captioning model, freed when the run ends however it ends
        try:
            captioner = _captioner(held, options.captioner, args.captioner_loader) if options.captioner else None
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return _run(args, options, execution, layout, captioner)


def _captioner(held: ExitStack, model_id: str, loader: str) -> Captioner:
    """The captioning model, loaded for the run into ``held`` by the :data:`pipeline.captions.CaptionerLoader` that
    ``loader`` names, imported only here: the default one (``models.captioner``) needs torch and transformers, for
    ``--captioner`` alone. Every failure is a ``ValueError`` of one sentence."""
    captioner = held.enter_context(_loader(loader)(model_id))
    print(f"captioning with {model_id} on {captioner.device}", file=sys.stderr)
    return captioner


def _loader(path: str) -> CaptionerLoader:
    """The loader ``path`` (``MODULE:FUNCTION``) names; a ``ValueError`` of one sentence when it cannot be had."""
    module, _, name = path.partition(":")
    try:
        found = getattr(importlib.import_module(module), name, None) if module and name else None
    except ImportError as exc:
        if path == CAPTIONER_LOADER:
            raise ValueError(
                f"--captioner needs torch and transformers (and this repository's models package): {exc}; "
                "pip install torch transformers"
            ) from None
        raise ValueError(f"--captioner-loader {path}: cannot import {module} ({exc})") from None
    if not callable(found):
        raise ValueError(f"--captioner-loader {path}: not MODULE:FUNCTION naming a function")
    return found


def _run(
    args: argparse.Namespace,
    options: Options,
    execution: Execution,
    layout: Layout,
    captioner: Captioner | None,
) -> int:
    """The run with its progress bar and summary line; the exit code."""
    bar = tqdm(unit="page", dynamic_ncols=True, file=sys.stderr)

    def on_page(record: PageRecord, progress: Progress) -> None:
        if bar.total != progress.total:
            bar.total, bar.n = progress.total, progress.done - 1
        bar.set_postfix(kept=progress.kept, out=f"{progress.output_bytes / 2**20:.0f}MB", refresh=False)
        bar.update(1)
        if record.error:
            where = f" page {record.page}" if record.page is not None else ""
            tqdm.write(f"skipped {record.source}{where}: {record.error}", file=sys.stderr)

    try:
        summary = run(args.inputs, layout, options, execution, on_page, captioner)
    except (NothingToDo, OutputError, ResumeMismatch, FileNotFoundError, ValueError) as exc:
        bar.close()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a quota, a file too large: what was committed stays
        bar.close()
        where = f" ({exc.filename})" if exc.filename else ""
        print(
            f"error: {exc.strerror or exc}{where}; make room and rerun the same command to continue ({args.output})",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted; rerun the same command to continue ({args.output})", file=sys.stderr)
        return 130
    bar.close()
    if summary.kinds is not None and summary.kinds.counts:  # the kinds first: the run's line stays the last
        lost = summary.kinds.warnings()
        print(
            f"by kind, kept/dropped pages: {summary.kinds.line()}"
            + (f"; likely lost: {'; '.join(lost)}: check --threshold or --filter" if lost else "")
        )
    resumed = f" (+{summary.resumed} done before)" if summary.resumed else ""
    print(
        f"{summary.pages} pages{resumed}, {summary.kept} kept ({summary.images} images, {summary.duplicates} "
        f"duplicates and {summary.too_small} too small dropped), {summary.errors} errors, "
        f"{summary.warnings} with MuPDF warnings, "
        f"{summary.seconds:.1f} s → {args.output if is_url(args.output) else summary.output} "
        f"({summary.output_bytes / 2**20:.1f} MB{' left here' if is_url(args.output) else ''})"
        + (
            f"; peak local disk {summary.peak_disk / 2**20:.1f} MB ({summary.remote} remote PDFs fetched + output)"
            if summary.remote
            else ""
        )
        + (f"; kept but not written: {summary.too_small_text('--min-side')}" if summary.too_small else "")
        + (f"; {summary.ocr_text()} (--no-ocr skips it)" if summary.ocr_pages else "")
        + (f"; {summary.stopped}: rerun the same command to continue" if summary.stopped else "")
    )
    return 0
