"""Dataset purity bench: page precision/recall, pages kept, crop IoU, ms/page and scale consistency, judge by judge.

``python bench/eval_purity.py --data ../shared/data`` (run from the repository root) takes three materials
(``bench/purity_material.py``): the book pages of ``pages/`` wrapped into one PDF per book (in a temporary
folder, never in the repository), the scanned PDFs of ``pdfs/`` and the one-page PDFs of ``pages_more/`` as
they are; it runs the real pipeline (``python -m pipeline ... --filter X``) for each judge and scores its
``manifest.csv`` (``kept``, ``boxes``) against the labels:

* pages: ``illustration`` is positive; ``text`` and ``target`` negative; ``minor`` / ``text_minor_cuts``
  are not scored. Tables: overall, per material, per kind (recall of a picture kind, the share kept of a
  text kind: every kind is one label, so precision is read per material and per source), per source;
  groups under ten scored pages get counts only, their rates would be anecdotes;
* IoU: for each positive page with ground-truth boxes (books and ``pages_more``), every true box is matched
  to the best predicted box (a kept page without boxes counts as the whole page; a rejected page as 0),
  averaged per page, then over pages;
* ms/page: median (and mean) over all pages of the judge's view as a worker makes it (the scan decoded, or the
  page drawn) plus the judge call, the fastest of ``--repeat`` runs, on one thread (``cv2.setNumThreads(1)``),
  measured in this process;
* leave-one-source-out (LOSO): each source (a book series, a newspaper title, a ``pages_more`` collection) is
  scored with the threshold chosen (best F1, ties to the default) on the other sources' in-process scores
  only; the pooled decisions give the LOSO figures. The threshold is the one value here chosen from data; the
  judge's other values are print conventions in millimetres, set by hand, so they are not refitted per fold;
* scale consistency: every page's embedded scan, byte for byte, in a PDF page declared ½× and 2× its size
  (as archives wrap the same scan at another nominal resolution), judged by the worker's own ``judge_page``;
  the share of pages whose decision is the one at 1× (the page as delivered). ``×1 re-wrapped`` checks the
  re-wrapping itself changes nothing.

``--no-pipeline`` judges the renders in-process instead of running the CLI (same zoom and colorspace).
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pymupdf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from purity_material import MATERIALS, POSITIVE, UNSCORED, Box, Key, Truth, load_truth, parse_boxes, rewrap  # noqa: E402

from docs import markdown_table, write_section  # noqa: E402
from pipeline.budget import OverBudget  # noqa: E402
from pipeline.judges import JUDGES, Judge, Verdict, make_judge, threshold_of  # noqa: E402
from pipeline.worker import judge_page  # noqa: E402

SCALES = (0.5, 2.0)
"""Declared page sizes of the scale check, against the page as delivered."""
SMALL = 10
"""A group with fewer scored pages than this gets counts, not rates."""
Decided = dict[Key, tuple[bool, list[Box]]]


def iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def crop_iou(true: list[Box], keep: bool, pred: list[Box]) -> float:
    """Each true box's best IoU with a predicted crop (a kept page without boxes is one crop, the whole page;
    a rejected page has none), averaged over the true boxes."""
    crops = (pred or [(0.0, 0.0, 1.0, 1.0)]) if keep else []
    return float(np.mean([max((iou(b, p) for p in crops), default=0.0) for b in true]))


def run_pipeline(judge: str, inputs: list[Path], work: Path) -> Decided:
    """Run the CLI end to end and read back ``kept`` and ``boxes`` per page from its manifest."""
    out = work / f"{judge}.zip"
    cmd = [sys.executable, "-m", "pipeline", *map(str, inputs), "-o", str(out), "--filter", judge, "--size", "256"]
    run = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=1800)
    if run.returncode:  # its progress bar and notes are shown only when they explain a failure
        print(run.stderr[-2000:], file=sys.stderr)
        raise subprocess.CalledProcessError(run.returncode, cmd)
    with zipfile.ZipFile(out) as zf:
        text = zf.read("manifest.csv").decode()
    result = {}
    for r in csv.DictReader(io.StringIO(text)):
        if r["page"]:
            result[(r["source"], int(r["page"]))] = (r["kept"] == "true", parse_boxes(r.get("boxes", "")))
    return result


def each_page(inputs: list[Path]) -> Iterator[tuple[Path, pymupdf.Document, int]]:
    """Every page of every PDF in ``inputs``: ``(file, its open document, 0-based index)``."""
    for folder in inputs:
        for path in sorted(folder.glob("*.pdf")):
            with pymupdf.open(path) as doc:
                for index in range(doc.page_count):
                    yield path, doc, index


def judged(page: pymupdf.Page, judge: Judge) -> Verdict:
    """The worker's verdict; a page the pipeline refuses as over its budget keeps nothing (recorded an error)."""
    try:
        return judge_page(page, judge)[0]
    except OverBudget:
        return Verdict(keep=False, score=0.0)


