"""Command line: ``python -m pipeline INPUT... -o OUT.zip`` with a progress bar and a one-line summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tqdm import tqdm

from pipeline.engines import ENGINES
from pipeline.journal import ResumeMismatch
from pipeline.judges import DEFAULT_JUDGE, JUDGES
from pipeline.manifest import PageRecord
from pipeline.options import Options
from pipeline.orchestrator import NothingToDo, Progress, default_workers, run
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
        "--filter",
        choices=sorted(JUDGES),
        default=DEFAULT_JUDGE,
        help=f"page judge (default: {DEFAULT_JUDGE}). structure: finds pictures by their structure (dense, varied "
        "ink that fills every row, unlike lines of text) and their boxes, score 0-1; sigma: the article's "
        "grey-level standard deviation at Matrix(2, 2)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="keep a page when its score passes this (default: the judge's own: 0.5 for structure, 45 for sigma)",
    )
    parser.add_argument(
        "--fit",
        default="bucket",
        metavar="MODE",
        help="bucket (default): keep the aspect ratio, downscale to the nearest SDXL ~1 MP bucket and centre-crop "
        "the rest (1024x1024, 1152x896, 1216x832, 1344x768, 1536x640 and portraits); square: SIZExSIZE as the "
        "article does (aspect ratio not kept); 'max-side N': keep the aspect ratio, longer side at most N",
    )
    parser.add_argument(
        "--size", type=int, default=1024, help="square side, bucket base or max side in pixels (default: 1024)"
    )
    parser.add_argument(
        "--min-side",
        type=int,
        default=Options.min_side,
        metavar="PX",
        help="drop images whose shorter side is below PX at the scan's own resolution (default: %(default)s); "
        "images between this and the target are kept at their size, never upscaled",
    )
    parser.add_argument(
        "--upscale", action="store_true", help="interpolate small images up to the target (off: never upscale)"
    )
    parser.add_argument("--quality", type=int, default=92, help="JPEG quality 1-100 (default: 92)")
    parser.add_argument(
        "--dedupe",
        type=int,
        default=Options.dedupe,
        metavar="BITS",
        help="drop an image whose perceptual hash is within BITS of an earlier one, or whose keypoints show the "
        "same picture under another box, across all inputs (default: %(default)s; exact copies are always "
        "caught at 0); -1 keeps duplicates",
    )
    parser.add_argument(
        "--caption",
        default=Options.caption,
        metavar="TEMPLATE",
        help="caption written next to each image (kohya .txt) and in metadata.jsonl; placeholders {trigger}, "
        "{words} (the words printed in and around the picture), {source} (PDF name), {page}, {region} "
        "(default: '%(default)s')",
    )
    parser.add_argument("--trigger", default="", help="the trigger word(s) that {trigger} stands for")
    parser.add_argument("--kohya-config", action="store_true", help="also write a kohya sd-scripts dataset_config.toml")
    parser.add_argument(
        "--crop",
        choices=("auto", "always", "never"),
        nargs="?",
        const="always",
        default="auto",
        help="auto (default): write the judge's picture regions where they cover less than half of the page (a "
        "cartoon on a newspaper page), the whole page otherwise (a plate); always (or --crop alone): regions; "
        "never: whole pages",
    )
    parser.add_argument(
        "--gc-every",
        type=int,
        default=1,
        metavar="N",
        help="collect garbage and empty MuPDF's cache every N pages (default: 1, the article's per-page cleanup)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        metavar="N",
        help="worker processes over page ranges (default: the machine's cores, here %(default)s; 1 = least memory)",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where page ranges run: local (default): --workers processes on this machine; ray: Ray tasks, on "
        "the cluster at --ray-address or on a local Ray of --workers CPUs started for the run (same output)",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="with --engine ray: 'auto' (the cluster this machine belongs to) or HOST:PORT of a Ray head",
    )
    parser.add_argument(
        "--prefetch",
        type=int,
        default=2,
        metavar="N",
        help="remote inputs (s3://, hf://, https://...): at most N PDFs copied to local disk at once, each "
        "deleted once its pages are written (default: %(default)s)",
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
        "--max-pages",
        type=int,
        default=None,
        metavar="N",
        help="refuse a run of more than N pages in all, before processing any (default: no limit)",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        metavar="S",
        help="stop after S seconds with what is done written (rerun the command to continue; default: no limit)",
    )
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="continue an interrupted run of the same command from its progress file (OUT.zip.progress or "
        "DIR/.progress, removed when a run completes); --no-resume starts over (default: --resume)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 when the run finished, even with bad pages)."""
    args = build_parser().parse_args(argv)
    try:
        options = Options(
            filter=args.filter,
            threshold=args.threshold,
            fit=args.fit,
            size=args.size,
            min_side=args.min_side,
            upscale=args.upscale,
            quality=args.quality,
            crop=args.crop,
            dedupe=None if args.dedupe < 0 else args.dedupe,
            caption=args.caption,
            trigger=args.trigger,
            kohya_config=args.kohya_config,
            gc_every=args.gc_every,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
        summary = run(
            args.inputs,
            args.output,
            options,
            on_page,
            workers=args.workers,
            resume=args.resume,
            max_pages=args.max_pages,
            max_seconds=args.max_seconds,
            engine=args.engine,
            ray_address=args.ray_address,
            prefetch=args.prefetch,
            shard_size=args.shard_size,
        )
    except (NothingToDo, OutputError, ResumeMismatch, FileNotFoundError, ValueError) as exc:
        bar.close()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted; rerun the same command to continue ({args.output})", file=sys.stderr)
        return 130
    bar.close()
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
        + (f"; {summary.stopped}: rerun the same command to continue" if summary.stopped else "")
    )
    return 0
