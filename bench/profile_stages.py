"""Where a page's time goes: each stage of the worker, in ms per page and per kept page, on real PDFs.

``python bench/profile_stages.py DATA/pdfs [--filter sigma --threshold 45 --fit square --upscale] [--doc FILE]``
merges the PDFs into one and runs the worker's own ``process_task`` over every page in this process (one worker's
work, no pool) under ``cProfile``; each stage is the cumulative time of the function that does it, so the stages
nest (``outputs`` holds render, fit, encode, fingerprints, words and kind). Then the whole run (2 workers, the
same options) is timed with the writer's share: the main process's time in ``Writer.commit`` (the zip, its
captions and manifest). cProfile adds a little to every Python call; the stages are coarse, so the shares hold.
Options after the folder are the CLI's (``python -m pipeline --help``).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

from throughput import merge

from docs import markdown_table, write_section

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import Execution, Options, ZipLayout, run  # noqa: E402
from pipeline.cli import build_parser  # noqa: E402
from pipeline.settings import from_args  # noqa: E402
from pipeline.tasks import Task  # noqa: E402
from pipeline.worker import process_task  # noqa: E402

STAGES: list[tuple[str, str, str, str | None]] = [
    # (label, file path part, function, only calls from this function (None: all))
    ("open the PDF", "pipeline/source.py", "open_pdf", None),
    ("load the page", "pymupdf", "load_page", None),
    ("find its scan", "pipeline/scan.py", "find_scan", None),
    ("judge's view (decode or draw)", "pipeline/worker.py", "judge_view", None),
    ("  of which: scan decode", "pipeline/scan.py", "scan_view", "judge_view"),
    ("  of which: MuPDF drawing", "pipeline/render.py", "render", "judge_view"),
    ("judge", "pipeline/judges/", "__call__", "judge_page"),
    ("redrawn near the threshold", "pipeline/render.py", "render", "judge_page"),
    ("kept: outputs", "pipeline/worker.py", "_outputs", None),
    ("  render at output size", "pipeline/render.py", "render", "_outputs"),
    ("  fit (resize)", "pipeline/fit.py", "fit", "_outputs"),
    ("  JPEG encode", "pipeline/fit.py", "encode_jpeg", "_outputs"),
    ("  fingerprint (hash)", "pipeline/dedupe.py", "fingerprint", "_outputs"),
    ("  keypoints (recut dedupe)", "pipeline/dedupe.py", "local_features", "_outputs"),
    ("  words (text layer, OCR)", "pipeline/worker.py", "_words", "_outputs"),
    ("  kind", "pipeline/kinds.py", "picture_kind", "_outputs"),
    ("borderline thumbnail", "pipeline/report.py", "thumbnail_jpeg", None),
    ("cleanup (gc, store, trim)", "pipeline/cleanup.py", "after_page", None),
]


def cumulative(stats: pstats.Stats, path: str, name: str, caller: str | None) -> float:
    """Seconds in functions named ``name`` in files whose path holds ``path`` (summed when several match: the
    judges' ``__call__``), only the calls made by functions named ``caller`` when one is given."""
    total = 0.0
    for (file, _, function), (_, _, _, seconds, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if function != name or path not in file.replace("\\", "/"):
            continue
        if caller is None:
            total += seconds
        else:
            total += sum(edge[3] for (_, _, by), edge in callers.items() if by == caller)
    return total


def profile_worker(pdf: Path, pages: int, options: Options) -> tuple[list[list[object]], int, float]:
    """Rows (stage, ms per page, ms per kept page, share of the time) of one worker's pass over ``pdf``."""
    task = Task(path=pdf, stem=pdf.stem, pages=tuple(range(pages)))
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    results = process_task(task, options)
    profiler.disable()
    seconds = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    kept = sum(bool(result.images) for result in results)
    rows: list[list[object]] = []
    for label, path, name, caller in STAGES:
        value = cumulative(stats, path, name, caller)
        outputs = (label.startswith("  ") and "of which" not in label) or label == "kept: outputs"
        per_kept = f"{1000 * value / kept:.1f}" if kept and outputs else ""
        rows.append([label, f"{1000 * value / pages:.1f}", per_kept, f"{value / seconds:.0%}"])
    rows.append(["all (one worker, profiled)", f"{1000 * seconds / pages:.1f}", "", "100%"])
    return rows, kept, seconds


def whole_run(pdf: Path, options: Options, workers: int) -> tuple[float, float]:
    """Seconds of the whole run (``workers`` processes) and the main process's seconds in ``Writer.commit``."""
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        profiler.enable()
        run([pdf], ZipLayout(Path(folder) / "out.zip"), options, Execution(workers=workers))
        profiler.disable()
        seconds = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    return seconds, cumulative(stats, "pipeline/", "commit", "_commit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a folder of PDFs (merged into one)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the whole run (default 2)")
    parser.add_argument("--doc", type=Path, help="write the table into this Markdown file")
    args, rest = parser.parse_known_args()
    cli = build_parser().parse_args(["x.pdf", "-o", "x.zip", *rest])
    options = from_args(Options, cli)
    with tempfile.TemporaryDirectory() as folder:
        pdf = Path(folder) / "merged.pdf"
        pages = merge(sorted(args.data.glob("*.pdf")), pdf, 1)
        rows, kept, seconds = profile_worker(pdf, pages, options)
        run_seconds, commit = whole_run(pdf, options, args.workers)
    flags = " ".join(rest) or "default options"
    body = (
        f"{pages} pages ({kept} kept) of {args.data.name}/ merged, {flags}; one worker in this process under "
        f"cProfile: {seconds:.1f} s.\n\n"
        + markdown_table(["stage", "ms per page", "ms per kept page", "share"], rows)
        + f"\n\nThe whole run ({args.workers} workers): {run_seconds:.1f} s, {pages / run_seconds:.1f} pages/s; "
        f"the main process wrote for {commit:.2f} s of it ({1000 * commit / pages:.1f} ms per page: zip entries, "
        "captions, manifest, journal).\n"
    )
    print(body)
    if args.doc:
        write_section(args.doc, body)


if __name__ == "__main__":
    main()
