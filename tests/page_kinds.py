"""Synthetic pages of the kinds the structure judge misjudges (issue #28), made without ``../shared/data``.

Pages that *are* a picture with no text around (photos mounted on album card, full-sheet plates, faint pencil
drawings) must be kept; pages with picture-like things that are no pictures (blank versos with bleed-through, the
backs of mounts, hands at the page's edge, calibration targets, books photographed on a table) must be dropped.

Each factory returns ``(image, boxes)``: the judge's view (uint8; grey ``HxW`` for greyscale material, RGB
``HxWx3`` for colour) at 72 dpi of the page's physical size ``page_mm``, drawn at 144 dpi and area-resized as
``pipeline.scan`` makes a view, and the true picture boxes as page fractions ``(x0, y0, x1, y1)`` (empty for a
page to drop). The drawing primitives (card, mounting, printing, hands, targets, camera shots) are shared with
``bench/page_kinds.py``, which builds the same kinds from real scans and photos.
"""

from __future__ import annotations

import cv2
import numpy as np
from factories import INK, PAPER, large_engraving, mixed_page, text_page

Box = tuple[float, float, float, float]
Tone = tuple[float, float, float]
PxBox = tuple[int, int, int, int]

CARDS: dict[str, Tone] = {
    "cream": (236, 227, 204),
    "light grey": (212, 212, 208),
    "mid grey": (150, 149, 146),
    "near-black": (34, 32, 31),
}
"""Album and mount card tones (RGB)."""
CREAM: Tone = (238, 231, 212)
WHITE: Tone = (243, 242, 238)
SKINS: tuple[Tone, ...] = (
    (247, 216, 190),
    (232, 188, 157),
    (210, 160, 118),
    (178, 124, 84),
    (130, 86, 56),
    (88, 58, 40),
)
"""Skin colours of several complexions, light to dark (RGB, lit side)."""
GEN_DPI, VIEW_DPI = 144.0, 72.0


def px(mm: float, dpi: float) -> int:
    """Millimetres to pixels at ``dpi`` (at least 1): every size here is physical, as the judge's are."""
    return max(1, round(mm * dpi / 25.4))


