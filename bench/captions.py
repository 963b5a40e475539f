"""Captions before and after issue #30: empty ones, printed words in them, and what OCR costs per page.

``python bench/captions.py DATA/pdfs /tmp/books [--workers 1] [--also-lang eng+rus+fra+deu] [--doc docs/output.md]``
runs the pipeline on the inputs (PDFs or folders; book pages wrapped by ``bench/wrap_pages.py DATA/pages -o
/tmp/books``) twice, each into a fresh folder, with no trigger word (as a new user would):

* **before**: ``--no-ocr --caption '{trigger}, {words}'`` (the old default; OCR off),
* **after**: the defaults (``{trigger}, {kind}, {words}``, OCR on in ``--ocr-lang``'s default languages),

and ``--also-lang L`` adds an *after* run OCR-ing in ``L`` instead. Per run it prints the images written, empty
captions, captions naming their file, and captions holding at least two words of 3+ letters that are printed on
that page: the page's own words, from its text layer (whole page), else from Tesseract reading the whole page
at 300 dpi in the default languages (the same engine as the caption's, on a different cut of the page: a word the
band misreads rarely comes out the same from the whole page, but noise read alike in both counts as printed).
``{kind}``'s words are not counted as printed. Split by whether the page has a text layer; run time (one run,
this machine, ``--workers``) and OCR ms per page read (each written image's page read again exactly as the
worker does, timed alone).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from docs import markdown_table, write_section  # noqa: E402
from pipeline import ocr, tesseract, words  # noqa: E402
from pipeline.execution import Execution  # noqa: E402
from pipeline.layout import FolderLayout  # noqa: E402
from pipeline.options import Options  # noqa: E402
from pipeline.orchestrator import run  # noqa: E402
from pipeline.scan import find_scan  # noqa: E402
from pipeline.source import find_pdfs  # noqa: E402

KINDS = [f"{c} {t}" for c in ("monochrome", "colour") for t in ("line art", "halftone", "continuous tone")]


@dataclass
class Result:
    name: str
    seconds: float
    images: int = 0
    empty: int = 0
    named: int = 0
    printed: dict[bool, list[int]] = field(default_factory=lambda: {True: [0, 0], False: [0, 0]})
    """text layer? → [captions with ≥ 2 printed words, captions]"""
    examples: list[str] = field(default_factory=list)


def page_words(path: Path, page_number: int, lang: str, cache: dict) -> tuple[bool, set[str]]:
    """Whether the page has a text layer, and its words (cleaned, uncapped): the text layer's, else Tesseract's."""
    key = (path, page_number, lang)
    if key not in cache:
        with pymupdf.open(path) as doc:
            page = doc[page_number - 1]
            cap, words.MAX_WORDS = words.MAX_WORDS, 10**9
            try:
                layer = words.layer_words_near(page)
                text = layer if layer is not None else ocr.read_words(page, (), lang, find_scan(page))
            finally:
                words.MAX_WORDS = cap
        cache[key] = (layer is not None, {w for w in text.split() if len(w) >= 3})
    return cache[key]


def measure(
    name: str, inputs: list[str], options: Options, workers: int, sources: dict[str, Path], cache: dict
) -> Result:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        start = time.perf_counter()
        run(inputs, FolderLayout(out), options, Execution(workers=workers))
        result = Result(name, time.perf_counter() - start)
        rows = [json.loads(line) for line in (out / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        result.images += 1
        text = row["text"]
        stem = Path(row["source"]).stem.lower()
        result.empty += not text.strip()
        result.named += stem in text.lower() or Path(row["file_name"]).stem.lower() in text.lower()
        layer, printed = page_words(sources[row["source"]], row["page"], Options().ocr_lang, cache)
        pieces = [p for p in text.split(", ") if p not in KINDS and p != options.trigger]
        hits = sum(token in printed for token in " ".join(pieces).split() if len(token) >= 3)
        result.printed[layer][0] += hits >= 2
        result.printed[layer][1] += 1
        if len(result.examples) < 6 and not layer:
            result.examples.append(f"{row['file_name']}: {text[:110]!r}")
    return result


def ocr_cost(inputs: list[str], lang: str, sources: dict[str, Path], rows: Iterable[dict]) -> tuple[int, float]:
    """Pages read by OCR and ms per page: each written image's page read again as the worker reads it."""
    seen, seconds = set(), 0.0
    for row in rows:
        key = (row["source"], row["page"])
        if key in seen:
            continue
        with pymupdf.open(sources[row["source"]]) as doc:
            page = doc[row["page"] - 1]
            if words.layer_words_near(page, [tuple(row["box"])] if row["box"] else ()) is not None:
                continue
            seen.add(key)
            scan = find_scan(page)
            start = time.perf_counter()
            ocr.read_words(page, [tuple(row["box"])] if row["box"] else (), lang, scan)
            seconds += time.perf_counter() - start
    return len(seen), 1000 * seconds / max(1, len(seen))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="PDFs or folders of PDFs")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--also-lang", action="append", default=[], metavar="LANGS", help="another OCR run in LANGS")
    parser.add_argument("--doc", type=Path, help="write the tables into this Markdown file (between markers)")
    args = parser.parse_args(argv)
    if tesseract.unavailable(Options().ocr_lang):
        print(f"error: {tesseract.unavailable(Options().ocr_lang)}", file=sys.stderr)
        return 1
    sources = {path.name: path for path in find_pdfs(args.inputs)}
    runs = [
        ("before: --no-ocr, '{trigger}, {words}'", Options(ocr=False, caption="{trigger}, {words}")),
        (f"after: defaults ({Options().ocr_lang})", Options()),
        *((f"after: --ocr-lang {lang}", Options(ocr_lang=lang)) for lang in args.also_lang),
    ]
    results, cache = [], {}
    for name, options in runs:
        results.append(measure(name, args.inputs, options, args.workers, sources, cache))
        print(f"{name}: {results[-1].seconds:.1f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        run(args.inputs, FolderLayout(Path(tmp) / "o"), Options(ocr=False), Execution(workers=args.workers))
        rows = [json.loads(line) for line in (Path(tmp) / "o" / "metadata.jsonl").read_text().splitlines()]
    costs = [(lang, *ocr_cost(args.inputs, lang, sources, rows)) for lang in [Options().ocr_lang, *args.also_lang]]

    def share(pair: list[int]) -> str:
        return f"{pair[0]} / {pair[1]}" + (f" ({100 * pair[0] / pair[1]:.0f} %)" if pair[1] else "")

    header = ["run", "images", "empty captions", "with a file name", "≥ 2 printed words: no text layer",
              "≥ 2 printed words: text layer", f"run s ({args.workers} worker)"]  # fmt: skip
    table = markdown_table(
        header,
        [
            [r.name, r.images, r.empty, r.named, share(r.printed[False]), share(r.printed[True]), f"{r.seconds:.1f}"]
            for r in results
        ],
    )
    cost = markdown_table(
        ["OCR languages", "pages read by OCR", "OCR ms / page (mean)"],
        [[lang, n, f"{ms:.0f}"] for lang, n, ms in costs],
    )
    pdfs = f"{len(sources)} PDFs, {sum(pymupdf.open(p).page_count for p in sources.values())} pages"
    body = f"{pdfs}; no trigger word.\n\n{table}\n\n{cost}\n"
    print(body)
    for r in results[1:2]:
        print("examples (no text layer):\n" + "\n".join(f"  {e}" for e in r.examples))
    if args.doc:
        write_section(args.doc, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
