"""Page-kinds bench (issue #28): pages that ARE a picture, and pages with false pictures, built from real material.

``python bench/page_kinds.py --data ../shared/data [--kinds album plate ...] [--save DIR]`` generates labelled
pages (seeded, deterministic) from the real scans and photos of ``../shared/data`` (read in place, never copied),
makes the judge's view of each (the page drawn at 150 dpi, area-resized to 72 dpi of its physical size; grey for
greyscale material, RGB for colour), judges it and prints tables per kind, overall and per source.

Kinds (label: what they are made of):

* ``album`` (keep): 1-4 photos from one folder of ``cattle/*/`` or ``cattle_gate/not_cattle/`` mounted on cream,
  light grey, mid grey or near-black card (200-300 mm), sometimes in a white border, sometimes turned by <= 2°.
* ``plate`` (keep): an illustration region of ``pages/`` (``graphic_bboxes_xyxy`` of pages labelled
  illustration) enlarged to fill a 200-300 mm sheet within 5-15 % margins; photos printed watercolour-like
  (blurred, posterised, a transparent wash) on cream paper.
* ``pencil`` (keep): an illustration region of ``pages/`` as faint graphite (grey 170-215 on paper at 235).
* ``blank_verso`` (drop): paper with the mirrored text of a real text page showing through at 5-10 % contrast.
* ``mount_back`` (drop): plain card with texture, maybe a few tiny pencil strokes or a faint stamp.
* ``hands`` / ``hands_on_text`` (drop): a blank sheet / a real text page with a hand entering from an edge
  (3-15 % of the page).
* ``camera_book``: a real page photographed on a dark or wooden table, with its fore-edge and page curl; drop
  for a text page, keep for an illustration page (its boxes mapped into the shot).
* ``target`` (drop): a calibration target (grey step wedge, colour patches, resolution gratings, ruler).
* ``card_on_bed``, ``tinted_drawing``, ``bordered_plate`` (keep) and ``tinted_text`` (drop): the held-out
  collections' kinds of issue #54, web-size scans (500-1,000 px) of sheets at their real size on the scanner's
  bed, judged as the pipeline judges them: the scan in a PDF page of the sheet's size, ``judge_page`` of
  ``pipeline.worker`` (``bench/page_kinds_heldout.py``). ``--via-pdf`` judges every kind so; ``--declared 0.5 2``
  also judges the same pixels in pages declared 0.5 / 2 times their real size and prints the share of the same
  decisions per kind (and the judged kind's other view: the 72 dpi in-memory one, or the PDF page at ×1).

Real pages at other declared sizes are ``bench/robustness.py``'s ``page declared ×s`` rows, not repeated here.
The drawing primitives are ``tests/page_kinds.py``'s (whose factories make the same kinds without real material).

Scores: share kept per kind (its recall for keep kinds, its false-keep rate for drop kinds); IoU: each true box
matched to its best predicted box, averaged per page, then over the kind's keep pages (a dropped page counts 0, a
kept page without boxes as the whole page) and over its kept pages only; ms: the judge call on the view, one
thread. Per source (a book series of ``pages/``, a photo folder, ``synthetic:*``): the threshold refitted (best
F1) on the other sources' scores, leave-one-source-out, which shows whether a threshold alone could fix a source.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "tests"))  # tests/factories, which the primitives use

from pipeline.judges import make_judge, threshold_of  # noqa: E402
from pipeline.judges.base import Verdict  # noqa: E402


def _primitives() -> ModuleType:
    """``tests/page_kinds.py`` under a name of its own: this file is ``page_kinds`` too when a bench imports it."""
    spec = importlib.util.spec_from_file_location("synthetic_page_kinds", ROOT / "tests" / "page_kinds.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


pk = _primitives()
Box = tuple[float, float, float, float]
GEN_DPI, BOOK_DPI = 150.0, 300.0
KINDS = ("album", "plate", "pencil", "blank_verso", "mount_back", "hands", "hands_on_text", "camera_book", "target")
KINDS += ("card_on_bed", "tinted_drawing", "bordered_plate", "tinted_text")  # bench/page_kinds_heldout.py's
PHOTO_SUFFIXES = {".jpg", ".jpeg", ".png"}


@dataclass
class GeneratedPage:
    """One labelled page: ``image`` (uint8, grey or RGB) at ``dpi`` of a sheet ``page_mm`` (width, height) in
    size; ``boxes`` are the true pictures as page fractions ``(x0, y0, x1, y1)``."""

    name: str
    kind: str
    source: str
    label_keep: bool
    boxes: list[Box]
    image: np.ndarray
    dpi: float
    page_mm: tuple[float, float]
    encoded: bytes | None = None
    """The scan as a PDF would embed it (JPEG), for the held-out kinds' web-size scans."""
    note: str = ""
    """What the page shows, where its kind varies (listed with ``--errors``)."""