def sheet(h: int, w: int, tone: Tone, rng: np.random.Generator, grain: float = 2.0, mottle: float = 3.0) -> np.ndarray:
    """Paper or card of ``tone`` (float RGB) with the cloudy mottle and fine grain of real stock: a flat colour
    would be easier than any real sheet."""
    low = cv2.resize(rng.normal(0, 1, (max(2, h // 48), max(2, w // 48))).astype(np.float32), (w, h))
    noise = mottle * low + rng.normal(0, grain, (h, w)).astype(np.float32)
    return np.clip(np.asarray(tone, np.float32) + noise[..., None], 0, 255)


def finish(img: np.ndarray, grey: bool = False) -> np.ndarray:
    """Float RGB to the uint8 page (grey for greyscale material)."""
    out = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return cv2.cvtColor(out, cv2.COLOR_RGB2GRAY) if grey else out


def view_of(img: np.ndarray, page_mm: tuple[float, float]) -> np.ndarray:
    """The judge's 72 dpi view of a page of ``page_mm``, an area resize as ``pipeline.scan`` makes it."""
    w, h = (max(1, round(s * VIEW_DPI / 25.4)) for s in page_mm)
    return cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)


def resize(img: np.ndarray, w: int, h: int) -> np.ndarray:
    """Resize with the filter that suits the direction (area down, cubic up)."""
    shrink = w * h < img.shape[0] * img.shape[1]
    return cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC)


def grey_rgb(grey: np.ndarray, tone: Tone = (255, 255, 255)) -> np.ndarray:
    """A grey scan as float RGB, its white taking ``tone`` (a photographed or toned page)."""
    return grey.astype(np.float32)[..., None] * (np.asarray(tone, np.float32) / 255)


def _paste(card: np.ndarray, patch: np.ndarray, centre: tuple[float, float], angle: float, inset: int) -> Box:
    """Glue ``patch`` onto ``card`` rotated by ``angle`` degrees about ``centre``; the box of the patch less
    ``inset`` pixels on each side (the photo without its white border), as page fractions."""
    ph, pw = patch.shape[:2]
    m = cv2.getRotationMatrix2D((pw / 2, ph / 2), angle, 1.0)
    corners = np.array([[0, 0], [pw, 0], [pw, ph], [0, ph]], np.float64)
    turned = corners @ m[:, :2].T + m[:, 2]
    m[:, 2] -= turned.min(0)
    bw, bh = (int(np.ceil(v)) for v in np.ptp(turned, 0))
    warped = cv2.warpAffine(patch, m, (bw, bh), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))
    alpha = cv2.warpAffine(np.ones((ph, pw), np.float32), m, (bw, bh), flags=cv2.INTER_LINEAR)[..., None]
    h, w = card.shape[:2]
    x, y = min(max(0, round(centre[0] - bw / 2)), w - bw), min(max(0, round(centre[1] - bh / 2)), h - bh)
    region = card[y : y + bh, x : x + bw]
    region[:] = region * (1 - alpha) + warped
    inner = np.array([[inset, inset], [pw - inset, inset], [pw - inset, ph - inset], [inset, ph - inset]], np.float64)
    pts = inner @ m[:, :2].T + m[:, 2] + (x, y)
    (x0, y0), (x1, y1) = pts.min(0), pts.max(0)
    return (max(0.0, x0 / w), max(0.0, y0 / h), min(1.0, x1 / w), min(1.0, y1 / h))


def mount_photos(
    card: np.ndarray, photos: list[np.ndarray], rng: np.random.Generator, dpi: float, border_mm: float, tilt: float
) -> list[Box]:
    """Glue 1-4 ``photos`` (float RGB) onto ``card`` in an album grid with card between them, each maybe in a
    white border of ``border_mm`` and turned by up to ``tilt`` degrees; one true box per photo."""
    h, w = card.shape[:2]
    n, unit = len(photos), min(h, w)
    rows = {1: [1], 2: [2] if w >= h else [1, 1], 3: [3] if w > 1.4 * h else [1, 1, 1] if h > 1.4 * w else [2, 1]}
    layout = rows.get(n, [2, 2])
    margin, gap = rng.uniform(0.06, 0.12) * unit, rng.uniform(0.03, 0.07) * unit
    cell_h = (h - 2 * margin - gap * (len(layout) - 1)) / len(layout)
    b = px(border_mm, dpi) if border_mm else 0
    boxes, it = [], iter(photos)
    for r, k in enumerate(layout):
        cell_w = (w - 2 * margin - gap * (k - 1)) / k
        for c in range(k):
            photo = next(it)
            scale = min((cell_w - 2 * b) / photo.shape[1], (cell_h - 2 * b) / photo.shape[0]) * rng.uniform(0.8, 0.97)
            pic = resize(photo, max(2, round(photo.shape[1] * scale)), max(2, round(photo.shape[0] * scale)))
            if b:
                pic = cv2.copyMakeBorder(pic, b, b, b, b, cv2.BORDER_CONSTANT, value=WHITE)
            spare_x, spare_y = cell_w - pic.shape[1], cell_h - pic.shape[0]
            cx = margin + c * (cell_w + gap) + pic.shape[1] / 2 + spare_x * rng.uniform(0.3, 0.7)
            cy = margin + r * (cell_h + gap) + pic.shape[0] / 2 + spare_y * rng.uniform(0.3, 0.7)
            boxes.append(_paste(card, pic, (cx, cy), rng.uniform(-tilt, tilt), b))
    return boxes


def sheet_box(h: int, w: int, aspect: float, rng: np.random.Generator) -> PxBox:
    """Where a full-sheet picture of ``aspect`` (width / height) is printed: as large as margins of 5-15 % on
    each side allow, centred in what they leave."""
    left, right, top, bottom = rng.uniform(0.05, 0.15, 4)
    iw, ih = w * (1 - left - right), h * (1 - top - bottom)
    pw, ph = (iw, iw / aspect) if iw / aspect <= ih else (ih * aspect, ih)
    x0, y0 = w * left + (iw - pw) / 2, h * top + (ih - ph) / 2
    return round(x0), round(y0), round(x0 + pw), round(y0 + ph)


def plate_mm(aspect: float, rng: np.random.Generator) -> tuple[float, float]:
    """A plate's sheet (200-300 mm each way), turned the way its picture is."""
    long = rng.uniform(230, 300)
    short = float(np.clip(long / max(aspect, 1 / aspect) * rng.uniform(1.0, 1.15), 200, long))
    return (long, short) if aspect >= 1 else (short, long)


def ink_on(
    page: np.ndarray,
    density: np.ndarray,
    box: PxBox,
    tone: Tone | float,
    grain: float = 0.0,
    rng: np.random.Generator | None = None,
) -> None:
    """Print ``density`` (0 paper .. 1 full ink) into ``box`` of ``page`` in ink of ``tone``; ``grain`` > 0
    breaks strokes up as graphite does."""
    x0, y0, x1, y1 = box
    d = np.clip(resize(density.astype(np.float32), x1 - x0, y1 - y0), 0, 1)
    if grain and rng is not None:
        d = cv2.GaussianBlur(d * rng.uniform(1 - grain, 1, d.shape).astype(np.float32), (0, 0), 0.7)
    region = page[y0:y1, x0:x1]
    region -= d[..., None] * (region - np.asarray(tone, np.float32))


def wash_on(page: np.ndarray, photo: np.ndarray, box: PxBox, rng: np.random.Generator) -> PxBox:
    """Print ``photo`` into ``box`` as a watercolour-like print: blurred, posterised, paler and a little
    desaturated, the paper showing through (a transparent wash multiplies the paper). Returns the part of ``box``
    the wash tints (a photo's white background stays paper)."""
    x0, y0, x1, y1 = box
    img = resize(cv2.GaussianBlur(photo, (0, 0), rng.uniform(0.8, 1.8)), x1 - x0, y1 - y0) / 255
    levels = int(rng.integers(5, 10))
    img = cv2.GaussianBlur(np.round(img * (levels - 1)) / (levels - 1), (0, 0), 1.5)
    grey = img.mean(2, keepdims=True)
    img = grey + (img - grey) * rng.uniform(0.6, 0.9)
    wash = np.clip(1 - (1 - img) * rng.uniform(0.75, 0.95), 0, 1)
    page[y0:y1, x0:x1] *= wash
    return ink_box(1 - wash.min(2), box, 0.04)


def bleed_through(page: np.ndarray, text: np.ndarray, contrast: float, dpi: float) -> None:
    """Show the mirrored text of the other side faintly through ``page``: ``contrast`` of the paper at full ink,
    softened by the paper (~0.3 mm)."""
    h, w = page.shape[:2]
    d = 1 - resize(text[:, ::-1], w, h).astype(np.float32) / 255
    page *= (1 - contrast * cv2.GaussianBlur(d, (0, 0), 0.3 * dpi / 25.4))[..., None]


def pencil_note(card: np.ndarray, rng: np.random.Generator, dpi: float) -> None:
    """A few tiny pencil strokes near a corner (an inventory number, an initial), as found on mount backs."""
    h, w = card.shape[:2]
    tone = float(card[h // 2, w // 2].mean())
    ink = tone + (30.0 if tone < 90 else -float(rng.uniform(45, 90)))
    x, y = px(rng.uniform(12, 30), dpi), px(rng.uniform(12, 30), dpi)
    x, y = (w - x - px(30, dpi) if rng.random() < 0.5 else x), (h - y if rng.random() < 0.5 else y)
    for _ in range(int(rng.integers(3, 9))):
        pts = (x + rng.uniform(0, 1, (4, 2)) * (px(3, dpi), px(4, dpi))).astype(np.int32)
        cv2.polylines(card, [pts], False, (ink, ink, ink), px(0.25, dpi), cv2.LINE_AA)
        x += px(rng.uniform(2.5, 4.5), dpi)


def faint_stamp(card: np.ndarray, rng: np.random.Generator, dpi: float) -> None:
    """A faint round stamp 15-25 mm across (a collection's mark) at 10-25 % contrast."""
    h, w = card.shape[:2]
    mark = np.zeros((h, w), np.float32)
    r = px(rng.uniform(7.5, 12.5), dpi)
    c = (int(rng.uniform(r + 5, w - r - 5)), int(rng.uniform(r + 5, h - r - 5)))
    cv2.circle(mark, c, r, 1.0, px(0.6, dpi), cv2.LINE_AA)
    cv2.circle(mark, c, int(r * 0.68), 1.0, px(0.4, dpi), cv2.LINE_AA)
    for a in np.linspace(0, 2 * np.pi, 14, endpoint=False):
        p = (int(c[0] + 0.84 * r * np.cos(a)), int(c[1] + 0.84 * r * np.sin(a)))
        cv2.circle(mark, p, px(0.8, dpi), 1.0, -1, cv2.LINE_AA)
    ink = np.asarray([(95, 60, 140), (60, 60, 70), (150, 50, 50)][int(rng.integers(3))], np.float32)
    card -= rng.uniform(0.1, 0.25) * mark[..., None] * (card - ink)


def hand(page: np.ndarray, rng: np.random.Generator, cover: float) -> None:
    """A hand entering from one edge (a palm ellipse and 2-4 finger capsules, maybe a thumb), in a smooth skin
    tone with rounded shading and a soft shadow, covering about ``cover`` of the page."""
    side = "tblr"[int(rng.integers(4))]
    h, w = page.shape[:2]
    ch, cw = (h, w) if side in "tb" else (w, h)  # drawn with the edge on top, then turned
    pos, tilt, fingers = rng.uniform(0.15, 0.85), rng.uniform(-25, 25), int(rng.integers(2, 5))
    base = {2: (0.85, 0.8), 3: (0.8, 0.9, 0.8), 4: (0.7, 0.85, 0.9, 0.8)}[fingers]
    lengths = np.asarray(base) * rng.uniform(0.85, 1.1, fingers)
    fan, thumb, dip = rng.uniform(5, 35), rng.choice([-1, 0, 1]), rng.uniform(-0.35, 0.05)

    def shape(s: float) -> np.ndarray:
        m = np.zeros((ch, cw), np.uint8)
        rot = np.deg2rad(tilt)
        to_page = np.array([[np.cos(rot), -np.sin(rot)], [np.sin(rot), np.cos(rot)]])
        o = np.array([pos * cw, 0.0])

        def at(x: float, y: float) -> tuple[int, int]:
            p = o + to_page @ (np.array([x, y]) * s)
            return int(p[0]), int(p[1])

        cv2.ellipse(m, at(0, dip), (int(0.5 * s), int(0.6 * s)), tilt, 0, 360, 255, -1, cv2.LINE_AA)
        for i in range(fingers):  # side by side, fanned a little
            x = (i - (fingers - 1) / 2) * 0.23
            a = np.deg2rad(x * fan)
            end = (x + np.sin(a) * lengths[i], dip + 0.35 + np.cos(a) * lengths[i])
            cv2.line(m, at(x, dip + 0.35), at(*end), 255, max(2, int(0.2 * s)), cv2.LINE_AA)
        if thumb:
            cv2.line(m, at(0.4 * thumb, dip), at(0.75 * thumb, dip + 0.5), 255, max(2, int(0.24 * s)), cv2.LINE_AA)
        return m

    s = np.sqrt(cover * ch * cw / 1.2)
    for _ in range(3):  # the shape's share of the page grows with its size squared
        s *= np.sqrt(cover / max(1e-4, np.count_nonzero(shape(s)) / (ch * cw)))
    mask = shape(s).astype(np.float32) / 255
    k = {"t": 0, "l": 1, "b": 2, "r": 3}[side]
    mask = np.ascontiguousarray(np.rot90(mask, k))
    inside = cv2.distanceTransform((mask > 0.5).astype(np.uint8), cv2.DIST_L2, 5)
    light = cv2.resize(rng.normal(0, 1, (3, 3)).astype(np.float32), (w, h))
    shade = (1 - 0.4 * np.exp(-inside / (0.07 * s))) * (1 + 0.06 * light)
    skin = np.asarray(SKINS[int(rng.integers(len(SKINS)))], np.float32) * rng.uniform(0.92, 1.05, 3)
    off = np.float32([[1, 0, 0.05 * s], [0, 1, 0.06 * s]])
    shadow = cv2.GaussianBlur(cv2.warpAffine(mask, off, (w, h)), (0, 0), 0.06 * s)
    page *= (1 - rng.uniform(0.25, 0.45) * shadow)[..., None]
    alpha = cv2.GaussianBlur(mask, (0, 0), 0.8)[..., None]
    page[:] = page * (1 - alpha) + alpha * np.clip(skin * shade[..., None], 0, 255)


def background(h: int, w: int, rng: np.random.Generator, wood: bool) -> np.ndarray:
    """A table under a photographed book: dark cloth, or wood with grain streaks along its length."""
    if not wood:
        return sheet(h, w, tuple(rng.uniform(12, 40) * np.array([1, 1, 1.06])), rng, grain=3, mottle=5)
    streaks = cv2.resize(rng.normal(0, 1, (h, max(2, w // 60))).astype(np.float32), (w, h))
    base = rng.uniform((105, 65, 35), (170, 115, 70)).astype(np.float32)
    return np.clip(base * (1 + 0.12 * streaks)[..., None] + rng.normal(0, 3, (h, w, 1)), 0, 255).astype(np.float32)


def photograph_page(
    page: np.ndarray, rng: np.random.Generator, dpi: float
) -> tuple[np.ndarray, tuple[int, int], tuple[float, float]]:
    """A page (float RGB) photographed in its book on a table: camera contrast, page curl toward the spine, the
    background around it (10-25 % on some sides), the fore-edge's stack of page edges (2-6 % of its width) at
    the outer side. Returns the shot, the page's offset in it and the shot's size relative to the page."""
    h, w = page.shape[:2]
    spine = "lr"[int(rng.integers(2))]
    shot = 35 + page * rng.uniform(0.72, 0.84) * np.asarray((1.0, 0.97, 0.9), np.float32)
    n, depth = int(rng.uniform(0.08, 0.18) * w), rng.uniform(0.3, 0.6)
    ramp = np.ones(w, np.float32)
    ramp[:n] = 1 - depth * (1 - np.linspace(0, 1, n, dtype=np.float32)) ** 2
    ramp = ramp if spine == "l" else ramp[::-1]
    light = np.linspace(rng.uniform(0.9, 1.0), rng.uniform(0.9, 1.0), h, dtype=np.float32)
    shot = cv2.GaussianBlur(shot * ramp[None, :, None] * light[:, None, None], (0, 0), 0.6)
    fe = max(3, int(rng.uniform(0.02, 0.06) * w))
    pad = {s: int(rng.uniform(0.10, 0.25) * (h if s in "tb" else w)) if rng.random() < 0.6 else 0 for s in "tblr"}
    outer = "r" if spine == "l" else "l"
    pad[outer] = max(pad[outer], fe + px(rng.uniform(5, 20), dpi))
    pad[spine] = pad[spine] // 3
    out = background(h + pad["t"] + pad["b"], w + pad["l"] + pad["r"], rng, wood=rng.random() < 0.5)
    ox, oy = pad["l"], pad["t"]
    out[oy : oy + h, ox : ox + w] = shot
    lines = rng.uniform(150, 225, fe).astype(np.float32) * np.where(rng.random(fe) < 0.2, 0.75, 1.0)
    edge = cv2.GaussianBlur(lines[None, :] * light[:, None], (0, 0), 0.5)[..., None] * np.float32((1, 0.97, 0.9))
    x = ox + w if outer == "r" else ox - fe
    out[oy : oy + h, x : x + fe] = edge
    return out, (ox, oy), (out.shape[1] / w, out.shape[0] / h)


def draw_target(card: np.ndarray, rng: np.random.Generator, dpi: float) -> None:
    """A calibration target: a grey-scale step wedge of 10-20 patches, colour patches, resolution gratings
    (groups of three bars at falling pitch, both ways) and a millimetre ruler, stacked on the card."""
    h, w = card.shape[:2]
    mx, y = px(rng.uniform(12, 25), dpi), px(rng.uniform(12, 25), dpi)
    span = w - 2 * mx
    parts = ["wedge"] + [p for p in ("colours", "bars", "ruler", "bars") if rng.random() < 0.7]
    rng.shuffle(parts)
    labels = np.zeros((h, w), np.uint8)  # OpenCV draws glyphs into 8-bit images only
    font = cv2.FONT_HERSHEY_SIMPLEX
    for part in parts:
        tall = px(rng.uniform(15, 25), dpi)
        if y + tall > h - mx:
            break
        if part in ("wedge", "colours"):
            if part == "wedge":
                n = int(rng.integers(10, 21))
                tones = [(v, v, v) for v in np.linspace(rng.uniform(235, 250), rng.uniform(8, 30), n)]
            else:
                tones = [(40, 60, 150), (40, 150, 200), (50, 140, 70), (235, 210, 40), (200, 50, 40), (190, 60, 140)]
                tones += [(245, 245, 240), (120, 80, 50), (20, 20, 20)]
                n = len(tones)
            for i, tone in enumerate(tones):
                cv2.rectangle(card, (mx + i * span // n, y), (mx + (i + 1) * span // n, y + tall), tone, -1)
            if rng.random() < 0.5:
                name = "GRAY SCALE" if part == "wedge" else "COLOR CONTROL PATCHES"
                cv2.putText(labels, name, (mx, y - px(2, dpi)), font, dpi / 200, 255, max(1, px(0.3, dpi)))
            if part == "wedge" and rng.random() < 0.6:
                for i in range(n):
                    cv2.putText(labels, str(i), (mx + i * span // n + 4, y + tall + px(4, dpi)), font, dpi / 300, 255)
                y += px(5, dpi)
        elif part == "bars":
            x, tall = mx, 0
            for pitch in (4.0, 3.2, 2.5, 2.0, 1.6, 1.25, 1.0, 0.8, 0.63, 0.5, 0.4):
                p = pitch * dpi / 25.4
                if x + 6 * p > w - mx:
                    break
                for i in range(3):  # three vertical bars, then three horizontal ones beside them
                    cv2.rectangle(card, (int(x + i * p), y), (int(x + i * p + p / 2), int(y + 2.5 * p)), (20,) * 3, -1)
                    yy = int(y + i * p)
                    cv2.rectangle(card, (int(x + 3 * p), yy), (int(x + 5.5 * p), int(yy + p / 2)), (20,) * 3, -1)
                x, tall = x + 7 * p, max(tall, int(2.5 * p))
        else:
            tall = px(12, dpi)
            cv2.rectangle(card, (mx, y), (w - mx, y + tall), (245,) * 3, -1)
            for mm in range(int(span * 25.4 / dpi)):
                xx = mx + px(mm, dpi) if mm else mx
                long = px(5 if mm % 10 == 0 else 3.5 if mm % 5 == 0 else 2, dpi)
                cv2.line(card, (xx, y), (xx, y + long), (20,) * 3, max(1, px(0.15, dpi)))
                if mm % 10 == 0:
                    cv2.putText(labels, str(mm // 10), (xx + 2, y + px(10, dpi)), font, dpi / 400, 255)
        y += tall + px(rng.uniform(8, 35), dpi)
    a = labels[..., None].astype(np.float32) / 255
    card[:] = card * (1 - a) + 20 * a


# ----- synthetic stand-ins for real material -----


def synthetic_photo(h: int, w: int, rng: np.random.Generator) -> np.ndarray:
    """A "photograph" (float RGB): sky and ground gradients, blurred shapes for animals and trees, a building,
    grass strokes, foliage, film grain and texture."""
    yy = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
    horizon = rng.uniform(0.3, 0.7)
    sky, ground = rng.uniform(90, 235, 3).astype(np.float32), rng.uniform(30, 150, 3).astype(np.float32)
    img = np.where(yy < horizon, sky - 40 * (horizon - yy), ground * (0.7 + 0.5 * yy)) * np.ones((h, w, 1), np.float32)
    if rng.random() < 0.5:  # a building with windows on the horizon
        x0, bw, bh = int(rng.uniform(0, 0.6) * w), int(rng.uniform(0.15, 0.4) * w), int(rng.uniform(0.1, 0.3) * h)
        y1 = int(horizon * h)
        cv2.rectangle(img, (x0, y1 - bh), (x0 + bw, y1), tuple(rng.uniform(60, 200, 3).tolist()), -1)
        for wx in range(x0 + bw // 8, x0 + bw - bw // 8, max(4, bw // 5)):
            cv2.rectangle(img, (wx, y1 - bh * 3 // 4), (wx + max(2, bw // 12), y1 - bh // 2), (30, 30, 35), -1)
    for _ in range(int(rng.integers(3, 8))):
        c = (int(rng.uniform(0, w)), int(rng.uniform(horizon * h * 0.8, h)))
        axes = (int(rng.uniform(0.05, 0.3) * w), int(rng.uniform(0.05, 0.25) * h))
        cv2.ellipse(img, c, axes, rng.uniform(0, 180), 0, 360, tuple(rng.uniform(10, 230, 3).tolist()), -1)
    for _ in range(int(rng.integers(1, 4))):  # foliage: a cluster of small leaves
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, horizon * h), rng.uniform(0.05, 0.15) * w
        green = rng.uniform((20, 60, 10), (90, 150, 60))
        for _ in range(400):
            p = (int(cx + rng.normal(0, r)), int(cy + rng.normal(0, r)))
            cv2.circle(img, p, int(rng.integers(2, 6)), tuple((green * rng.uniform(0.6, 1.3)).tolist()), -1)
    for _ in range(int(w * 0.8)):  # grass
        x, y = rng.uniform(0, w), rng.uniform(horizon * h, h)
        tone = tuple((ground * rng.uniform(0.5, 1.4)).tolist())
        cv2.line(img, (int(x), int(y)), (int(x + rng.normal(0, 2)), int(y - rng.uniform(2, 8))), tone, 1)
    texture = cv2.resize(rng.normal(0, 1, (max(2, h // 6), max(2, w // 6))).astype(np.float32), (w, h))
    img += 14 * texture[..., None] + rng.normal(0, 5, (h, w, 1)).astype(np.float32)
    return np.clip(cv2.GaussianBlur(img, (0, 0), 0.8), 0, 255)


def line_drawing(h: int, w: int, rng: np.random.Generator, dpi: float) -> np.ndarray:
    """A draughtsman's landscape as ink density (0..1): broken ground strokes from the horizon down (closer
    toward it), outlined shapes with parallel hatching on their shadow sides, a few cloud arcs."""
    d = np.zeros((h, w), np.float32)
    t, mm = px(0.3, dpi), dpi / 25.4
    horizon = rng.uniform(0.35, 0.6) * h
    y = horizon
    while y < h - t:
        x = rng.uniform(0, 0.05) * w
        while x < w:
            run = rng.uniform(0.05, 0.25) * w
            ends = [
                (int(x), int(y + rng.uniform(-2, 2) * t)),
                (int(min(w - 1, x + run)), int(y + rng.uniform(-2, 2) * t)),
            ]
            cv2.line(d, *ends, 1.0, t, cv2.LINE_AA)
            x += run + rng.uniform(0.01, 0.08) * w
        y += rng.uniform(1.0, 2.5) * mm * (0.4 + 2.5 * (y - horizon) / (h - horizon))
    for _ in range(int(rng.integers(2, 4))):
        c, axes = (
            (int(rng.uniform(0, w)), int(rng.uniform(0.03, 0.2) * h)),
            (int(rng.uniform(0.05, 0.15) * w), px(6, dpi)),
        )
        cv2.ellipse(d, c, axes, 0, 180, 360, 1.0, t, cv2.LINE_AA)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    for _ in range(int(rng.integers(4, 9))):
        c = (int(rng.uniform(0.1, 0.9) * w), int(rng.uniform(0.2, 0.9) * h))
        axes = (int(rng.uniform(0.05, 0.22) * w), int(rng.uniform(0.05, 0.22) * h))
        angle, inside = rng.uniform(0, 180), np.zeros_like(d)
        cv2.ellipse(inside, c, axes, angle, 0, 360, 1.0, -1)
        d *= 1 - inside  # a solid thing hides what lies behind it
        cv2.ellipse(d, c, axes, angle, 0, 360, 1.0, t, cv2.LINE_AA)
        if rng.random() < 0.8:
            theta, phi, pitch = rng.uniform(0, np.pi), rng.uniform(0, 2 * np.pi), rng.uniform(0.7, 1.5) * mm
            hatch = ((xx * np.cos(theta) + yy * np.sin(theta)) % pitch) < t
            shadow = (xx - c[0]) * np.cos(phi) + (yy - c[1]) * np.sin(phi) > -0.2 * min(axes)
            d = np.maximum(d, inside * hatch * shadow)
    return d


def ink_box(density: np.ndarray, box: PxBox, level: float = 0.2) -> PxBox:
    """The part of ``box`` that ``density`` (drawn into it) actually inks: a drawing's true extent."""
    ys, xs = np.nonzero(density > level)
    if not len(xs):
        return box
    fx, fy = (box[2] - box[0]) / density.shape[1], (box[3] - box[1]) / density.shape[0]
    return (
        box[0] + int(xs.min() * fx),
        box[1] + int(ys.min() * fy),
        box[0] + int((xs.max() + 1) * fx),
        box[1] + int((ys.max() + 1) * fy),
    )


def _page(page_mm: tuple[float, float]) -> tuple[int, int]:
    w, h = (px(s, GEN_DPI) for s in page_mm)
    return h, w


def album_page(
    n_photos: int = 1,
    card_tone: str = "cream",
    seed: int = 0,
    border_mm: float = 0.0,
    tilt: float = 0.0,
    page_mm: tuple[float, float] = (250.0, 300.0),
) -> tuple[np.ndarray, list[Box]]:
    """Keep: 1-4 photos mounted on album card of ``card_tone`` (a key of :data:`CARDS`), RGB."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    card = sheet(h, w, CARDS[card_tone], rng)
    photos = [synthetic_photo(int(rng.integers(250, 450)), int(rng.integers(250, 450)), rng) for _ in range(n_photos)]
    boxes = mount_photos(card, photos, rng, GEN_DPI, border_mm, tilt)
    return view_of(finish(card), page_mm), boxes


def plate_page(
    seed: int = 0, style: str = "engraving", page_mm: tuple[float, float] = (240.0, 300.0)
) -> tuple[np.ndarray, list[Box]]:
    """Keep: one picture filling the sheet within 5-15 % margins; ``style`` ``engraving`` or ``drawing`` (grey
    view) or ``watercolour`` (a washed photo on cream paper, RGB)."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    page = sheet(h, w, CREAM if style == "watercolour" else (PAPER,) * 3, rng)
    box = sheet_box(h, w, rng.uniform(0.7, 1.3), rng)
    bw, bh = box[2] - box[0], box[3] - box[1]
    if style == "watercolour":
        box = wash_on(page, synthetic_photo(bh // 2, bw // 2, rng), box, rng)
    elif style == "drawing":
        drawing = line_drawing(bh, bw, rng, GEN_DPI)
        ink_on(page, drawing, box, INK)
        box = ink_box(drawing, box)
    else:
        ink_on(page, (PAPER - large_engraving(bw, bh, seed).astype(np.float32)) / (PAPER - INK), box, INK)
    return view_of(finish(page, grey=style != "watercolour"), page_mm), [_fractions(box, w, h)]


def bordered_plate_page(
    seed: int = 0,
    border: Tone = (40, 70, 150),
    paper_share: float = 0.01,
    page_mm: tuple[float, float] = (250.0, 250.0),
) -> tuple[np.ndarray, list[Box]]:
    """Keep: a painting (a photo's stand-in) filling its sheet inside a printed border of tone ``border`` (4 % of
    the side) with a light mat inside it, only ``paper_share`` of the side of paper outside: the page's outer band
    crosses paper and border, two grounds of which the lesser is too thin to read as one. RGB."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    page = sheet(h, w, CREAM, rng)
    side = min(h, w)
    out, band, mat = (max(1, round(f * side)) for f in (paper_share, 0.04, 0.015))
    page[out : h - out, out : w - out] = border
    inner = out + band
    page[inner : h - inner, inner : w - inner] = CREAM
    x0 = y0 = inner + mat
    page[y0 : h - y0, x0 : w - x0] = synthetic_photo(h - 2 * y0, w - 2 * x0, rng)
    return view_of(finish(page), page_mm), [_fractions((x0, y0, w - x0, h - y0), w, h)]


def pencil_page(
    seed: int = 0, ink: float = 200.0, texture: bool = True, page_mm: tuple[float, float] = (240.0, 300.0)
) -> tuple[np.ndarray, list[Box]]:
    """Keep: a faint pencil drawing, graphite at grey ``ink`` (170-215) on paper at 235, grey view."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    page = sheet(h, w, (235,) * 3, rng, grain=2.0 if texture else 0.3, mottle=3.0 if texture else 0.0)
    box = sheet_box(h, w, rng.uniform(0.7, 1.3), rng)
    drawing = line_drawing(box[3] - box[1], box[2] - box[0], rng, GEN_DPI)
    ink_on(page, drawing, box, ink, grain=0.45, rng=rng)
    box = ink_box(drawing, box)
    return view_of(finish(page, grey=True), page_mm), [_fractions(box, w, h)]


def blank_verso(
    seed: int = 0, contrast: float = 0.07, page_mm: tuple[float, float] = (150.0, 230.0)
) -> tuple[np.ndarray, list[Box]]:
    """Drop: blank paper with the mirrored text of the other side showing through at ``contrast``, grey."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    page = sheet(h, w, (236,) * 3, rng)
    bleed_through(page, text_page(w, h, seed), contrast, GEN_DPI)
    return view_of(finish(page, grey=True), page_mm), []


def mount_back(
    seed: int = 0, card_tone: str = "cream", mark: str | None = "note", page_mm: tuple[float, float] = (250.0, 300.0)
) -> tuple[np.ndarray, list[Box]]:
    """Drop: the back of a mount, plain card with ``mark`` ``note`` (tiny pencil strokes), ``stamp`` or none; RGB."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    card = sheet(h, w, CARDS[card_tone], rng)
    if mark == "note":
        pencil_note(card, rng, GEN_DPI)
    elif mark == "stamp":
        faint_stamp(card, rng, GEN_DPI)
    return view_of(finish(card), page_mm), []


def hand_at_edge(
    on_text: bool, seed: int = 0, cover: float = 0.08, page_mm: tuple[float, float] = (150.0, 230.0)
) -> tuple[np.ndarray, list[Box]]:
    """Drop: a hand holding the page at an edge (``cover`` of the page), over a text page or a blank sheet; RGB."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    page = grey_rgb(text_page(w, h, seed), CREAM) if on_text else sheet(h, w, CREAM, rng)
    hand(page, rng, cover)
    return view_of(finish(page), page_mm), []


def camera_book(
    illustrated: bool, seed: int = 0, page_mm: tuple[float, float] = (150.0, 220.0)
) -> tuple[np.ndarray, list[Box]]:
    """A book page photographed on a table (background, fore-edge, page curl); RGB. Drop for a text page; keep
    for an illustrated one (the engraving's box mapped into the photograph)."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    page = mixed_page(w, h, seed) if illustrated else text_page(w, h, seed)
    shot, (ox, oy), (fx, fy) = photograph_page(grey_rgb(page), rng, GEN_DPI)
    boxes = []
    if illustrated:  # mixed_page's engraving
        x0, y0, x1, y1 = w // 8, h // 10, w * 7 // 8, h // 2
        boxes = [_fractions((ox + x0, oy + y0, ox + x1, oy + y1), shot.shape[1], shot.shape[0])]
    return view_of(finish(shot), (page_mm[0] * fx, page_mm[1] * fy)), boxes


def calibration_target(
    seed: int = 0, card_tone: Tone = WHITE, page_mm: tuple[float, float] = (280.0, 220.0)
) -> tuple[np.ndarray, list[Box]]:
    """Drop: a calibration target (step wedge, colour patches, resolution gratings, ruler) on card; RGB."""
    rng = np.random.default_rng(seed)
    h, w = _page(page_mm)
    card = sheet(h, w, card_tone, rng, grain=1.5, mottle=1.5)
    draw_target(card, rng, GEN_DPI)
    return view_of(finish(card), page_mm), []


def _fractions(box: PxBox, w: int, h: int) -> Box:
    return (box[0] / w, box[1] / h, box[2] / w, box[3] / h)
