"""Dataset purity bench: page precision/recall/F1, pages kept, crop IoU and ms/page, judge by judge.

``python bench/eval_purity.py --data ../shared/data`` (run from the repository root) wraps the book pages
of ``pages/`` into one PDF per book (in a temporary folder, never in the repository), takes the PDFs of
``pdfs/`` as they are, runs the real pipeline (``python -m pipeline ... --filter X``) for each judge and
scores its ``manifest.csv`` (``kept``, ``boxes``) against the labels:

* pages: ``illustration`` is positive; ``text`` and ``target`` negative; ``minor`` / ``text_minor_cuts``
  are not scored;
* IoU: for each book page labelled ``illustration`` with ground-truth boxes, every true box is matched
  to the best predicted box (a kept page without boxes counts as the whole page; a rejected page as 0),
  averaged per page, then over pages;
* ms/page: median (and mean) over all pages of the judge's view as a worker makes it (the scan decoded, or the
  page drawn) plus the judge call, the fastest of ``--repeat`` runs, on one thread (``cv2.setNumThreads(1)``),
  measured in this process;
* leave-one-source-out (LOSO): each source (a book series: the book name without its volume number; a
  newspaper title: its LCCN, or the title) is scored with the threshold chosen (best F1, ties to the
  default) on the other sources' in-process scores only; the pooled decisions give the LOSO figures. The
  threshold is the one value here chosen from data; the judge's other values are print conventions in
  millimetres, set by hand, so they are not refitted per fold.

``--no-pipeline`` judges the renders in-process instead of running the CLI (same zoom and colorspace).
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path

import cv2
import numpy as np
import pymupdf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from wrap_pages import wrap_pages  # noqa: E402

from docs import markdown_table, write_section  # noqa: E402
from pipeline.judges import JUDGES, make_judge, threshold_of  # noqa: E402
from pipeline.worker import judge_page  # noqa: E402

Box = tuple[float, float, float, float]
POSITIVE, NEGATIVE, UNSCORED = 1, 0, -1
PDF_LABELS = {"illustration": POSITIVE, "text": NEGATIVE, "target": NEGATIVE, "text_minor_cuts": UNSCORED}
BOOK_LABELS = {"illustration": POSITIVE, "text": NEGATIVE, "minor": UNSCORED}


def source_of(book: str = "", title: str = "") -> str:
    """The source a page comes from, for leave-one-source-out: a book series (volumes ``01``, ``02`` of one
    work are one source) or a newspaper title (its LCCN when the title names one)."""
    if book:
        return "book:" + re.sub(r"\d+$", "", book)
    lccn = re.search(r"\bsn\d{8}\b", title)
    return "title:" + (lccn.group(0) if lccn else title)


def load_truth(data: Path, books_dir: Path) -> dict[tuple[str, int], tuple[int, list[Box], str, str]]:
    """``{(pdf name, 1-based page): (label, true boxes as page fractions, group, source)}`` for every page."""
    layout = wrap_pages(data / "pages", books_dir)
    rows = {r["file"]: r for r in csv.DictReader((data / "pages" / "labels.csv").open(newline=""))}
    truth: dict[tuple[str, int], tuple[int, list[Box], str, str]] = {}
    for pdf, files in layout.items():
        for i, name in enumerate(files, 1):
            r = rows[name]
            w, h = float(r["width"]), float(r["height"])
            boxes = []
            for part in r["graphic_bboxes_xyxy"].replace("|", ";").split(";"):
                if part.strip():
                    x0, y0, x1, y1 = map(float, part.split())
                    boxes.append((x0 / w, y0 / h, x1 / w, y1 / h))
            truth[(pdf, i)] = (BOOK_LABELS[r["label"]], boxes, "book", source_of(book=r["book"]))
    for r in csv.DictReader((data / "pdfs" / "labels.csv").open(newline="")):
        labels = r["label"].split(";")
        for i in range(int(r["pages"])):
            label = labels[i] if len(labels) > 1 else labels[0]
            truth[(r["file"], i + 1)] = (PDF_LABELS[label], [], "pdf", source_of(title=r["title"]))
    return truth


def iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def parse_boxes(text: str) -> list[Box]:
    return [tuple(map(float, part.split())) for part in text.split(";") if part.strip()]  # type: ignore[misc]


def run_pipeline(judge: str, inputs: list[Path], work: Path) -> dict[tuple[str, int], tuple[bool, list[Box]]]:
    """Run the CLI end to end and read back ``kept`` and ``boxes`` per page from its manifest."""
    out = work / f"{judge}.zip"
    cmd = [sys.executable, "-m", "pipeline", *map(str, inputs), "-o", str(out), "--filter", judge, "--size", "256"]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, timeout=1800)
    with zipfile.ZipFile(out) as zf:
        text = zf.read("manifest.csv").decode()
    result = {}
    for r in csv.DictReader(io.StringIO(text)):
        if r["page"]:
            result[(r["source"], int(r["page"]))] = (r["kept"] == "true", parse_boxes(r.get("boxes", "")))
    return result


def time_and_judge(judge_name: str, inputs: list[Path], repeat: int = 3) -> tuple[dict, list[float]]:
    """Judge each page in-process as a pipeline worker does (``pipeline.worker.judge_page``: the scan decoded
    where the page is one, else MuPDF's drawing), from a cold MuPDF store; return ``(keep, boxes, score)``
    per page and the ms per page: the fastest of ``repeat`` runs, so that a shared machine's hiccups do not
    move a comparison by more than the change it measures."""
    cv2.setNumThreads(1)
    judge = make_judge(judge_name)
    verdicts, times = {}, []
    for folder in inputs:
        for path in sorted(folder.glob("*.pdf")):
            with pymupdf.open(path) as doc:
                for index, page in enumerate(doc):
                    runs = []
                    for _ in range(repeat):
                        pymupdf.TOOLS.store_shrink(100)  # the worker empties the store after every page
                        t = time.perf_counter()
                        verdict = judge_page(page, judge)[0]
                        runs.append(1000 * (time.perf_counter() - t))
                    times.append(min(runs))
                    verdicts[(path.name, index + 1)] = (verdict.keep, list(verdict.boxes), verdict.score)
    return verdicts, times


def score(truth: dict, decided: dict, per_page: dict | None = None) -> dict[str, float]:
    """Page precision/recall/F1, pages kept and mean crop IoU; ``per_page`` (if given) receives each
    scored book page's IoU, keyed like ``truth``."""
    tp = fp = fn = kept = 0
    ious = []
    for key, (label, boxes, group, _source) in truth.items():
        keep, pred = decided.get(key, (False, []))
        kept += keep
        if label == POSITIVE:
            tp += keep
            fn += not keep
            if group == "book" and boxes:
                crops = (pred or [(0.0, 0.0, 1.0, 1.0)]) if keep else []
                ious.append(float(np.mean([max((iou(b, p) for p in crops), default=0.0) for b in boxes])))
                if per_page is not None:
                    per_page[key] = ious[-1]
        elif label == NEGATIVE:
            fp += keep
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f1, "kept": kept, "pages": len(truth), "iou": float(np.mean(ious))}