def book_source(row: dict[str, str]) -> str:
    """A page's source for leave-one-source-out: its book series (volumes of one work are one source), as in
    ``bench/eval_purity.py``."""
    return "book:" + re.sub(r"\d+$", "", row["book"])


def boxes_px(row: dict[str, str]) -> list[tuple[int, int, int, int]]:
    """The labelled graphic boxes of a page in its image pixels."""
    parts = row["graphic_bboxes_xyxy"].replace("|", ";").split(";")
    return [tuple(int(float(v)) for v in part.split()) for part in parts if part.strip()]  # type: ignore[misc]


class Material:
    """The real material, read in place: the labelled book pages of ``pages/`` and the photo folders."""

    def __init__(self, data: Path) -> None:
        self.data = data
        rows = list(csv.DictReader((data / "pages" / "labels.csv").open(newline="")))
        self.text = [r for r in rows if r["label"] == "text"]
        self.illustrated = [r for r in rows if r["label"] == "illustration"]
        # a picture fills a sheet when it is at most 4:1 (the judge's max_aspect): not a music example's staff
        self.regions = [(r, b) for r in self.illustrated for b in boxes_px(r) if b[2] - b[0] <= 4 * (b[3] - b[1])]
        folders = [*sorted(p for p in (data / "cattle").iterdir() if p.is_dir()), data / "cattle_gate" / "not_cattle"]
        self.photos = {
            f.relative_to(data).as_posix(): sorted(p for p in f.iterdir() if p.suffix.lower() in PHOTO_SUFFIXES)
            for f in folders
        }

    def scan(self, row: dict[str, str]) -> np.ndarray:
        """A book page as scanned (grey, 300 dpi)."""
        return cv2.imread(str(self.data / "pages" / "images" / row["file"]), cv2.IMREAD_GRAYSCALE)

    def page(self, row: dict[str, str]) -> np.ndarray:
        """A book page in grey at ``GEN_DPI``."""
        img = self.scan(row)
        f = GEN_DPI / BOOK_DPI
        return pk.resize(img, round(img.shape[1] * f), round(img.shape[0] * f))

    def photos_from(self, rng: np.random.Generator, n: int) -> tuple[str, list[np.ndarray]]:
        """``n`` different photos (float RGB) of one folder, chosen at random, and the folder's name."""
        folder = sorted(self.photos)[int(rng.integers(len(self.photos)))]
        files = rng.choice(len(self.photos[folder]), n, replace=False)
        photos = []
        for i in files:
            bgr = cv2.imread(str(self.photos[folder][i]), cv2.IMREAD_COLOR)
            photos.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB).astype(np.float32))
        return folder, photos


def book_mm(row: dict[str, str]) -> tuple[float, float]:
    return float(row["width"]) * 25.4 / BOOK_DPI, float(row["height"]) * 25.4 / BOOK_DPI


def sheet_mm(rng: np.random.Generator, lo: float = 200.0, hi: float = 300.0) -> tuple[float, float]:
    w, h = rng.uniform(lo, hi, 2)
    return float(w), float(h)


def size_px(page_mm: tuple[float, float]) -> tuple[int, int]:
    """``(height, width)`` in pixels at ``GEN_DPI`` of a sheet ``page_mm``."""
    return pk.px(page_mm[1], GEN_DPI), pk.px(page_mm[0], GEN_DPI)