def time_and_judge(judge_name: str, inputs: list[Path], repeat: int = 3) -> tuple[dict, dict[Key, float]]:
    """Judge each page in-process as a pipeline worker does (``pipeline.worker.judge_page``: the scan decoded
    where the page is one, else MuPDF's drawing), from a cold MuPDF store; return ``(keep, boxes, score)``
    per page and the ms per page: the fastest of ``repeat`` runs, so that a shared machine's hiccups do not
    move a comparison by more than the change it measures."""
    cv2.setNumThreads(1)
    judge = make_judge(judge_name)
    verdicts, times = {}, {}
    for path, doc, index in each_page(inputs):
        page = doc[index]
        runs = []
        for _ in range(repeat):
            pymupdf.TOOLS.store_shrink(100)  # the worker empties the store after every page
            t = time.perf_counter()
            verdict = judged(page, judge)
            runs.append(1000 * (time.perf_counter() - t))
        times[(path.name, index + 1)] = min(runs)
        verdicts[(path.name, index + 1)] = (verdict.keep, list(verdict.boxes), verdict.score)
    return verdicts, times


def scale_check(judge_name: str, inputs: list[Path]) -> dict[Key, dict[float, tuple[bool, float]]]:
    """``{page: {declared scale: (keep, score)}}`` for the page re-wrapped at 1× and at each of :data:`SCALES`
    (:func:`purity_material.rewrap`), judged by the worker's ``judge_page``, which measures the page's real
    size from its text where the declared one is wrong."""
    judge = make_judge(judge_name)
    result: dict[Key, dict[float, tuple[bool, float]]] = {}
    for path, doc, index in each_page(inputs):
        for scale in (1.0, *SCALES):
            with rewrap(doc, index, scale) as out:
                verdict = judged(out[0], judge)
            result.setdefault((path.name, index + 1), {})[scale] = (verdict.keep, verdict.score)
    return result


@dataclass
class Counts:
    """Page counts of one group of pages under one set of decisions."""

    pos: int = 0
    neg: int = 0
    tp: int = 0
    fp: int = 0
    kept: int = 0
    pages: int = 0
    ious: list[float] = field(default_factory=list)

    @property
    def scored(self) -> int:
        return self.pos + self.neg

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / self.pos if self.pos else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def iou(self) -> float:
        return float(np.mean(self.ious)) if self.ious else float("nan")


def count(truth: dict[Key, Truth], decided: Decided, per_page: dict[Key, float] | None = None) -> Counts:
    """Counts over ``truth``'s pages; ``per_page`` (if given) receives each scored page's crop IoU."""
    c = Counts()
    for key, t in truth.items():
        keep, pred = decided.get(key, (False, []))
        c.pages += 1
        c.kept += keep
        if t.label == POSITIVE:
            c.pos += 1
            c.tp += keep
            if t.boxes:
                c.ious.append(crop_iou(t.boxes, keep, pred))
                if per_page is not None:
                    per_page[key] = c.ious[-1]
        elif t.label != UNSCORED:
            c.neg += 1
            c.fp += keep
    return c


def best_threshold(truth: dict[Key, Truth], scores: dict[Key, float], default: float) -> float:
    """The threshold with the best page F1 on ``scores`` (midpoints between adjacent scores; ties go to the
    one nearest ``default``)."""
    values = sorted({scores[k] for k, t in truth.items() if t.label != UNSCORED and k in scores})
    cuts = [default] + [(a + b) / 2 for a, b in itertools.pairwise(values)]

    def f1(cut: float) -> float:
        return count(truth, {k: (v >= cut, []) for k, v in scores.items()}).f1

    return max(cuts, key=lambda c: (f1(c), -abs(c - default)))


def leave_one_source_out(truth: dict[Key, Truth], scores: dict[Key, float], default: float) -> tuple[Decided, dict]:
    """Each source's decisions at the threshold fitted on all the other sources, and that threshold per source."""
    decided, cuts = {}, {}
    for source in sorted({t.source for t in truth.values()}):
        rest = {k: t for k, t in truth.items() if t.source != source}
        cut = cuts[source] = best_threshold(rest, scores, default)
        decided.update({k: (scores.get(k, 0.0) >= cut, []) for k, t in truth.items() if t.source == source})
    return decided, cuts