def best_threshold(truth: dict, scores: dict, default: float) -> float:
    """The threshold with the best page F1 on ``scores`` (midpoints between adjacent scores; ties go to the
    one nearest ``default``)."""
    values = sorted({scores[k] for k, t in truth.items() if t[0] != UNSCORED and k in scores})
    cuts = [default] + [(a + b) / 2 for a, b in itertools.pairwise(values)]

    def f1(cut: float) -> float:
        return score(truth, {k: (v >= cut, []) for k, v in scores.items()})["f1"]

    return max(cuts, key=lambda c: (f1(c), -abs(c - default)))


def leave_one_source_out(truth: dict, scores: dict, default: float) -> tuple[dict[str, float], dict[str, float]]:
    """Pooled page scores when each source is decided at the threshold fitted on all the other sources,
    and that threshold per source."""
    decided, cuts = {}, {}
    for source in sorted({t[3] for t in truth.values()}):
        rest = {k: t for k, t in truth.items() if t[3] != source}
        cut = cuts[source] = best_threshold(rest, scores, default)
        decided.update({k: (scores.get(k, 0.0) >= cut, []) for k, t in truth.items() if t[3] == source})
    return score(truth, decided), cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--judges", nargs="+", default=["structure", "sigma"], choices=sorted(JUDGES))
    parser.add_argument("--no-pipeline", action="store_true", help="judge renders in-process, skip the CLI")
    parser.add_argument("--errors", action="store_true", help="list the misjudged pages")
    parser.add_argument("--ious", action="store_true", help="list the crop IoU of every scored book page")
    parser.add_argument("--repeat", type=int, default=3, help="time each page this many times, keep the fastest")
    parser.add_argument("--doc", type=Path, help="also write the tables into this Markdown file (docs/purity.md)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="eval_purity_") as tmp:
        work = Path(tmp)
        truth = load_truth(args.data.resolve(), work / "books")
        inputs = [work / "books", args.data.resolve() / "pdfs"]
        table = []
        for name in args.judges:
            in_process, times = time_and_judge(name, inputs, args.repeat)
            decided = {k: v[:2] for k, v in in_process.items()}
            if not args.no_pipeline:
                try:
                    decided = run_pipeline(name, inputs, work)
                except (subprocess.SubprocessError, OSError, KeyError) as exc:
                    print(f"  {name}: the pipeline run failed ({exc!r}); scoring the in-process renders instead")
            per_page: dict[tuple[str, int], float] = {}
            s = score(truth, decided, per_page)
            by_group = defaultdict(list)
            for (src, _page), ms in zip(in_process, times, strict=False):
                by_group["books" if (work / "books" / src).exists() else "pdfs"].append(ms)
            s["ms"] = statistics.median(times)
            s["ms_mean"] = statistics.fmean(times)
            s["ms_books"] = statistics.median(by_group["books"])
            s["ms_pdfs"] = statistics.median(by_group["pdfs"])
            scores = {k: v[2] for k, v in in_process.items()}
            loso, cuts = leave_one_source_out(truth, scores, threshold_of(name))
            s.update({f"loso_{k}": loso[k] for k in ("precision", "recall", "f1", "kept")})
            s["cuts"] = f"{min(cuts.values()):.3g}..{max(cuts.values()):.3g}"
            s["sources"] = len(cuts)
            table.append((name, s))
            if args.errors:
                for key, (label, *_rest) in sorted(truth.items()):
                    keep = decided.get(key, (False, []))[0]
                    if label != UNSCORED and keep != bool(label):
                        print(f"  {name}: {'FP' if keep else 'FN'} {key[0]} p{key[1]}")
            if args.ious:
                for key, value in sorted(per_page.items()):
                    print(f"  {name}: IoU {value:.3f} {key[0]} p{key[1]}")
    source = "in-process renders" if args.no_pipeline else "python -m pipeline (manifest.csv)"
    print(f"\n{len(truth)} pages; decisions from {source}; ms = view + judge, 1 thread, median (and mean)")
    head = f"{'judge':10s} {'precision':>9s} {'recall':>7s} {'F1':>6s} {'kept':>9s} {'IoU':>6s}"
    print(head + f" {'ms/page':>8s} {'mean':>6s} {'books':>6s} {'pdfs':>6s}")
    for name, s in table:
        kept = f"{s['kept']}/{s['pages']}"
        print(
            f"{name:10s} {s['precision']:9.3f} {s['recall']:7.3f} {s['f1']:6.3f} {kept:>9s} {s['iou']:6.3f}"
            f" {s['ms']:8.1f} {s['ms_mean']:6.1f} {s['ms_books']:6.1f} {s['ms_pdfs']:6.1f}"
        )
    print("\nleave-one-source-out (threshold fitted without the source; in-process scores)")
    print(f"{'judge':10s} {'precision':>9s} {'recall':>7s} {'F1':>6s} {'kept':>9s} {'sources':>7s} thresholds")
    for name, s in table:
        kept = f"{s['loso_kept']}/{s['pages']}"
        print(
            f"{name:10s} {s['loso_precision']:9.3f} {s['loso_recall']:7.3f} {s['loso_f1']:6.3f} {kept:>9s}"
            f" {s['sources']:7d} {s['cuts']}"
        )
    if args.doc:
        write_section(args.doc, doc_tables(table, len(truth), source))


def doc_tables(table: list[tuple[str, dict]], pages: int, source: str) -> str:
    """The two tables as Markdown, for ``--doc``."""
    plain = markdown_table(
        ["judge", "precision", "recall", "F1", "pages kept", "mean crop IoU",
         "ms/page: median (mean) / books / newspapers"],
        [
            [f"`{name}`", f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['f1']:.3f}",
             f"{s['kept']} / {s['pages']}", f"{s['iou']:.3f}",
             f"{s['ms']:.1f} ({s['ms_mean']:.1f}) / {s['ms_books']:.1f} / {s['ms_pdfs']:.1f}"]
            for name, s in table
        ],
    )  # fmt: skip
    loso = markdown_table(
        ["judge", "precision", "recall", "F1", "pages kept", "sources", "thresholds"],
        [
            [f"`{name}`", f"{s['loso_precision']:.3f}", f"{s['loso_recall']:.3f}", f"{s['loso_f1']:.3f}",
             f"{s['loso_kept']} / {s['pages']}", s["sources"], s["cuts"]]
            for name, s in table
        ],
    )  # fmt: skip
    return (
        f"{pages} pages; decisions from {source}; ms = view + judge, one thread.\n\n{plain}\n\n"
        f"Leave-one-source-out (each source judged at a threshold fitted without it; in-process scores):\n\n{loso}"
    )


if __name__ == "__main__":
    main()