def jitter(tone: tuple[float, ...], rng: np.random.Generator, by: float = 6.0) -> tuple[float, float, float]:
    r, g, b = np.asarray(tone, np.float64) + rng.uniform(-by, by) + rng.uniform(-by / 3, by / 3, 3)
    return float(r), float(g), float(b)


def fractions(box: tuple[float, float, float, float], w: float, h: float) -> Box:
    return (box[0] / w, box[1] / h, box[2] / w, box[3] / h)


def table(head: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def made(
    kind: str, i: int, source: str, keep: bool, boxes: list[Box], img: np.ndarray, mm: tuple[float, float], grey: bool
) -> GeneratedPage:
    """The finished page (uint8; grey for greyscale material)."""
    return GeneratedPage(f"{kind}_{i:03d}", kind, source, keep, boxes, pk.finish(img, grey), GEN_DPI, mm)


sys.modules.setdefault("page_kinds", sys.modules[__name__])  # run as a script: the held-out kinds import this
import page_kinds_heldout as heldout  # noqa: E402

assert KINDS[-len(heldout.KINDS) :] == heldout.KINDS


def album(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Keep: 1-4 photos on album card (every count on every card tone in turn)."""
    n, tone = i % 4 + 1, list(pk.CARDS.values())[(i // 4) % 4]
    mm = sheet_mm(rng)
    card = pk.sheet(*size_px(mm), jitter(tone, rng), rng, grain=rng.uniform(1, 3), mottle=rng.uniform(1, 4))
    folder, photos = m.photos_from(rng, n)
    border = rng.uniform(1.5, 4) if rng.random() < 0.4 else 0.0
    boxes = pk.mount_photos(card, photos, rng, GEN_DPI, border, 2.0 if rng.random() < 0.4 else 0.0)
    return made("album", i, f"photos:{folder}", True, boxes, card, mm, grey=False)


def plate(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Keep: an illustration region enlarged to the sheet (one per region), then photos as watercolour prints."""
    if i < len(m.regions):
        row, (x0, y0, x1, y1) = m.regions[i]
        density = 1 - m.scan(row)[y0:y1, x0:x1].astype(np.float32) / 255
        aspect = density.shape[1] / density.shape[0]
        mm = pk.plate_mm(aspect, rng)
        h, w = size_px(mm)
        page = pk.sheet(h, w, (rng.uniform(228, 242),) * 3, rng)
        box = pk.sheet_box(h, w, aspect, rng)
        pk.ink_on(page, density, box, rng.uniform(15, 40))
        truth = [fractions(pk.ink_box(density, box), w, h)]
        return made("plate", i, book_source(row), True, truth, page, mm, grey=True)
    folder, (photo,) = m.photos_from(rng, 1)
    aspect = photo.shape[1] / photo.shape[0]
    mm = pk.plate_mm(aspect, rng)
    h, w = size_px(mm)
    page = pk.sheet(h, w, jitter(pk.CREAM, rng, 4), rng)
    box = pk.sheet_box(h, w, aspect, rng)
    box = pk.wash_on(page, photo, box, rng)
    return made("plate", i, f"photos:{folder}", True, [fractions(box, w, h)], page, mm, grey=False)


def pencil(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Keep: an illustration region redrawn as faint graphite lines, sometimes on textured paper."""
    row, (x0, y0, x1, y1) = m.regions[i]
    density = 1 - m.scan(row)[y0:y1, x0:x1].astype(np.float32) / 255
    aspect = density.shape[1] / density.shape[0]
    mm = pk.plate_mm(aspect, rng)
    h, w = size_px(mm)
    textured = rng.random() < 0.7
    page = pk.sheet(h, w, (235.0,) * 3, rng, grain=2.0 if textured else 0.5, mottle=3.0 if textured else 0.5)
    box = pk.sheet_box(h, w, aspect, rng)
    pk.ink_on(page, density, box, rng.uniform(170, 215), grain=0.45, rng=rng)
    return made("pencil", i, book_source(row), True, [fractions(pk.ink_box(density, box), w, h)], page, mm, True)


def blank_verso(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Drop: the blank back of a text page, its text mirrored through the paper at 5-10 % contrast."""
    row = m.text[int(rng.integers(len(m.text)))]
    text = m.page(row)
    grey = rng.random() < 0.5
    tone = (rng.uniform(226, 242),) * 3 if grey else jitter(pk.CREAM, rng, 5)
    page = pk.sheet(*text.shape, tone, rng, grain=rng.uniform(1, 3), mottle=rng.uniform(1, 4))
    pk.bleed_through(page, text, rng.uniform(0.05, 0.10), GEN_DPI)
    return made("blank_verso", i, book_source(row), False, [], page, book_mm(row), grey)


def mount_back(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Drop: the back of a mount, plain card with a tiny pencil note, a faint stamp or nothing."""
    mm = sheet_mm(rng)
    card = pk.sheet(*size_px(mm), jitter(list(pk.CARDS.values())[i % 4], rng), rng, mottle=rng.uniform(1, 4))
    if i % 3 == 0:
        pk.pencil_note(card, rng, GEN_DPI)
    elif i % 3 == 1:
        pk.faint_stamp(card, rng, GEN_DPI)
    return made("mount_back", i, "synthetic:card", False, [], card, mm, grey=False)


def hands(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Drop: a blank sheet held by a hand at its edge."""
    mm = sheet_mm(rng, 140, 300)
    page = pk.sheet(*size_px(mm), jitter(pk.CREAM if i % 2 else pk.WHITE, rng, 4), rng)
    pk.hand(page, rng, rng.uniform(0.03, 0.15))
    return made("hands", i, "synthetic:sheet", False, [], page, mm, grey=False)


def hands_on_text(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Drop: a real text page photographed with the hand that holds it open."""
    row = m.text[int(rng.integers(len(m.text)))]
    page = 25 + pk.grey_rgb(m.page(row), jitter(pk.CREAM, rng, 5)) * rng.uniform(0.8, 0.9)
    pk.hand(page, rng, rng.uniform(0.03, 0.15))
    return made("hands_on_text", i, book_source(row), False, [], page, book_mm(row), grey=False)


def camera_book(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """A real page photographed in its book: every illustration page (keep), then text pages (drop)."""
    illustrated = i < len(m.illustrated)
    row = m.illustrated[i] if illustrated else m.text[int(rng.integers(len(m.text)))]
    shot, (ox, oy), (fx, fy) = pk.photograph_page(pk.grey_rgb(m.page(row)), rng, GEN_DPI)
    f, (h, w) = GEN_DPI / BOOK_DPI, shot.shape[:2]
    boxes = [fractions((ox + x0 * f, oy + y0 * f, ox + x1 * f, oy + y1 * f), w, h) for x0, y0, x1, y1 in boxes_px(row)]
    mm = book_mm(row)
    return made("camera_book", i, book_source(row), illustrated, boxes, shot, (mm[0] * fx, mm[1] * fy), grey=False)


def target(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Drop: a calibration target on white or grey card."""
    mm = sheet_mm(rng)
    tone = (rng.uniform(238, 248),) * 3 if i % 2 == 0 else (rng.uniform(185, 215),) * 3
    card = pk.sheet(*size_px(mm), tone, rng, grain=1.5, mottle=1.5)
    pk.draw_target(card, rng, GEN_DPI)
    return made("target", i, "synthetic:target", False, [], card, mm, grey=False)


Maker = Callable[[Material, np.random.Generator, int], GeneratedPage]
MAKERS: dict[str, Maker] = {f.__name__: f for f in (album, plate, pencil, blank_verso, mount_back, hands)}
MAKERS.update({f.__name__: f for f in (hands_on_text, camera_book, target)}, **heldout.MAKERS)
DRAWN = {"album": 48, "blank_verso": 24, "mount_back": 24, "hands": 16, "hands_on_text": 24, "target": 20}
"""Pages per kind drawn at random; ``plate``, ``pencil`` and ``camera_book`` take every illustration region /
page once (plus as many photo plates and 24 text pages)."""


def counts(m: Material) -> dict[str, int]:
    regions = len(m.regions)
    return {
        **DRAWN,
        "plate": 2 * regions,
        "pencil": regions,
        "camera_book": len(m.illustrated) + 24,
        **heldout.counts(m),
    }


def generate(data: Path, seed: int = 0, kinds: Iterable[str] | None = None) -> Iterator[GeneratedPage]:
    """Every labelled page of ``kinds`` (default all), the same for the same ``seed``; each kind draws from its
    own random stream, so choosing kinds does not change the pages of the others."""
    m, chosen = Material(Path(data)), set(kinds or KINDS)
    n = counts(m)
    for k, kind in enumerate(KINDS):
        if kind in chosen:
            rng = np.random.default_rng([seed, k])
            for i in range(n[kind]):
                yield MAKERS[kind](m, rng, i)


def view(page: GeneratedPage, colorspace: str = "rgb") -> np.ndarray:
    """The judge's 72 dpi view of the page's physical size (an area resize, as ``pipeline.scan`` makes it), grey
    when the judge asks for grey (as the pipeline's worker hands it over)."""
    v = pk.view_of(page.image, page.page_mm)
    return cv2.cvtColor(v, cv2.COLOR_RGB2GRAY) if v.ndim == 3 and colorspace == "gray" else v


def iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - ix * iy
    return ix * iy / union if union > 0 else 0.0


def best_box_iou(truth: list[Box], v: Verdict) -> float:
    """Each true box matched to its best predicted box, averaged (a kept page without boxes is the whole page)."""
    crops = (list(v.boxes) or [(0.0, 0.0, 1.0, 1.0)]) if v.keep else []
    return float(np.mean([max((iou(t, p) for p in crops), default=0.0) for t in truth])) if truth else 0.0


def f1_at(cuts: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Page F1 for each threshold in ``cuts``."""
    keep = scores[None, :] >= cuts[:, None]
    tp = (keep & labels).sum(1)
    return 2 * tp / np.maximum(1, keep.sum(1) + labels.sum())


def loso(results: list[tuple[GeneratedPage, Verdict, float]], default: float) -> dict[str, tuple[float, float]]:
    """Per source: the threshold of best F1 on the other sources (ties to ``default``) and this source's accuracy
    at it."""
    scores = np.array([v.score for _, v, _ in results])
    labels = np.array([p.label_keep for p, _, _ in results])
    sources = np.array([p.source for p, _, _ in results])
    values = np.unique(scores)
    cuts = np.concatenate([[default], (values[1:] + values[:-1]) / 2, [values[-1] + 1e-6]])
    out = {}
    for source in sorted(set(sources)):
        rest = sources != source
        f1 = f1_at(cuts, scores[rest], labels[rest])
        best = cuts[np.lexsort((np.abs(cuts - default), -f1))[0]]
        out[source] = (float(best), float(np.mean((scores[~rest] >= best) == labels[~rest])))
    return out


def report(results: list[tuple[GeneratedPage, Verdict, float]], default: float, pdf: bool = False) -> None:
    """Tables per kind (and label), overall and per source; ``pdf``: some pages were judged via PDF."""
    rows = []
    for kind in KINDS:
        for keep in (True, False):
            rs = [r for r in results if r[0].kind == kind and r[0].label_keep == keep]
            if not rs:
                continue
            kept = sum(v.keep for _, v, _ in rs)
            ious = [best_box_iou(p.boxes, v) for p, v, _ in rs] if keep else []
            kept_ious = [x for x, (_, v, _) in zip(ious, rs, strict=False) if v.keep]
            tp, fp, fn = (kept, 0, len(rs) - kept) if keep else (0, kept, 0)
            score, ms = statistics.median(v.score for _, v, _ in rs), statistics.median(r[2] for r in rs)
            iou_all, iou_kept = (fmt(np.mean(x), 3) if x else "–" for x in (ious, kept_ious))
            label = "keep" if keep else "drop"
            rows.append([kind, label, *map(str, (len(rs), kept)), fmt(kept / len(rs)), *map(str, (tp, fp, fn))])
            rows[-1] += [iou_all, iou_kept, fmt(score), fmt(ms, 1)]
    via = "; for pages judged via PDF, making the PDF page and judge_page on it" if pdf else ""
    print(f"\n{len(results)} generated pages; ms = judge call on the 72 dpi view{via}, 1 thread, median\n")
    head = ["kind", "label", "pages", "kept", "share kept", "TP", "FP", "FN", "IoU (keep pages)", "IoU (kept)"]
    table([*head, "median score", "ms/page"], rows)
    pos = [v.keep for p, v, _ in results if p.label_keep]
    neg = [v.keep for p, v, _ in results if not p.label_keep]
    tp, fp = sum(pos), sum(neg)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / len(pos) if pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    times = [r[2] for r in results]
    print()
    head = ["pages", "keep pages", "drop pages", "kept", "precision", "recall", "F1", "ms/page median", "mean"]
    counted = map(str, (len(results), len(pos), len(neg), tp + fp))
    scores = (
        fmt(precision, 3),
        fmt(recall, 3),
        fmt(f1, 3),
        fmt(statistics.median(times), 1),
        fmt(statistics.fmean(times), 1),
    )
    table(head, [[*counted, *scores]])
    fitted = loso(results, default) if pos and neg else {}
    rows = []
    for source in sorted({p.source for p, _, _ in results}):
        rs = [r for r in results if r[0].source == source]
        kinds = ", ".join(sorted({p.kind for p, _, _ in rs}))
        keeps, drops = ([v.keep for p, v, _ in rs if p.label_keep == want] for want in (True, False))
        shares = (f"{sum(x)}/{len(x)}" if x else "–" for x in (keeps, drops))
        accuracy = np.mean([v.keep == p.label_keep for p, v, _ in rs])
        cut, held = fitted.get(source, (float("nan"), float("nan")))
        rows.append([source, kinds, str(len(rs)), *shares, fmt(accuracy), f"{cut:.3g}", fmt(held)])
    print("\nper source (LOSO: the threshold of best F1 on the other sources; this source's accuracy at it)\n")
    head = ["source", "kinds", "pages", "keep pages kept", "drop pages kept", "accuracy", "LOSO threshold"]
    table([*head, "LOSO accuracy"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, help="only these kinds (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judge", default="structure")
    parser.add_argument(
        "--save", type=Path, help="write the view each page was judged on as PNG here (label and verdict named)"
    )
    parser.add_argument("--errors", action="store_true", help="list the misjudged pages")
    parser.add_argument(
        "--via-pdf",
        action="store_true",
        help="judge every kind's page in a PDF page, as the pipeline does (the held-out kinds always are)",
    )
    parser.add_argument(
        "--declared",
        nargs="+",
        type=float,
        default=[],
        metavar="S",
        help="also judge the same pixels in a PDF page declared S times the real size; per kind, the share of the "
        "same decisions",
    )
    args = parser.parse_args()
    cv2.setNumThreads(1)
    judge = make_judge(args.judge)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    results, others, pdf = [], {}, False
    t0 = time.perf_counter()
    for page in generate(args.data.resolve(), args.seed, args.kinds):
        via_pdf = args.via_pdf or page.kind in heldout.KINDS
        v_img = None if via_pdf else view(page, judge.colorspace)
        t = time.perf_counter()
        verdict, v_img = heldout.pdf_verdict(page, judge) if via_pdf else (judge(v_img), v_img)
        results.append((page, verdict, 1000 * (time.perf_counter() - t)))
        pdf |= via_pdf
        if args.declared:
            views = (lambda p=page: view(p, judge.colorspace), args.declared, via_pdf)
            others[page.name] = heldout.other_views(page, judge, *views)
        if args.save and v_img is not None:
            out = v_img if v_img.ndim == 2 else cv2.cvtColor(v_img, cv2.COLOR_RGB2BGR)
            label = "keep" if page.label_keep else "drop"
            cv2.imwrite(str(args.save / f"{page.name}_{label}_{'kept' if verdict.keep else 'dropped'}.png"), out)
        if args.errors and verdict.keep != page.label_keep:
            print(f"  {'FP' if verdict.keep else 'FN'} {page.name} ({page.source}) score {verdict.score:.2f}")
            if page.note:
                print(f"      {page.note}")
    print(f"\ngenerated and judged in {time.perf_counter() - t0:.0f} s (seed {args.seed}, judge {args.judge})")
    report(results, threshold_of(args.judge), pdf)
    if others:
        heldout.report_views(results, others, KINDS)


if __name__ == "__main__":
    main()
