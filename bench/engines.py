"""Local engine vs Ray engine on the same archive: pages/s and peak memory, then what a 20-million-page
archive would cost on N Ray nodes, from the measured per-page cost.

``python bench/engines.py ../shared/data/pdfs [--scale 10] [--workers 2] [--nodes 1 10 100] [--cpus-per-node 16]
[--node-hour-usd 0.8]`` merges the PDFs into one (``--scale`` times over, as ``throughput.py`` does) and runs
``pipeline.run`` (what ``python -m pipeline`` calls; default options) on it with the local engine and with Ray
(a local Ray of ``--workers`` CPUs started for the run), each in a fresh process tree whose summed RSS / PSS
is sampled (``measure.py``: Ray's GCS, raylet and workers included). The outputs must be byte-identical
(every zip entry compared). The projection assumes page ranges spread evenly over the cluster's CPUs, with the
single writer (the driver) as the other limit: per-page worker cost = pipeline seconds × workers / pages (the
driver shares these CPUs here, so this errs high); driver cost = the driver's own CPU seconds per page.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path

from measure import measure
from throughput import merge

DRIVER = """
import sys, time
from pipeline import Execution, run
pdf, out, engine, workers = sys.argv[1:]
marks = []
summary = run([pdf], out, execution=Execution(engine=engine, workers=int(workers), resume=False),
              on_page=lambda record, progress: marks.append(time.process_time()))
print(f"pipeline {summary.seconds:.3f} s, driver {(marks[-1] - marks[0]) / (len(marks) - 1):.6f} s/page")
"""
"""``pipeline.run`` with default options, as the CLI calls it; the driver's CPU per page is measured from the
first committed page to the last, so start-up (imports, Ray's start) is left out."""


def entries(path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="PDFs or folders of PDFs")
    parser.add_argument("--scale", type=int, default=10, help="repeat the merged pages this many times")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--pages", type=float, default=20e6, help="archive size for the projection")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--cpus-per-node", type=int, default=16)
    parser.add_argument("--node-hour-usd", type=float, default=None, help="price of one node-hour, for a cost")
    args = parser.parse_args()
    sources = sorted(p for item in args.inputs for p in ([item] if item.is_file() else item.rglob("*.pdf")))
    with tempfile.TemporaryDirectory() as tmp:
        merged = Path(tmp) / "merged.pdf"
        pages = merge(sources, merged, args.scale)
        print(f"input: {len(sources)} PDFs merged ×{args.scale} → {pages} pages, "
              f"{merged.stat().st_size / 2**20:.0f} MB; {args.workers} workers / Ray CPUs")  # fmt: skip
        print("| engine | wall s | pipeline s | pages/s (pipeline) | pages/s (wall) | peak RSS MB | peak PSS MB "
              "| driver CPU ms/page |")  # fmt: skip
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        costs = {}
        for engine in ("local", "ray"):
            out = Path(tmp) / f"{engine}.zip"
            run = measure([sys.executable, "-c", DRIVER, str(merged), str(out), engine, str(args.workers)])
            seconds = float(re.search(r"pipeline ([\d.]+) s", run.stdout).group(1))
            driver = float(re.search(r"driver ([\d.]+) s/page", run.stdout).group(1)) * pages
            costs[engine] = (seconds * args.workers / pages, driver / pages)
            print(f"| {engine} | {run.seconds:.1f} | {seconds:.1f} | {pages / seconds:.2f} | {pages / run.seconds:.2f} "
                  f"| {run.peak_rss_mb:,.0f} | {run.peak_pss_mb:,.0f} | {driver / pages * 1000:.1f} |")  # fmt: skip
        same = entries(Path(tmp) / "local.zip") == entries(Path(tmp) / "ray.zip")
        print(f"outputs byte-identical (every zip entry): {same}")
    worker_s, driver_s = costs["ray"]
    print(
        f"\nprojection: {args.pages:,.0f} pages; {worker_s:.3f} CPU-s per page in workers, {driver_s * 1000:.1f} ms "
        f"per page in the single writer (ceiling {1 / driver_s:,.0f} pages/s); {args.cpus_per_node} CPUs per node"
    )
    print("| nodes | CPUs | pages/s | hours | node-hours" + (" | USD |" if args.node_hour_usd else " |"))
    print("| --- | --- | --- | --- | ---" + (" | --- |" if args.node_hour_usd else " |"))
    for nodes in args.nodes:
        cpus = nodes * args.cpus_per_node
        rate = min(cpus / worker_s, 1 / driver_s)
        hours = args.pages / rate / 3600
        cost = f" | {hours * nodes * args.node_hour_usd:,.0f} |" if args.node_hour_usd else " |"
        print(f"| {nodes} | {cpus:,} | {rate:,.0f} | {hours:,.1f} | {hours * nodes:,.0f}{cost}")


if __name__ == "__main__":
    main()
