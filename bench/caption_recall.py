"""Do captions keep their words after a change? The same inputs through two checkouts of the pipeline, compared.

``python bench/caption_recall.py OLD_CHECKOUT INPUT... [--workers 2] [-- PIPELINE_OPTIONS]`` runs ``python -m
pipeline`` on the inputs from ``OLD_CHECKOUT`` (a clone of an earlier commit) and from this one, with the same
options, and prints per image written by both: the share of the old caption's words found again in the new one,
and in all: images, captions whose words are all kept, the share of old caption words found again (each word as
often as it occurred), and the images written by one run only. OCR words are what changes between versions of the
OCR; a text layer's words should come back whole.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def captions(checkout: Path, inputs: list[str], out: Path, workers: int, options: list[str]) -> tuple[dict, float]:
    """The run's captions by image name, and its seconds."""
    command = [sys.executable, "-m", "pipeline", *inputs, "-o", f"{out}/", "--workers", str(workers), "--no-resume",
               *options]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, cwd=checkout, check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in (out / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    return {row["file_name"]: row["text"] for row in rows}, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="a checkout of the earlier code")
    parser.add_argument("inputs", nargs="+", help="PDFs or folders")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--show", type=int, default=5, help="print this many of the captions that lost most")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)  # argparse takes what follows "--" for inputs
    args, options = parser.parse_known_args(argv[:split])
    options += argv[split + 1 :]
    inputs = [str(Path(item).resolve()) for item in args.inputs]
    with tempfile.TemporaryDirectory() as tmp:
        old, old_s = captions(args.old.resolve(), inputs, Path(tmp) / "old", args.workers, options)
        new, new_s = captions(ROOT, inputs, Path(tmp) / "new", args.workers, options)
    both = sorted(set(old) & set(new))
    found = total = whole = 0
    losses = []
    for name in both:
        before, after = collections.Counter(old[name].split()), collections.Counter(new[name].split())
        kept = sum((before & after).values())
        found, total, whole = found + kept, total + before.total(), whole + (kept == before.total())
        losses.append((kept / max(1, before.total()), name))
    print(f"{len(both)} images in both runs ({len(set(old) - set(new))} old only, {len(set(new) - set(old))} new only);"
          f" old {old_s:.1f} s, new {new_s:.1f} s ({args.workers} workers)")  # fmt: skip
    print(
        f"captions with every old word: {whole} / {len(both)}; old caption words found again: {found} / {total} "
        f"({found / max(1, total):.1%})"
    )
    for share, name in sorted(losses)[: args.show]:
        print(f"  {share:.0%} {name}\n    old: {old[name]}\n    new: {new[name]}")


if __name__ == "__main__":
    main()
