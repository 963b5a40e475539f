"""Page kinds of the held-out collections (issue #54), for ``bench/page_kinds.py``: web-size scans of sheets at
their real size, judged as the pipeline judges them (the scan in a PDF page, ``pipeline.worker.judge_page``).

Each page is drawn at its real size (cards 100-200 mm, sheets 200-450 mm, book pages as printed), often lying on
the scanner's bed (white, light grey or black, 2-15 % margins, maybe turned by up to 2°, a thin shadow on a light
bed), then reduced to a web-size scan: 500-1,000 px on its long side (~30-130 dpi at the real size), a little
scanner blur and noise, JPEG quality 72-92. ``GeneratedPage.image`` is that scan (decoded), ``encoded`` its JPEG,
``page_mm`` the scanned area: the PDF page the scan is embedded in.

* ``card_on_bed`` (keep): 1-2 real photos (``cattle/*``, ``cattle_gate/not_cattle*``; every fourth card the
  pictures of ``pages_more/``'s album and album-card scans, cut out by their label boxes) printed as old toned
  or faded prints, maybe in a white print border, on a grey, grey-green, brown, buff or black card with a
  handwritten legend (cursive strokes in graphite, ink or white crayon: OpenCV 5 draws its Hershey script
  fonts as a plain sans) under each photo, maybe an inventory number or a faint stamp; always on a bed of
  another tone. True boxes: the photos.
* ``tinted_drawing`` (keep): an illustration region of ``pages/`` faded to 15-40 % of its contrast in sepia,
  iron-gall or graphite onto yellowed, buff, grey-blue or stained paper (mottle, broad stains, darker edges,
  foxing), on a bed for 60 %. True box: the drawing's inked extent.
* ``bordered_plate`` (keep): a real colour photo (a painting's stand-in: as printed, painterly or washed; every
  fourth a ``pages_more/`` plate's picture) inside a blue, red, green or ochre printed border (maybe
  ornamented, with gold or black rules) that fills most of the sheet, on a bed for 40 %. True box: the picture.
* ``tinted_text`` (drop): a real text page of ``pages/`` printed on tinted paper, on a bed.

Sources for leave-one-source-out: ``photos:<folder>``, ``book:<series>``, ``pages_more:<kind>``.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable
from functools import cache
from pathlib import Path

import cv2
import numpy as np
import pymupdf
from page_kinds import PHOTO_SUFFIXES, GeneratedPage, Material, book_mm, book_source, fmt, jitter, pk, table

from pipeline.budget import OverBudget
from pipeline.judges.base import Judge, Verdict
from pipeline.worker import judge_page

KINDS = ("card_on_bed", "tinted_drawing", "bordered_plate", "tinted_text")
Tone = tuple[float, float, float]
PxBox = tuple[float, float, float, float]

CARD_TONES: dict[str, Tone] = {
    "grey": (150, 150, 146),
    "grey-green": (156, 163, 148),
    "brown": (112, 86, 62),
    "buff": (214, 196, 160),
    "black": (30, 28, 27),
}
BEDS: dict[str, Tone] = {"white": (247, 247, 245), "light grey": (206, 206, 204), "black": (13, 13, 14)}
PAPERS: dict[str, Tone] = {
    "yellowed": (228, 214, 172),
    "buff": (212, 191, 150),
    "grey-blue": (188, 198, 206),
    "stained": (200, 180, 138),
}
INKS: dict[str, Tone] = {"sepia": (78, 52, 34), "iron-gall": (48, 40, 52), "graphite": (82, 82, 88)}
BORDERS: dict[str, Tone] = {
    "blue": (38, 68, 150),
    "red": (158, 42, 40),
    "green": (48, 108, 70),
    "ochre": (182, 140, 52),
}
LEGENDS = (
    "Kuh Liese, Gut Hohenfeld 1912",
    "Stier Max - Zuchtschau 1926",
    "Herde am Bach, Juni 1908",
    "No. 47",
    "Sommer 1923",
    "Pferd d. Herrn Maier",
    "Ausstellung Breslau 1911",
    "La ferme, aout 1919",
    "Vache laitiere, 1927",
    "Our Jersey cow, 1915",
    "The old farm, 1904",
    "Inv. 1183 a",
    "Tafel 12",
    "Bauernhof bei Celle",
    "Fig. 3",
    "Mme Durand et son chien",
)
PAGES = {"card_on_bed": 48, "tinted_drawing": 36, "bordered_plate": 24, "tinted_text": 36}
"""Pages per kind; ``tinted_drawing`` takes every illustration region twice."""


def counts(m: Material) -> dict[str, int]:
    return {**PAGES, "tinted_drawing": 2 * len(m.regions)}


# ----- real material beyond what ``Material`` reads -----


@cache
def photo_folders(data: Path) -> dict[str, list[Path]]:
    """Every real photo folder: ``cattle/*``, and ``cattle_gate/not_cattle``, ``not_cattle_farm`` and
    ``not_cattle_more/*``."""
    gate = data / "cattle_gate"
    folders = [*sorted(p for p in (data / "cattle").iterdir() if p.is_dir()), gate / "not_cattle"]
    folders += [gate / "not_cattle_farm", *sorted(p for p in (gate / "not_cattle_more").iterdir() if p.is_dir())]
    return {
        f.relative_to(data).as_posix(): sorted(p for p in f.iterdir() if p.suffix.lower() in PHOTO_SUFFIXES)
        for f in folders
        if f.is_dir()
    }


def read_photo(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB).astype(np.float32)


def photos(m: Material, rng: np.random.Generator, n: int) -> tuple[str, list[np.ndarray]]:
    """``n`` different photos (float RGB) of one photo folder, and the source's name."""
    folders = photo_folders(m.data)
    folder = sorted(folders)[int(rng.integers(len(folders)))]
    files = rng.choice(len(folders[folder]), n, replace=False)
    return f"photos:{folder}", [read_photo(folders[folder][i]) for i in files]


@cache
def cut_pictures(data: Path, kinds: tuple[str, ...]) -> list[tuple[str, np.ndarray]]:
    """The pictures of ``pages_more/``'s scans of ``kinds``, cut out by their label boxes (float RGB), with the
    file's name."""
    out = []
    for r in csv.DictReader((data / "pages_more" / "labels.csv").open(newline="")):
        if r["kind"] not in kinds or not r["boxes"].strip():
            continue
        with pymupdf.open(data / "pages_more" / r["file"]) as doc:
            xref = doc[0].get_images()[0][0]
            raw = np.frombuffer(doc.extract_image(xref)["image"], np.uint8)
        img = cv2.cvtColor(cv2.imdecode(raw, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB).astype(np.float32)
        h, w = img.shape[:2]
        for part in r["boxes"].split(";"):
            x0, y0, x1, y1 = (float(v) for v in part.split())
            cut = img[round(y0 * h) : round(y1 * h), round(x0 * w) : round(x1 * w)]
            if min(cut.shape[:2]) >= 64:
                out.append((r["file"], cut))
    return out


def pages_more(m: Material, rng: np.random.Generator, kind: str, n: int) -> tuple[str, list[np.ndarray]]:
    """``n`` different pictures cut from ``pages_more/``'s scans of ``kind``; source ``pages_more:<kind>``."""
    cuts = cut_pictures(m.data, (kind,))
    return f"pages_more:{kind}", [cuts[i][1] for i in rng.choice(len(cuts), n, replace=False)]


# ----- paper, prints, beds and scans -----


def aged_paper(h: int, w: int, tone: Tone, rng: np.random.Generator, dpi: float, age: float = 1.0) -> np.ndarray:
    """Old paper of ``tone`` (float RGB): grain and mottle, broad uneven toning, sometimes darker edges and
    foxing spots; ``age`` scales all of it."""
    page = pk.sheet(h, w, tone, rng, grain=rng.uniform(1.5, 3.5) * age, mottle=0.0)
    cells = (max(2, round(w / pk.px(6, dpi))), max(2, round(h / pk.px(6, dpi))))  # clouds ~6 mm across
    cloud = cv2.resize(rng.normal(0, 1, cells[::-1]).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    broad = cv2.resize(rng.normal(0, 1, (4, 4)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    page += (rng.uniform(2, 6) * age * cv2.GaussianBlur(cloud, (0, 0), pk.px(1.5, dpi)))[..., None]
    page *= (1 + rng.uniform(0.02, 0.06) * age * broad)[..., None]
    if rng.random() < 0.6:
        yy, xx = np.ogrid[:h, :w]
        edge = np.minimum(np.minimum(yy, h - 1 - yy), np.minimum(xx, w - 1 - xx)).astype(np.float32)
        page *= (1 - rng.uniform(0.04, 0.12) * age * np.exp(-edge / pk.px(rng.uniform(8, 25), dpi)))[..., None]
    if rng.random() < 0.5 * age:
        spots = np.zeros((h, w), np.float32)
        for _ in range(int(rng.integers(5, 40))):
            c = (int(rng.uniform(0, w)), int(rng.uniform(0, h)))
            cv2.circle(spots, c, pk.px(rng.uniform(0.3, 2.0), dpi), float(rng.uniform(0.1, 0.35)), -1, cv2.LINE_AA)
        spots = cv2.GaussianBlur(spots, (0, 0), pk.px(0.4, dpi))[..., None]
        page -= spots * (page - np.float32((150, 108, 66)))
    return np.clip(page, 0, 255)


def old_print(photo: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """A photo as an old print: mostly monochrome, sepia, neutral or cool toned, else faded colour; blacks lifted
    and whites dimmed. Also its kind in words."""
    p = photo.astype(np.float32)
    grey = p.mean(2, keepdims=True)
    if rng.random() < 0.65:
        k = int(rng.integers(3))
        p = grey * np.float32([(1.0, 0.9, 0.74), (1.0, 1.0, 1.0), (0.94, 0.96, 0.98)][k])
        kind = ("sepia", "neutral", "cool")[k]
    else:
        p, kind = grey + (p - grey) * rng.uniform(0.55, 0.9), "faded colour"
    lo, hi = rng.uniform(8, 45), rng.uniform(210, 245)
    return lo + p * (hi - lo) / 255, kind


def cursive(text: str, rng: np.random.Generator) -> list[np.ndarray]:
    """Strokes that look like ``text`` handwritten in a running hand, in units of its x-height (baseline at 0,
    up negative): per letter an arch (n, m, r ...), a loop (a, o, e ...), a tall loop (capitals, digits,
    b, d, h ...) or one below the line (g, p, y ...), joined within a word, slanted and unsteady."""
    strokes, pts, x = [], [], 0.0
    for ch in text:
        if ch == " ":
            strokes, pts, x = [*strokes, np.array(pts)] if pts else strokes, [], x + rng.uniform(0.7, 1.1)
            continue
        w = rng.uniform(0.5, 0.8)
        if ch.isupper() or ch.isdigit() or ch in "bdfhklt":  # up the right side, down the left (y = 0 at t = pi/2)
            ry = rng.uniform(0.9, 1.2)
            cy, rx, t = -ry, w * 0.4, np.pi / 2 - np.linspace(0, 2 * np.pi, 16)
        elif ch in "gjpqy":  # below the line
            ry = rng.uniform(0.6, 0.8)
            cy, rx, t = ry, w * 0.4, -np.pi / 2 + np.linspace(0, 2 * np.pi, 16)
        elif ch in "aoecs":
            cy, ry, rx, t = -0.5, 0.5, w / 2, np.pi / 2 - np.linspace(0, 2.1 * np.pi, 16)
        else:  # an arch over the x-height
            cy, ry, rx, t = 0.0, rng.uniform(0.8, 1.1), w / 2, np.linspace(np.pi, 2 * np.pi, 10)
        xs, ys = x + w / 2 + rx * np.cos(t), cy + ry * np.sin(t)
        pts += list(zip(xs + rng.normal(0, 0.03, xs.size), ys + rng.normal(0, 0.03, ys.size), strict=True))
        x += w + rng.uniform(0.1, 0.3)
    strokes = [*strokes, np.array(pts)] if pts else strokes
    slant = rng.uniform(0.15, 0.4)
    return [np.stack([s[:, 0] - slant * s[:, 1], s[:, 1]], 1) for s in strokes]


def legend(
    card: np.ndarray, text: str, at: tuple[float, float], width: float, rng: np.random.Generator, dpi: float
) -> str:
    """``text`` handwritten (:func:`cursive`, a little off the level) on ``card`` at ``at`` (its top centre), at
    most ``width`` pixels wide: graphite or ink on a light card, white crayon on a dark one."""
    h, w = card.shape[:2]
    tone = float(card[min(h - 1, int(at[1])), min(w - 1, int(at[0]))].mean())
    if tone < 90:
        name, ink = "white crayon", np.float32(rng.uniform(185, 225, 1).repeat(3))
    else:
        name = "graphite" if rng.random() < 0.5 else "iron-gall"
        ink = np.float32(jitter(INKS[name], rng, 10))
    strokes = cursive(text, rng)
    allpts = np.concatenate(strokes)
    span = np.ptp(allpts[:, 0]) + 1e-6
    xh = min(pk.px(rng.uniform(1.8, 3.0), dpi), width / span)
    thick = max(1, pk.px(rng.uniform(0.15, 0.3), dpi))
    pad = int(3 * xh) + 2 * thick
    lo = allpts.min(0)
    size = (int(np.ptp(allpts[:, 1]) * xh) + 2 * pad, int(span * xh) + 2 * pad)
    mask = np.zeros(size, np.uint8)
    lines = [np.round((s - lo) * xh + pad).astype(np.int32) for s in strokes]
    cv2.polylines(mask, lines, False, 255, thick, cv2.LINE_AA)
    rot = cv2.getRotationMatrix2D((mask.shape[1] / 2, mask.shape[0] / 2), rng.uniform(-3, 3), 1.0)
    mask = cv2.warpAffine(mask, rot, mask.shape[::-1]).astype(np.float32) / 255 * rng.uniform(0.55, 0.9)
    x0 = int(at[0] - mask.shape[1] / 2 + rng.uniform(-0.15, 0.15) * max(0.0, width - span * xh))
    y0 = int(at[1] - pad)
    x0, y0 = max(0, min(x0, w - mask.shape[1])), max(0, min(y0, h - mask.shape[0]))
    mh, mw = min(mask.shape[0], h - y0), min(mask.shape[1], w - x0)
    a = mask[:mh, :mw, None]
    region = card[y0 : y0 + mh, x0 : x0 + mw]
    region[:] = region * (1 - a) + ink * a
    return name


def margins(rng: np.random.Generator) -> np.ndarray:
    """The bed's margins around the sheet (left, top, right, bottom) as shares of the sheet's width / height."""
    return rng.uniform(0.02, 0.15, 4)


def on_bed(
    sheet: np.ndarray, boxes: list[PxBox], rng: np.random.Generator, dpi: float, bed: np.ndarray, edge: float
) -> tuple[np.ndarray, list[tuple[float, float, float, float]], str]:
    """``sheet`` (float RGB; ``edge``: the grey level at its edge) lying on the scanner's bed with margins ``bed``
    (see :func:`margins`), a bed of another tone (at least 35 grey levels from ``edge``), turned by up to 2°
    half the time, a thin soft shadow on a light bed; ``boxes`` (sheet pixels) mapped into the scan as page
    fractions, and the bed in words."""
    far = [name for name, t in BEDS.items() if abs(np.mean(t) - edge) >= 35]
    name = far[int(rng.integers(len(far)))]
    tone = jitter(BEDS[name], rng, 3)
    h, w = sheet.shape[:2]
    left, top, right, bottom = bed
    bw, bh = round(w * (1 + left + right)), round(h * (1 + top + bottom))
    angle = rng.uniform(-2, 2) if rng.random() < 0.5 else 0.0
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)
    m[:, 2] += (w * left, h * top)
    out = pk.sheet(bh, bw, tone, rng, grain=1.0, mottle=1.0)
    alpha = cv2.warpAffine(np.ones((h, w), np.float32), m, (bw, bh), flags=cv2.INTER_LINEAR)
    if np.mean(tone) > 120:
        dx, dy = (pk.px(v, dpi) * s for v, s in zip(rng.uniform(0.3, 1.2, 2), rng.choice([-1, 1], 2), strict=True))
        shadow = cv2.warpAffine(alpha, np.float32([[1, 0, dx], [0, 1, dy]]), (bw, bh))
        out *= (1 - rng.uniform(0.2, 0.45) * cv2.GaussianBlur(shadow, (0, 0), pk.px(0.5, dpi)))[..., None]
    card = cv2.warpAffine(sheet, m, (bw, bh), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))
    out = out * (1 - alpha[..., None]) + card
    mapped = []
    for x0, y0, x1, y1 in boxes:
        pts = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64) @ m[:, :2].T + m[:, 2]
        (a, b), (c, d) = pts.min(0), pts.max(0)
        mapped.append((max(0.0, a / bw), max(0.0, b / bh), min(1.0, c / bw), min(1.0, d / bh)))
    mapped = [tuple(float(v) for v in box) for box in mapped]
    share = "/".join(f"{100 * v:.0f}" for v in bed)
    return out, mapped, f"on a {name} bed (margins {share} %{f', turned {angle:.1f}°' if angle else ''})"


def resolution(rng: np.random.Generator, scan_mm: tuple[float, float]) -> tuple[float, float]:
    """``(drawing dpi, scan dpi)``: a web-size scan is 500-1,000 px on its long side, at most 130 dpi where that
    still leaves 500 px; it is drawn at twice that (120-300 dpi) and reduced."""
    inches = max(scan_mm) / 25.4
    long_px = rng.uniform(500, min(1000, max(500, 130 * inches)))
    dpi = long_px / inches
    return float(min(300, max(120, 2 * dpi))), float(dpi)


def web_scan(
    page: tuple[str, int, str, bool, str],
    boxes: list,
    img: np.ndarray,
    dpis: tuple[float, float],
    grey: bool,
    rng: np.random.Generator,
) -> GeneratedPage:
    """The finished page ``(kind, number, source, keep, what it shows)``: ``img`` (float RGB at ``dpis[0]``)
    reduced to the scan's dpi with a little scanner blur and noise, JPEG-encoded (quality 72-92); ``boxes`` as
    page fractions."""
    kind, i, source, keep, note = page
    h, w = img.shape[:2]
    mm = (w / dpis[0] * 25.4, h / dpis[0] * 25.4)
    size = (max(1, round(mm[0] / 25.4 * dpis[1])), max(1, round(mm[1] / 25.4 * dpis[1])))
    small = cv2.resize(cv2.GaussianBlur(img, (0, 0), 0.5 * dpis[0] / dpis[1]), size, interpolation=cv2.INTER_AREA)
    small += rng.normal(0, 1.5, small.shape[:2])[..., None].astype(np.float32)
    out = pk.finish(small, grey)
    quality = int(rng.integers(72, 93))
    data = cv2.imencode(
        ".jpg", out if grey else cv2.cvtColor(out, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
    encoded = data[1].tobytes()
    decoded = cv2.imdecode(data[1], cv2.IMREAD_GRAYSCALE if grey else cv2.IMREAD_COLOR)
    image = decoded if grey else cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB)
    note += f"; {size[0]}×{size[1]} px, {dpis[1]:.0f} dpi of {mm[0]:.0f}×{mm[1]:.0f} mm, JPEG q{quality}"
    note += ", grey" if grey else ""
    return GeneratedPage(f"{kind}_{i:03d}", kind, source, keep, list(boxes), image, dpis[1], mm, encoded, note)


def fit_in(img: np.ndarray, w: float, h: float) -> np.ndarray:
    """``img`` cropped about its centre to the aspect ``w / h`` and resized to ``w x h`` pixels."""
    ih, iw = img.shape[:2]
    if iw / ih > w / h:
        cw = round(ih * w / h)
        img = img[:, (iw - cw) // 2 : (iw - cw) // 2 + cw]
    else:
        ch = round(iw * h / w)
        img = img[(ih - ch) // 2 : (ih - ch) // 2 + ch]
    return pk.resize(img, max(2, round(w)), max(2, round(h)))


# ----- the kinds -----


def card_on_bed(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Keep: 1-2 old prints on a tinted card with a handwritten legend under each, the card on the bed."""
    n = 2 if i % 3 == 2 else 1
    if i % 4 == 3:
        source, pics = pages_more(m, rng, "albumcard" if rng.random() < 0.5 else "album", n)
    else:
        source, pics = photos(m, rng, n)
    pics, looks = zip(*(old_print(p, rng) for p in pics), strict=True)
    aspect = pics[0].shape[1] / pics[0].shape[0]
    row = n == 2 and rng.random() < 0.5
    long = rng.uniform(100, 200)
    short = long * rng.uniform(0.62, 0.82)
    portrait = not row and (aspect < 1 or n == 2)
    mm = (short, long) if portrait else (long, short)
    bed = margins(rng)
    dpis = resolution(rng, (mm[0] * (1 + bed[0] + bed[2]), mm[1] * (1 + bed[1] + bed[3])))
    dpi = dpis[0]
    w, h = pk.px(mm[0], dpi), pk.px(mm[1], dpi)
    name = list(CARD_TONES)[(i // 4) % len(CARD_TONES)]
    tone = jitter(CARD_TONES[name], rng, 6)
    card = pk.sheet(h, w, tone, rng, grain=rng.uniform(1, 3), mottle=rng.uniform(1, 4))
    if rng.random() < 0.35:
        pk.pencil_note(card, rng, dpi)
    if rng.random() < 0.25:
        pk.faint_stamp(card, rng, dpi)
    side, top, foot = rng.uniform(0.06, 0.12) * w, rng.uniform(0.05, 0.12) * h, rng.uniform(0.03, 0.07) * h
    gap, written = rng.uniform(0.03, 0.06) * min(w, h), pk.px(rng.uniform(8, 13), dpi)
    cols, rows = (2, 1) if row else (1, n)
    cell_w, cell_h = (w - 2 * side - gap * (cols - 1)) / cols, (h - top - foot - gap * (rows - 1)) / rows
    border = pk.px(rng.uniform(1.5, 4), dpi) if rng.random() < 0.35 else 0
    boxes = []
    for k, pic in enumerate(pics):
        cx0, cy0 = side + (k % cols) * (cell_w + gap), top + (k // cols) * (cell_h + gap)
        scale = min((cell_w - 2 * border) / pic.shape[1], (cell_h - written - 2 * border) / pic.shape[0])
        scale *= rng.uniform(0.85, 1.0)
        pw, ph = round(pic.shape[1] * scale), round(pic.shape[0] * scale)
        x0 = round(cx0 + (cell_w - pw) / 2 + rng.uniform(-0.3, 0.3) * (cell_w - pw - 2 * border) / 2)
        y0 = round(cy0 + border + rng.uniform(0, 0.3) * (cell_h - written - ph - 2 * border))
        if border:
            card[y0 - border : y0 + ph + border, x0 - border : x0 + pw + border] = jitter(pk.WHITE, rng, 8)
        card[y0 : y0 + ph, x0 : x0 + pw] = pk.resize(pic, pw, ph)
        boxes.append((x0, y0, x0 + pw, y0 + ph))
        text = LEGENDS[int(rng.integers(len(LEGENDS)))]
        hand = legend(card, text, (x0 + pw / 2, y0 + ph + border + pk.px(rng.uniform(2, 4), dpi)), 0.9 * pw, rng, dpi)
    scan, truth, where = on_bed(np.clip(card, 0, 255), boxes, rng, dpi, bed, float(np.mean(tone)))
    what = f"{n} {'/'.join(looks)} print{'s' if n > 1 else ''}{' in white borders' if border else ''}"
    note = f"{what} on a {name} card {mm[0]:.0f}×{mm[1]:.0f} mm, legend in {hand}, {where}"
    return web_scan(("card_on_bed", i, source, True, note), truth, scan, dpis, False, rng)


def sheet_mm(aspect: float, rng: np.random.Generator, lo: float = 200, hi: float = 450) -> tuple[float, float]:
    """A sheet of ``lo``-``hi`` mm on its long side, turned the way its picture (of ``aspect``) is."""
    long = rng.uniform(lo, hi)
    short = float(np.clip(long / max(aspect, 1 / aspect) * rng.uniform(1.0, 1.2), 0.5 * long, long))
    return (long, short) if aspect >= 1 else (short, long)


def maybe_bed(share: float, rng: np.random.Generator) -> np.ndarray:
    bed = margins(rng)
    return bed if rng.random() < share else np.zeros(4)


def tinted_drawing(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Keep: an engraving faded to 15-40 % of its contrast onto tinted, aged paper."""
    row, (x0, y0, x1, y1) = m.regions[i % len(m.regions)]
    density = 1 - m.scan(row)[y0:y1, x0:x1].astype(np.float32) / 255
    aspect = density.shape[1] / density.shape[0]
    mm = sheet_mm(aspect, rng)
    bed = maybe_bed(0.6, rng)
    dpis = resolution(rng, (mm[0] * (1 + bed[0] + bed[2]), mm[1] * (1 + bed[1] + bed[3])))
    w, h = pk.px(mm[0], dpis[0]), pk.px(mm[1], dpis[0])
    tone = jitter(list(PAPERS.values())[i % len(PAPERS)], rng, 6)
    page = aged_paper(h, w, tone, rng, dpis[0])
    box = pk.sheet_box(h, w, aspect, rng)
    ink = list(INKS)[int(rng.integers(len(INKS)))]
    contrast = rng.uniform(0.15, 0.40)
    pk.ink_on(page, density * contrast, box, jitter(INKS[ink], rng, 8), 0.45 if ink == "graphite" else 0.0, rng)
    truth, where = [pk.ink_box(density, box)], "no bed"
    if bed.any():
        page, fractions, where = on_bed(page, truth, rng, dpis[0], bed, float(np.mean(tone)))
    else:
        fractions = [(a / w, b / h, c / w, d / h) for a, b, c, d in truth]
    paper = list(PAPERS)[i % len(PAPERS)]
    note = f"{row['file']} region in {ink} at {100 * contrast:.0f} % contrast on {paper} paper, {where}"
    page_id = ("tinted_drawing", i, book_source(row), True, note)
    return web_scan(page_id, fractions, page, dpis, rng.random() < 0.2, rng)


def painted(photo: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """A photo as a painting's stand-in: as printed (a little desaturated), painterly (edge-preserving
    smoothing, more saturated) or for a wash later."""
    style = ("print", "painterly", "wash")[int(rng.integers(3))]
    if style == "painterly":
        img = cv2.stylization(np.clip(photo, 0, 255).astype(np.uint8), sigma_s=rng.uniform(20, 60), sigma_r=0.4)
        img = img.astype(np.float32)
        grey = img.mean(2, keepdims=True)
        return grey + (img - grey) * rng.uniform(1.0, 1.3), style
    if style == "print":
        grey = photo.mean(2, keepdims=True)
        return grey + (photo - grey) * rng.uniform(0.7, 0.95), style
    return photo, style


def bordered_plate(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Keep: a colour picture inside a coloured printed border that fills most of the sheet."""
    source, (photo,) = pages_more(m, rng, "plate", 1) if i % 4 == 3 else photos(m, rng, 1)
    photo, style = painted(photo, rng)
    aspect = photo.shape[1] / photo.shape[0]
    mm = sheet_mm(aspect, rng)
    bed = maybe_bed(0.4, rng)
    dpis = resolution(rng, (mm[0] * (1 + bed[0] + bed[2]), mm[1] * (1 + bed[1] + bed[3])))
    dpi = dpis[0]
    w, h = pk.px(mm[0], dpi), pk.px(mm[1], dpi)
    paper = jitter(pk.CREAM if rng.random() < 0.6 else pk.WHITE, rng, 5)
    page = aged_paper(h, w, paper, rng, dpi, age=0.5)
    unit = min(w, h)
    outer = round(unit * rng.uniform(0.0, 0.05)) if rng.random() < 0.6 else 0
    band = round(unit * rng.uniform(0.03, 0.10))
    colour = np.float32(jitter(list(BORDERS.values())[i % len(BORDERS)], rng, 12))
    ring = np.zeros((h, w), np.float32)
    ring[outer : h - outer, outer : w - outer] = 1
    ring[outer + band : h - outer - band, outer + band : w - outer - band] = 0
    printed = pk.sheet(h, w, tuple(colour), rng, grain=3, mottle=6)
    if rng.random() < 0.5:  # an ornament along the band: lighter dots or lozenges
        marks = np.zeros((h, w), np.float32)
        step, mid = max(4, band), outer + band / 2
        for x in np.arange(outer + step / 2, w - outer, step):
            for y in (mid, h - mid):
                cv2.circle(marks, (int(x), int(y)), max(1, band // 7), 1.0, -1, cv2.LINE_AA)
        for y in np.arange(outer + step / 2, h - outer, step):
            for x in (mid, w - mid):
                cv2.circle(marks, (int(x), int(y)), max(1, band // 7), 1.0, -1, cv2.LINE_AA)
        printed += (marks * rng.uniform(30, 70))[..., None]
    page = page * (1 - ring[..., None]) + np.clip(printed, 0, 255) * ring[..., None]
    if rng.random() < 0.6:  # thin gold or black rules along the band's edges
        rule = (200, 168, 90) if rng.random() < 0.5 else (25, 22, 20)
        t = max(1, pk.px(rng.uniform(0.4, 1.0), dpi))
        for e in (outer + t, outer + band - t):
            cv2.rectangle(page, (e, e), (w - 1 - e, h - 1 - e), rule, t)
    inset = outer + band + (round(unit * rng.uniform(0.005, 0.03)) if rng.random() < 0.5 else 0)
    box = (inset, inset, w - inset, h - inset)
    if style == "wash":
        pk.wash_on(page, fit_in(photo, (w - 2 * inset) / 2, (h - 2 * inset) / 2), box, rng)
    else:
        page[inset : h - inset, inset : w - inset] = np.clip(fit_in(photo, w - 2 * inset, h - 2 * inset), 0, 255)
    where, truth = "no bed", [(inset / w, inset / h, 1 - inset / w, 1 - inset / h)]
    if bed.any():
        page, truth, where = on_bed(page, [box], rng, dpi, bed, float(np.mean(paper if outer else colour)))
    hue = list(BORDERS)[i % len(BORDERS)]
    frame = f"{hue} border {100 * band / unit:.0f} % wide, {100 * outer / unit:.0f} % paper outside"
    note = f"{style} picture, {frame}, {100 * (inset - outer - band) / unit:.0f} % mat inside, {where}"
    return web_scan(("bordered_plate", i, source, True, note), truth, page, dpis, False, rng)


def tinted_text(m: Material, rng: np.random.Generator, i: int) -> GeneratedPage:
    """Drop: a real text page printed on tinted, aged paper, on the bed."""
    row = m.text[int(rng.integers(len(m.text)))]
    mm = book_mm(row)
    bed = margins(rng)
    dpis = resolution(rng, (mm[0] * (1 + bed[0] + bed[2]), mm[1] * (1 + bed[1] + bed[3])))
    w, h = pk.px(mm[0], dpis[0]), pk.px(mm[1], dpis[0])
    tone = jitter(list(PAPERS.values())[i % len(PAPERS)], rng, 6)
    page = aged_paper(h, w, tone, rng, dpis[0])
    density = 1 - pk.resize(m.scan(row), w, h).astype(np.float32) / 255
    ink = "sepia" if rng.random() < 0.3 else "iron-gall"
    pk.ink_on(page, density * rng.uniform(0.7, 1.0), (0, 0, w, h), jitter(INKS[ink], rng, 8))
    scan, _, where = on_bed(page, [], rng, dpis[0], bed, float(np.mean(tone)))
    note = f"{row['file']} in {ink} on {list(PAPERS)[i % len(PAPERS)]} paper, {where}"
    return web_scan(("tinted_text", i, book_source(row), False, note), [], scan, dpis, rng.random() < 0.2, rng)


MAKERS: dict[str, Callable[[Material, np.random.Generator, int], GeneratedPage]] = {
    f.__name__: f for f in (card_on_bed, tinted_drawing, bordered_plate, tinted_text)
}


# ----- judging as the pipeline does -----


def pdf_verdict(page: GeneratedPage, judge: Judge, declared: float = 1.0) -> tuple[Verdict, np.ndarray | None]:
    """The worker's verdict (``pipeline.worker.judge_page``) and view when the page's scan fills a PDF page
    ``declared`` times its real size: its JPEG, or a PNG of the pixels for a page that has none."""
    data = page.encoded
    if data is None:
        img = page.image if page.image.ndim == 2 else cv2.cvtColor(page.image, cv2.COLOR_RGB2BGR)
        data = cv2.imencode(".png", img)[1].tobytes()
    with pymupdf.open() as doc:
        pdf = doc.new_page(width=page.page_mm[0] / 25.4 * 72 * declared, height=page.page_mm[1] / 25.4 * 72 * declared)
        pdf.insert_image(pdf.rect, stream=data)
        try:
            verdict, view, *_ = judge_page(pdf, judge)
        except OverBudget:  # the pipeline refuses such a page (recorded as an error): nothing is kept
            return Verdict(keep=False, score=0.0), None
    return verdict, view


def other_views(
    page: GeneratedPage, judge: Judge, view: Callable[[], np.ndarray], declared: list[float], via_pdf: bool
) -> dict[str, Verdict]:
    """The verdicts on the page's other views: the 72 dpi in-memory ``view`` (for a page judged via PDF) or the
    PDF page at its real size (for one judged on the view), and the PDF page declared each of ``declared``
    times its real size."""
    out = {"72 dpi view": judge(view())} if via_pdf else {"PDF ×1": pdf_verdict(page, judge)[0]}
    out.update({f"PDF ×{s:g}": pdf_verdict(page, judge, s)[0] for s in declared})
    return out


def report_views(results: list, others: dict[str, dict[str, Verdict]], kinds: tuple[str, ...]) -> None:
    """Per kind: its share kept as judged, and on each other view the share kept and the share of the same
    decision as judged (``results``: ``(page, verdict, ms)``)."""
    names = list(dict.fromkeys(k for o in others.values() for k in o))
    rows = []
    for kind in kinds:
        for keep in (True, False):
            rs = [(p, v) for p, v, _ in results if p.kind == kind and p.label_keep == keep and p.name in others]
            if not rs:
                continue
            row = [kind, "keep" if keep else "drop", str(len(rs)), fmt(np.mean([v.keep for _, v in rs]))]
            for name in names:
                alt = [others[p.name][name] for p, _ in rs]
                row += [
                    fmt(np.mean([a.keep for a in alt])),
                    fmt(np.mean([a.keep == v.keep for a, (_, v) in zip(alt, rs, strict=True)])),
                ]
                row += [fmt(statistics.median(abs(a.score - v.score) for a, (_, v) in zip(alt, rs, strict=True)))]
            rows.append(row)
    print("\nthe same pixels on other views (kept: share kept; same: share of the same decision as judged above)\n")
    head = ["kind", "label", "pages", "kept as judged"]
    for name in names:
        head += [f"kept {name}", f"same {name}", f"median |Δscore| {name}"]
    table(head, rows)