@dataclass
class Result:
    """One judge's decisions and measurements."""

    name: str
    decided: Decided
    loso: Decided
    cuts: dict[str, float]
    times: dict[Key, float]
    scales: dict[Key, dict[float, tuple[bool, float]]]
    in_process: dict


def fmt(value: float, enough: bool = True) -> str:
    return f"{value:.3f}" if enough and value == value else "—"


def share(same: int, n: int) -> str:
    return f"{same / n:.3f} ({same}/{n})" if n else "—"


def where(truth: dict[Key, Truth], test: Callable[[Truth], bool]) -> dict[Key, Truth]:
    return {k: t for k, t in truth.items() if test(t)}


class Report:
    """Tables printed as aligned text and kept as Markdown for ``--doc``."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def text(self, line: str) -> None:
        print(f"\n{line}")
        self.parts.append(line)

    def table(self, title: str, header: list[str], rows: list[list[object]]) -> None:
        cells = [header] + [[str(c) for c in row] for row in rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
        print(f"\n{title}")
        for row in cells:
            print(
                "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
                )
            )
        self.parts.append(f"{title}:\n\n{markdown_table(header, rows)}")


def ms_of(r: Result, truth: dict[Key, Truth], material: str | None = None) -> list[float]:
    return [ms for k, ms in r.times.items() if material is None or truth[k].material == material]


def overall_tables(report: Report, results: list[Result], truth: dict[Key, Truth], materials: list[str]) -> None:
    rows, loso = [], []
    for r in results:
        c = count(truth, r.decided)
        ious = [
            fmt(count(where(truth, lambda t, m=m: t.material == m), r.decided).iou) for m in ("pages", "pages_more")
        ]
        ms = [f"{statistics.median(ms_of(r, truth)):.1f} ({statistics.fmean(ms_of(r, truth)):.1f})"]
        ms += [f"{statistics.median(ms_of(r, truth, m)):.1f}" for m in materials]
        rows.append([r.name, fmt(c.precision), fmt(c.recall), fmt(c.f1), f"{c.kept}/{c.pages}", *ious, *ms])
        lc = count(truth, r.loso)
        cuts = f"{min(r.cuts.values()):.3g}..{max(r.cuts.values()):.3g}"
        loso.append([r.name, fmt(lc.precision), fmt(lc.recall), fmt(lc.f1), f"{lc.kept}/{lc.pages}", len(r.cuts), cuts])
    head = ["judge", "precision", "recall", "F1", "kept", "IoU books", "IoU pages_more", "ms/page (mean)"]
    report.table("All pages", head + [f"ms {m}" for m in materials], rows)
    head = ["judge", "precision", "recall", "F1", "kept", "sources", "thresholds"]
    report.table("Leave-one-source-out (threshold fitted without the source; in-process scores)", head, loso)


def material_table(report: Report, results: list[Result], truth: dict[Key, Truth], materials: list[str]) -> None:
    rows = []
    for r in results:
        for m in materials:
            part = where(truth, lambda t, m=m: t.material == m)
            c, lc = count(part, r.decided), count(part, r.loso)
            enough = c.scored >= SMALL
            rows.append([
                r.name, m, f"{c.pages} ({c.pos}+, {c.neg}−)", f"{c.kept}", fmt(c.precision, enough and c.neg > 0),
                fmt(c.recall, enough and c.pos > 0), f"{lc.kept}", fmt(lc.precision, enough and c.neg > 0),
                fmt(lc.recall, enough and c.pos > 0), fmt(c.iou),
            ])  # fmt: skip
    head = ["judge", "material", "pages", "kept", "precision", "recall", "LOSO kept", "LOSO precision"]
    report.table("Per material", [*head, "LOSO recall", "mean crop IoU"], rows)


def kind_rate(c: Counts, positive: bool, enough: bool) -> str:
    """A picture kind's recall, or the share of a text kind's pages that were kept."""
    if positive:
        return fmt(c.recall, enough)
    return fmt(c.fp / c.neg, enough) if c.neg else "—"


def kind_table(report: Report, results: list[Result], truth: dict[Key, Truth]) -> None:
    kinds = sorted({t.kind for t in truth.values()}, key=lambda k: (min(MATERIALS.index(t.material) for t in
                   truth.values() if t.kind == k), k))  # fmt: skip
    rows = []
    for r in results:
        for kind in kinds:
            part = where(truth, lambda t, k=kind: t.kind == k)
            c, lc = count(part, r.decided), count(part, r.loso)
            label = "+" if c.pos else "−" if c.neg else "unscored"
            enough = c.scored >= SMALL
            mats = "+".join(sorted({t.material for t in part.values()}, key=MATERIALS.index))
            rows.append(
                [
                    r.name,
                    kind,
                    mats,
                    c.pages,
                    label,
                    f"{c.kept}",
                    kind_rate(c, c.pos > 0, enough),
                    f"{lc.kept}",
                    kind_rate(lc, c.pos > 0, enough),
                    fmt(c.iou),
                ]
            )
    head = ["judge", "kind", "material", "pages", "label", "kept", "recall (+) / kept share (−)"]
    report.table("Per kind", [*head, "LOSO kept", "LOSO recall / kept share", "mean crop IoU"], rows)


def source_table(report: Report, results: list[Result], truth: dict[Key, Truth]) -> None:
    """Sources with ten scored pages or more one by one, the rest pooled per material."""
    scored = defaultdict(int)
    for t in truth.values():
        scored[t.source] += t.label != UNSCORED
    names = {"pages": "book series", "pdfs": "newspaper titles", "pages_more": "collections"}
    groups: dict[str, list[str]] = defaultdict(list)
    for source in sorted(scored, key=lambda s: -scored[s]):
        material = next(t.material for t in truth.values() if t.source == source)
        groups[source if scored[source] >= SMALL else f"{names[material]} under {SMALL} pages"].append(source)
    rows = []
    for r in results:
        for group, sources in groups.items():
            part = where(truth, lambda t, s=sources: t.source in s)
            c = count(part, r.loso)
            cuts = sorted({r.cuts[s] for s in sources})
            label = sources[0] if len(sources) == 1 else f"{len(sources)} {group}"
            cut = f"{cuts[0]:.3g}" if len(cuts) == 1 else f"{cuts[0]:.3g}..{cuts[-1]:.3g}"
            rows.append([r.name, label, c.pages, f"{c.pos}+ {c.neg}−", cut, c.kept, f"{c.tp}/{c.fp}",
                         fmt(c.precision, c.tp + c.fp > 0), fmt(c.recall, c.pos > 0),
                         fmt(c.fp / c.neg if c.neg else 0.0, c.neg > 0)])  # fmt: skip
    head = ["judge", "source", "pages", "scored", "threshold", "kept", "TP/FP", "precision", "recall"]
    head.append("kept share (−)")
    report.table("Per source, leave-one-source-out (each judged at the threshold fitted without it)", head, rows)


def iou_table(report: Report, results: list[Result], truth: dict[Key, Truth]) -> None:
    rows = []
    for r in results:
        groups = [("books", lambda t: t.material == "pages"), ("pages_more", lambda t: t.material == "pages_more")]
        more = sorted({t.kind for t in truth.values() if t.material == "pages_more" and t.boxes})
        groups += [(f"pages_more {k}", lambda t, k=k: t.material == "pages_more" and t.kind == k) for k in more]
        for name, test in groups:
            c = count(where(truth, lambda t, test=test: test(t) and bool(t.boxes) and t.label == POSITIVE), r.decided)
            if c.ious:
                good = sum(v >= 0.5 for v in c.ious)
                rows.append(
                    [r.name, name, len(c.ious), fmt(c.iou), fmt(float(np.median(c.ious))), share(good, len(c.ious))]
                )
    head = ["judge", "pages", "with boxes", "mean IoU", "median IoU", "IoU ≥ 0.5"]
    report.table("Crop IoU (each true box against its best crop; a missed page 0)", head, rows)


def wrong_flip(t: Truth, base: bool, keep: bool) -> bool:
    """The decision changed, and the page is labelled and now misjudged."""
    return keep != base and t.label != UNSCORED and keep != (t.label == POSITIVE)


def scale_table(report: Report, results: list[Result], truth: dict[Key, Truth], materials: list[str]) -> None:
    rows = []
    for r in results:
        for m in [*materials, "all"]:
            keys = [k for k in r.scales if m == "all" or truth[k].material == m]
            base = {k: r.in_process[k][0] for k in keys}
            same = {s: sum(r.scales[k][s][0] == base[k] for k in keys) for s in (1.0, *SCALES)}
            both = sum(all(r.scales[k][s][0] == base[k] for s in SCALES) for k in keys)
            wrong = [sum(wrong_flip(truth[k], base[k], r.scales[k][s][0]) for k in keys) for s in SCALES]
            cells = [share(same[s], len(keys)) for s in SCALES]
            rows.append([r.name, m, len(keys), *cells, share(both, len(keys)), " / ".join(map(str, wrong)),
                         share(same[1.0], len(keys))])  # fmt: skip
    head = ["judge", "material", "pages", *(f"same at ×{s:g}" for s in SCALES), "same at both"]
    head += ["flips made wrong " + " / ".join(f"×{s:g}" for s in SCALES), "×1 re-wrapped"]
    report.table("Scale consistency (the same scan in a page declared ½× / 2× its size; decision as at 1×)", head, rows)


def list_errors(results: list[Result], truth: dict[Key, Truth]) -> None:
    for r in results:
        for key, t in sorted(truth.items()):
            keep = r.decided.get(key, (False, []))[0]
            if t.label != UNSCORED and keep != bool(t.label):
                score = r.in_process.get(key, (False, [], float("nan")))[2]
                print(f"  {r.name}: {'FP' if keep else 'FN'} {key[0]} p{key[1]} ({t.kind}) score {score:.3f}")
        for key, by_scale in sorted(r.scales.items()):
            keep, score = r.in_process[key][0], r.in_process[key][2]
            for s, (k, v) in by_scale.items():
                if k != keep:
                    change = f"{'kept' if keep else 'dropped'} → {'kept' if k else 'dropped'}"
                    print(f"  {r.name}: ×{s:g} {change} {key[0]} p{key[1]} ({truth[key].kind}) {score:.3f} → {v:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--judges", nargs="+", default=["structure", "sigma"], choices=sorted(JUDGES))
    parser.add_argument("--materials", nargs="+", default=list(MATERIALS), choices=MATERIALS)
    parser.add_argument("--no-pipeline", action="store_true", help="judge renders in-process, skip the CLI")
    parser.add_argument("--no-scales", action="store_true", help="skip the ½× / 2× declared-size check")
    parser.add_argument("--errors", action="store_true", help="list the misjudged pages and the scale flips")
    parser.add_argument("--ious", action="store_true", help="list the crop IoU of every scored page with boxes")
    parser.add_argument("--repeat", type=int, default=3, help="time each page this many times, keep the fastest")
    parser.add_argument("--doc", type=Path, help="also write the tables into this Markdown file (docs/purity.md)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    materials = [m for m in MATERIALS if m in args.materials]
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="eval_purity_") as tmp:
        work = Path(tmp)
        truth, folders = load_truth(args.data.resolve(), work / "books", tuple(materials))
        inputs = [folders[m] for m in materials]
        for name in args.judges:
            in_process, times = time_and_judge(name, inputs, args.repeat)
            decided = {k: v[:2] for k, v in in_process.items()}
            if not args.no_pipeline:
                try:
                    decided = run_pipeline(name, inputs, work)
                    if missing := len(truth.keys() - decided.keys()):
                        print(f"  {name}: {missing} pages are not in the manifest (scored as dropped)")
                except (subprocess.SubprocessError, OSError, KeyError) as exc:
                    print(f"  {name}: the pipeline run failed ({exc!r}); scoring the in-process renders instead")
            scores = {k: v[2] for k, v in in_process.items()}
            loso, cuts = leave_one_source_out(truth, scores, threshold_of(name))
            scales = {} if args.no_scales else scale_check(name, inputs)
            results.append(Result(name, decided, loso, cuts, times, scales, in_process))
            if args.ious:
                per_page: dict[Key, float] = {}
                count(truth, decided, per_page)
                for key, value in sorted(per_page.items()):
                    print(f"  {name}: IoU {value:.3f} {key[0]} p{key[1]} ({truth[key].kind})")
    if args.errors:
        list_errors(results, truth)
    source = "in-process renders" if args.no_pipeline else "python -m pipeline (manifest.csv)"
    sizes = ", ".join(f"{m} {sum(t.material == m for t in truth.values())}" for m in materials)
    report = Report()
    report.text(
        f"{len(truth)} pages ({sizes}); decisions from {source}; ms = view + judge, one thread, "
        f"median (and mean); rates only for groups of {SMALL} scored pages or more."
    )
    overall_tables(report, results, truth, materials)
    material_table(report, results, truth, materials)
    kind_table(report, results, truth)
    source_table(report, results, truth)
    iou_table(report, results, truth)
    if not args.no_scales:
        scale_table(report, results, truth, materials)
    print(f"\n{time.perf_counter() - started:.0f} s")
    if args.doc:
        write_section(args.doc, "\n\n".join(report.parts))


if __name__ == "__main__":
    main()
