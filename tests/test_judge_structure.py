"""The structure judge on pages drawn here, at the judge's own view scale (72 dpi x zoom).

Each generator imitates one kind of printed matter from first principles: text is small glyphs in lines
(book or newspaper leading), engravings are hatching whose density follows a smooth shade, halftones are
dot screens, microfilm targets are big glyphs, bars and grey patches.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np
import pytest

from pipeline.judges import DEFAULT_JUDGE, JUDGES, make_judge
from pipeline.judges.structure import StructureJudge

PAPER, INK = 235, 25
A4 = (842, 595)  # h, w at 72 dpi
OCTAVO = (620, 400)
LETTERS = "abcdefghijklmnopqrstuvwxyzäöüABCDEFGHIJKLMNOPRSTUVW"


def paper(shape: tuple[int, int], tone: int = PAPER, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(tone + rng.normal(0, 3, shape), 0, 255).astype(np.uint8)


def text_block(img: np.ndarray, box: tuple[int, int, int, int], pitch: int, scale: float, seed: int = 0) -> None:
    """Lines of random words (Hershey glyphs) inside ``box``; ``pitch`` = line pitch in px."""
    rng = np.random.default_rng(seed)
    x0, y0, x1, y1 = box
    y = y0 + pitch
    while y <= y1:
        x = x0
        while True:
            word = "".join(rng.choice(list(LETTERS), int(rng.integers(2, 9))))
            (tw, _), _ = cv2.getTextSize(word, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
            if x + tw > x1:
                break
            cv2.putText(img, word, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, INK, 1, cv2.LINE_AA)
            x += tw + int(scale * 12)
        y += pitch


def shade(shape: tuple[int, int], seed: int) -> np.ndarray:
    """A smooth random shade in [0, 1] (the tones of a drawn scene)."""
    rng = np.random.default_rng(seed)
    small = rng.random((max(2, shape[0] // 25), max(2, shape[1] // 25))).astype(np.float32)
    return cv2.GaussianBlur(cv2.resize(small, shape[::-1], interpolation=cv2.INTER_CUBIC), (0, 0), 3).clip(0, 1)


def engraving(img: np.ndarray, box: tuple[int, int, int, int], seed: int = 0, frame: bool = True) -> None:
    """Hatching (pitch ~1 mm) whose line weight follows a shade, in two directions, plus contours."""
    x0, y0, x1, y1 = box
    h, w = y1 - y0, x1 - x0
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    tone = shade((h, w), seed)
    hatch1 = 0.5 + 0.5 * np.sin(2 * np.pi * (xx * 0.8 + yy * 0.6) / 3.0)
    hatch2 = 0.5 + 0.5 * np.sin(2 * np.pi * (xx * 0.3 - yy * 0.95) / 3.5)
    ink = (hatch1 < tone * 0.9) | ((hatch2 < tone - 0.45) & (tone > 0.45))
    region = img[y0:y1, x0:x1]
    region[ink] = INK
    levels = (tone * 6).astype(np.uint8)
    edges = cv2.morphologyEx(levels, cv2.MORPH_GRADIENT, np.ones((2, 2), np.uint8)) > 0
    region[edges] = INK
    if frame:
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), INK, 1)


def halftone(img: np.ndarray, box: tuple[int, int, int, int], lpi: float = 50, seed: int = 0) -> None:
    """A newspaper halftone as the judge's view sees it: a dot screen (``lpi`` lines per inch, dot area =
    tone, tones 20..85 % since photos are rarely paper-white) printed at 288 dpi, then rendered down to
    the view's 72 dpi, where a 50-lpi screen is barely resolved."""
    x0, y0, x1, y1 = box
    f = 4
    hh, ww = (y1 - y0) * f, (x1 - x0) * f
    tone = 0.2 + 0.65 * shade((hh, ww), seed)
    period = 72 * f / lpi
    fine = np.full((hh, ww), PAPER, np.uint8)
    for cy in np.arange(period / 2, hh, period):
        for cx in np.arange(period / 2, ww, period):
            r = period * np.sqrt(tone[int(cy), int(cx)] / np.pi)
            cv2.circle(fine, (int(cx * 16), int(cy * 16)), int(r * 16), INK, -1, cv2.LINE_AA, shift=4)
    img[y0:y1, x0:x1] = cv2.resize(fine, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)


def continuous_photo(img: np.ndarray, box: tuple[int, int, int, int], seed: int = 0) -> None:
    """A fine-screen halftone as a low-res render sees it: grey tones (15..85 %) with the scene's own
    fine detail (foliage, fabric, edges), which a real photograph always has."""
    x0, y0, x1, y1 = box
    rng = np.random.default_rng(seed)
    detail = cv2.GaussianBlur(rng.normal(0, 0.25, (y1 - y0, x1 - x0)).astype(np.float32), (0, 0), 0.8)
    tone = (0.15 + 0.7 * shade((y1 - y0, x1 - x0), seed) + detail).clip(0, 1)
    img[y0:y1, x0:x1] = (PAPER - tone * (PAPER - INK)).astype(np.uint8)


def headline_deck(img: np.ndarray, box: tuple[int, int, int, int], lines: list[str], cap: int) -> int:
    """Display type as newspapers set it: bold condensed capitals ``cap`` px tall in short centred lines,
    leading a third of the cap height; returns the baseline below the last line."""
    x0, _y0, x1, _y1 = box
    scale, weight = cap / 22.0, max(2, round(cap / 5))
    y = box[1] + cap
    for text in lines:
        (tw, th), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, weight)
        glyphs = np.full((th + 10, tw + 10), 255, np.uint8)
        cv2.putText(glyphs, text, (5, th + 5), cv2.FONT_HERSHEY_SIMPLEX, scale, 0, weight, cv2.LINE_AA)
        cw = min(x1 - x0, int(glyphs.shape[1] * 0.6))  # condensed: 60 % of the normal width
        glyphs = cv2.resize(glyphs, (cw, glyphs.shape[0]), interpolation=cv2.INTER_AREA)
        cx = x0 + (x1 - x0 - cw) // 2
        region = img[y - th - 5 : y - th - 5 + glyphs.shape[0], cx : cx + cw]
        np.minimum(region, np.where(glyphs < 128, INK, 255).astype(np.uint8), out=region)
        y += round(cap * 4 / 3)
    return y


HEADS = [
    ["SERIES OF ATTACKS", "LAUNCHED IN WEST", "BY GERMAN ARMIES"],
    ["BULGARIANS SEIZE", "FORT ON GREEK SOIL"],
    ["TURKISH CAMPAIGN", "DEALT HARD BLOW"],
]


def headline_columns(img: np.ndarray, cap: int = 26) -> None:
    """Three newspaper columns (~53 mm), each a headline deck over agate text, with column rules."""
    for c, words in enumerate(HEADS):
        x0 = 20 + c * 156
        y = headline_deck(img, (x0 + 4, 40, x0 + 146, 600), words, cap)
        text_block(img, (x0 + 6, y + 10, x0 + 144, img.shape[0] - 20), pitch=8, scale=0.27, seed=c)
        if c:
            cv2.line(img, (x0 - 3, 40), (x0 - 3, img.shape[0] - 20), INK, 1)


def book_page(seed: int = 0, shape: tuple[int, int] = OCTAVO) -> np.ndarray:
    h, w = shape
    img = paper(shape, seed=seed)
    text_block(img, (40, 40, w - 40, h - 40), pitch=14, scale=0.38, seed=seed)
    return img


def newspaper_page(seed: int = 0, columns: int = 6, shape: tuple[int, int] = (1300, 950)) -> np.ndarray:
    """Small type at tight leading in columns separated by rules, a masthead and headlines."""
    h, w = shape
    img = paper(shape, tone=215, seed=seed)
    cv2.putText(img, "The Evening Gazette", (180, 80), cv2.FONT_HERSHEY_COMPLEX, 2.0, INK, 4, cv2.LINE_AA)
    cv2.line(img, (20, 100), (w - 20, 100), INK, 2)
    col = (w - 40) // columns
    for c in range(columns):
        cx0 = 20 + c * col
        cv2.putText(img, "LATE NEWS", (cx0 + 10, 130), cv2.FONT_HERSHEY_DUPLEX, 0.7, INK, 2, cv2.LINE_AA)
        text_block(img, (cx0 + 6, 140, cx0 + col - 6, h - 20), pitch=8, scale=0.27, seed=seed + c)
        if c:
            cv2.line(img, (cx0, 110), (cx0, h - 20), INK, 1)
    return img


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def frac(box: tuple[int, int, int, int], shape: tuple[int, int]) -> tuple[float, float, float, float]:
    h, w = shape
    return (box[0] / w, box[1] / h, box[2] / w, box[3] / h)


@pytest.fixture
def judge() -> StructureJudge:
    return StructureJudge()


# --- the interface -----------------------------------------------------------------------------------


def test_registered_as_default_with_documented_defaults() -> None:
    assert DEFAULT_JUDGE == "structure" and "structure" in JUDGES and "sigma" in JUDGES
    j = make_judge()
    assert isinstance(j, StructureJudge)
    assert (j.name, j.colorspace, j.zoom, j.threshold, j.min_area) == ("structure", "gray", 1.0, 0.5, 0.02)
    assert make_judge("structure", threshold=0.9).threshold == 0.9


def test_rgb_view_gives_the_same_verdict_as_gray(judge: StructureJudge) -> None:
    img = book_page(seed=3)
    engraving(img, (60, 60, 340, 300), seed=3)
    rgb = cv2.cvtColor(img, cv2.COLOR_GRAY2RGB)
    assert judge(rgb) == judge(img)


# --- text is rejected --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_book_text_page_is_rejected(judge: StructureJudge, seed: int) -> None:
    v = judge(book_page(seed=seed))
    assert not v.keep and v.score < 0.2 and v.boxes == ()


@pytest.mark.parametrize("seed", range(2))
def test_newspaper_text_page_with_rules_and_headlines_is_rejected(judge: StructureJudge, seed: int) -> None:
    v = judge(newspaper_page(seed=seed))
    assert not v.keep and v.score < 0.3


@pytest.mark.parametrize("cap", [26, 34])
def test_headline_decks_of_large_bold_type_are_not_pictures(judge: StructureJudge, cap: int) -> None:
    """Capitals 9-12 mm tall are denser than the row-minimum window is tall, but they stand on baselines
    with empty leading between lines: lines of type, not texture."""
    img = paper((1300, 950), tone=215)
    headline_columns(img, cap)
    v = judge(img)
    assert not v.keep and v.score < 0.3 and v.boxes == ()


def test_bold_dense_text_is_rejected(judge: StructureJudge) -> None:
    img = paper(A4)
    h, _w = A4
    for c in range(2):
        text_block(img, (30 + c * 280, 40, 30 + c * 280 + 260, h - 40), pitch=11, scale=0.36, seed=c)
    bold = cv2.erode(img, np.ones((2, 2), np.uint8))  # heavy inking: thick strokes, narrow leading
    assert not judge(bold).keep


# --- pictures are kept, tightly boxed ----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_mixed_page_keeps_the_engraving_with_a_tight_box(judge: StructureJudge, seed: int) -> None:
    h, w = OCTAVO
    img = paper(OCTAVO, seed=seed)
    pic = (45, 60, 355, 330)
    engraving(img, pic, seed=seed)
    text_block(img, (40, 350, w - 40, h - 40), pitch=14, scale=0.38, seed=seed)
    v = judge(img)
    assert v.keep and v.score > 0.8
    assert len(v.boxes) == 1 and iou(v.boxes[0], frac(pic, OCTAVO)) > 0.8


def test_a_dropped_page_still_names_its_best_candidate(judge: StructureJudge) -> None:
    """The verdict carries the best-scoring region's box whether the page is kept or not: the report tells what
    kind of picture each page's candidate is, so a kind the judge drops is seen."""
    h, w = OCTAVO
    img = paper(OCTAVO, seed=4)
    pic = (45, 60, 355, 330)
    engraving(img, pic, seed=4)
    text_block(img, (40, 350, w - 40, h - 40), pitch=14, scale=0.38, seed=4)
    kept = judge(img)
    dropped = StructureJudge(threshold=kept.score + 0.01)(img)
    assert kept.keep and kept.best == kept.boxes[0], "a kept page's best candidate is its best picture, as boxed"
    assert not dropped.keep and dropped.boxes == () and dropped.best == kept.best
    assert iou(dropped.best, frac(pic, OCTAVO)) > 0.8
    assert judge(paper(OCTAVO)).best is None, "no candidate on a blank page"


def test_unframed_engraving_in_a_newspaper_is_found_and_boxed(judge: StructureJudge) -> None:
    img = newspaper_page(seed=5)
    pic = (330, 200, 650, 520)
    img[pic[1] - 10 : pic[3] + 10, pic[0] - 10 : pic[2] + 10] = 215  # the cut replaces two columns' text
    engraving(img, pic, seed=5, frame=False)
    v = judge(img)
    assert v.keep
    best = max(iou(b, frac(pic, img.shape)) for b in v.boxes)
    assert best > 0.7


def test_two_pictures_give_two_boxes(judge: StructureJudge) -> None:
    _h, _w = A4
    img = paper(A4)
    top, bottom = (50, 40, 545, 330), (50, 480, 545, 790)
    engraving(img, top, seed=1)
    engraving(img, bottom, seed=2)
    text_block(img, (50, 360, 545, 450), pitch=14, scale=0.38)
    v = judge(img)
    assert v.keep and len(v.boxes) == 2
    assert iou(v.boxes[0], frac(top, A4)) > 0.8 and iou(v.boxes[1], frac(bottom, A4)) > 0.8


def test_halftone_dot_screen_is_kept(judge: StructureJudge) -> None:
    img = book_page(seed=2, shape=A4)
    pic = (60, 120, 530, 520)
    halftone(img, pic, seed=2)
    v = judge(img)
    assert v.keep and max(iou(b, frac(pic, A4)) for b in v.boxes) > 0.8


def test_fine_screen_photo_rendered_as_grey_tones_is_kept(judge: StructureJudge) -> None:
    img = book_page(seed=4, shape=A4)
    pic = (60, 120, 530, 520)
    continuous_photo(img, pic, seed=4)
    v = judge(img)
    assert v.keep and max(iou(b, frac(pic, A4)) for b in v.boxes) > 0.7


# --- scan conditions ---------------------------------------------------------------------------------


def test_binarized_1bit_scan_behaves_like_the_grey_one(judge: StructureJudge) -> None:
    img = paper(OCTAVO)
    engraving(img, (45, 60, 355, 330), seed=7)
    text_block(img, (40, 350, 360, 580), pitch=14, scale=0.38, seed=7)
    binary = np.where(img < 128, 0, 255).astype(np.uint8)
    assert judge(binary).keep
    assert not judge(np.where(book_page(seed=7) < 128, 0, 255).astype(np.uint8)).keep


def test_toned_low_contrast_paper(judge: StructureJudge) -> None:
    img = paper(OCTAVO, tone=190)
    engraving(img, (45, 60, 355, 330), seed=8)
    text_block(img, (40, 350, 360, 580), pitch=14, scale=0.38, seed=8)
    faded = (img.astype(np.float32) * 0.5 + 70).astype(np.uint8)  # ink ~80, paper ~165
    assert judge(faded).keep
    text_only = (book_page(seed=8).astype(np.float32) * 0.5 + 70).astype(np.uint8)
    assert not judge(text_only).keep


def test_blank_pages(judge: StructureJudge) -> None:
    for img in (paper(A4), np.full(A4, 255, np.uint8), np.zeros(A4, np.uint8), paper(A4, tone=120, seed=3)):
        v = judge(img)
        assert not v.keep and v.score == 0.0 and v.boxes == ()


@pytest.mark.parametrize("width", [8, 25, 60])
def test_dark_scanner_borders_are_not_pictures(judge: StructureJudge, width: int) -> None:
    text = book_page(seed=1, shape=A4)
    bordered = text.copy()
    bordered[:, :width] = 10
    bordered[:, -width // 2 :] = 20
    bordered[-width:, :] = 15
    assert not judge(bordered).keep


def test_dark_border_does_not_widen_the_picture_box(judge: StructureJudge) -> None:
    img = paper(OCTAVO)
    pic = (45, 60, 355, 330)
    engraving(img, pic, seed=9)
    text_block(img, (40, 350, 360, 580), pitch=14, scale=0.38, seed=9)
    img[:, :20] = 10
    v = judge(img)
    assert v.keep and iou(v.boxes[0], frac(pic, OCTAVO)) > 0.8


# --- microfilm targets -------------------------------------------------------------------------------


def test_negative_target_card_white_letters_on_black_is_rejected(judge: StructureJudge) -> None:
    h, w = 640, 880
    img = np.full((h, w), 20, np.uint8)
    for i, line in enumerate(["VOLUME", "TIGHTLY BOUND", "BEST COPY", "AVAILABLE"]):
        cv2.putText(img, line, (150, 150 + i * 120), cv2.FONT_HERSHEY_SIMPLEX, 2.5, 225, 7)
    assert not judge(img).keep


def test_positive_target_card_big_letters_bars_and_grey_steps_is_rejected(judge: StructureJudge) -> None:
    h, w = 640, 880
    img = paper((h, w), tone=240)
    cv2.putText(img, "START", (250, 140), cv2.FONT_HERSHEY_SIMPLEX, 4.0, INK, 14)
    cv2.putText(img, "REEL 12", (230, 560), cv2.FONT_HERSHEY_SIMPLEX, 3.0, INK, 10)
    for g in range(8):  # grey step wedge
        img[200:420, 60 + g * 40 : 100 + g * 40] = 240 - g * 28
    for k, bar in enumerate((2, 3, 4, 6)):  # resolution test bars of decreasing frequency
        x = 450 + k * 100
        for i in range(5):
            img[220:300, x + 2 * i * bar : x + (2 * i + 1) * bar] = INK
            img[320 + 2 * i * bar : 320 + (2 * i + 1) * bar, x : x + 80] = INK
    cv2.rectangle(img, (650, 420), (820, 500), INK, -1)  # a solid black patch
    assert not judge(img).keep


# --- parameters --------------------------------------------------------------------------------------


def test_min_area_drops_small_ornaments_and_is_adjustable() -> None:
    img = book_page(seed=6, shape=A4)
    orn = (250, 380, 330, 450)  # a vignette, ~1.1 % of the page
    img[orn[1] - 8 : orn[3] + 8, orn[0] - 8 : orn[2] + 8] = PAPER
    engraving(img, orn, seed=6)
    assert not StructureJudge()(img).keep
    small = StructureJudge(min_area=0.005)(img)
    assert small.keep and iou(small.boxes[0], frac(orn, A4)) > 0.6


def test_score_is_monotone_in_picture_size_and_threshold_moves_the_decision() -> None:
    scores = []
    for side in (60, 90, 140, 220):
        img = paper(A4)
        engraving(img, (100, 100, 100 + side, 100 + side), seed=side)
        scores.append(StructureJudge()(img).score)
    assert scores == sorted(scores) and scores[0] >= 0.0 and scores[-1] <= 1.0
    assert scores[0] < 0.5 < scores[-1]
    img = paper(A4)
    engraving(img, (100, 100, 320, 320), seed=1)
    s = StructureJudge()(img).score
    assert StructureJudge(threshold=s - 0.01)(img).keep and not StructureJudge(threshold=s + 0.01)(img).keep


# --- crop boundaries ---------------------------------------------------------------------------------


def test_a_rule_touching_the_picture_does_not_stretch_its_crop(judge: StructureJudge) -> None:
    """A page rule running past the picture is layout, not picture: the crop stays on the picture."""
    img = paper(OCTAVO)
    pic = (130, 60, 330, 260)
    engraving(img, pic, seed=11, frame=False)
    cv2.line(img, (129, 20), (129, 600), INK, 1)  # a rule grazing the picture's left edge
    text_block(img, (140, 300, 360, 580), pitch=14, scale=0.38, seed=11)
    v = judge(img)
    assert v.keep and len(v.boxes) == 1 and iou(v.boxes[0], frac(pic, OCTAVO)) > 0.8


def test_a_picture_beside_headline_columns_is_cropped_without_them(judge: StructureJudge) -> None:
    """A cartoon next to three columns of headline decks across a faint, broken column rule (issue #4): the
    crop is the cartoon only."""
    img = paper((1300, 950), tone=215)
    headline_columns(img)
    img[30:580, 486:930] = 215
    pic = (494, 40, 900, 560)
    engraving(img, pic, seed=3, frame=False)
    rng = np.random.default_rng(0)
    for y in range(30, 1280, 6):  # the rule, broken where its ink ran thin
        if rng.random() < 0.8:
            cv2.line(img, (488, y), (488, y + 4), 130, 1)
    v = judge(img)
    assert v.keep and len(v.boxes) == 1 and iou(v.boxes[0], frac(pic, img.shape)) > 0.85


@pytest.mark.parametrize("tone", [150, 165])
def test_faint_rules_touching_the_picture_do_not_stretch_its_crop(judge: StructureJudge, tone: int) -> None:
    """Rules printed lighter than the picture's strokes (ink between the stroke and the rule level) are
    still rules: the crop must not follow them along the page."""
    img = paper(OCTAVO)
    pic = (130, 60, 330, 260)
    engraving(img, pic, seed=11, frame=False)
    cv2.line(img, (20, 59), (380, 59), tone, 1)
    cv2.line(img, (129, 20), (129, 600), tone, 1)
    text_block(img, (140, 300, 360, 580), pitch=14, scale=0.38, seed=11)
    v = judge(img)
    assert v.keep and len(v.boxes) == 1 and iou(v.boxes[0], frac(pic, OCTAVO)) > 0.8


def test_shaded_parts_joined_by_light_strokes_are_one_crop(judge: StructureJudge) -> None:
    """Two hatched parts of one drawing, its light middle drawn in open strokes without a white gutter
    between, give one crop; a second picture across a gutter of white paper stays separate."""
    img = paper(A4)
    left, right = (30, 100, 110, 300), (150, 100, 230, 300)
    engraving(img, left, seed=12, frame=False)
    engraving(img, right, seed=13, frame=False)
    for y in range(100, 270, 10):  # the light middle: open diagonal strokes from one part to the other
        cv2.line(img, (110, y), (150, y + 30), INK, 1)
    below = (30, 400, 565, 700)
    engraving(img, below, seed=14)
    v = judge(img)
    assert v.keep and len(v.boxes) == 2
    assert iou(v.boxes[0], frac((30, 100, 230, 300), A4)) > 0.8
    assert iou(v.boxes[1], frac(below, A4)) > 0.8


def test_crops_keep_a_faint_outer_frame_but_not_the_text_a_gutter_away(judge: StructureJudge) -> None:
    h, w = OCTAVO
    img = paper(OCTAVO, seed=4)
    pic = (50, 60, 350, 320)
    engraving(img, pic, seed=4, frame=False)
    frame = (pic[0] - 2, pic[1] - 2, pic[2] + 1, pic[3] + 1)  # a hairline 0.7 mm outside the hatching
    cv2.rectangle(img, frame[:2], frame[2:], 150, 1)
    text_block(img, (40, pic[3] + 3, w - 40, h - 40), pitch=14, scale=0.38, seed=4)
    text_top = pic[3] + 2 + int(np.argmax((img[pic[3] + 2 :] < 128).any(axis=1)))  # its first inked row
    assert 8 <= text_top - frame[3] <= 12  # a gutter of ~3 mm
    v = judge(img)
    assert v.keep and len(v.boxes) == 1
    x0, y0, x1, y1 = (v.boxes[0][0] * w, v.boxes[0][1] * h, v.boxes[0][2] * w, v.boxes[0][3] * h)
    assert x0 <= frame[0] and y0 <= frame[1] and x1 >= frame[2] + 1 and y1 >= frame[3] + 1
    assert y1 <= text_top  # and no text


# --- archive perturbations (issue #12): frames, shadows, strips, screens ---------------------------------


def framed(img: np.ndarray, share: float, sides: str, tint: float = 1.0) -> tuple[np.ndarray, tuple[int, int]]:
    """``img`` on a black scanner bed / microfilm frame that takes ``share`` of the framed scan's width and
    height on each side named in ``sides`` (``t b l r``); ``tint`` < 1 greys the page itself. Returns the
    framed scan and the page's offset ``(x, y)`` in it."""
    h, w = img.shape
    # a side's frame is ``share`` of the framed length: page + frames = page / (1 - share * frames on that axis)
    n_tb, n_lr = sum(s in sides for s in "tb"), sum(s in sides for s in "lr")
    pad = {s: round(share * h / (1 - share * n_tb)) if s in sides else 0 for s in "tb"}
    pad |= {s: round(share * w / (1 - share * n_lr)) if s in sides else 0 for s in "lr"}
    out = np.random.default_rng(0).integers(5, 30, (h + pad["t"] + pad["b"], w + pad["l"] + pad["r"]), dtype=np.uint8)
    out[pad["t"] : pad["t"] + h, pad["l"] : pad["l"] + w] = (img * tint).astype(np.uint8)
    return out, (pad["l"], pad["t"])


def illustrated_page(seed: int = 9) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """An octavo page: an engraving above text. Returns it and the engraving's box."""
    img = paper(OCTAVO, seed=seed)
    pic = (45, 60, 355, 330)
    engraving(img, pic, seed=seed)
    text_block(img, (40, 350, 360, 580), pitch=14, scale=0.38, seed=seed)
    return img, pic


@pytest.mark.parametrize(
    ("share", "sides", "tint"),
    [(0.15, "tblr", 1.0), (0.02, "tblr", 1.0), (0.12, "tl", 1.0), (0.08, "r", 1.0), (0.10, "tblr", 0.7)],
)
def test_a_framed_illustrated_page_is_kept_and_its_box_lands_on_the_picture(
    judge: StructureJudge, share: float, sides: str, tint: float
) -> None:
    page, (x0, y0, x1, y1) = illustrated_page()
    img, (dx, dy) = framed(page, share, sides, tint)
    v = judge(img)
    assert v.keep and v.score > 0.5
    assert iou(v.boxes[0], frac((x0 + dx, y0 + dy, x1 + dx, y1 + dy), img.shape)) > 0.8


def test_a_frame_taking_half_the_scan_is_no_negative_card(judge: StructureJudge) -> None:
    img, _ = framed(illustrated_page()[0], 0.15, "tblr")
    assert (img < 60).mean() > 0.5  # darker than a negative target card by area
    assert judge(img).keep


@pytest.mark.parametrize(("share", "sides"), [(0.15, "tblr"), (0.05, "tbl"), (0.12, "tr")])
def test_a_framed_text_page_is_rejected(judge: StructureJudge, share: float, sides: str) -> None:
    for page in (book_page(seed=3), newspaper_page(seed=3)):
        assert not judge(framed(page, share, sides)[0]).keep


def shadowed(img: np.ndarray, width: float, depth: float, side: str = "l") -> np.ndarray:
    """A gutter shadow: the page darkens smoothly over ``width`` of its width toward ``side`` to ``depth`` of
    its brightness at the edge."""
    w = img.shape[1]
    n = int(width * w)
    ramp = np.ones(w, np.float32)
    ramp[:n] = depth + (1 - depth) * np.sin(np.linspace(0, np.pi / 2, n)) ** 2
    return (img * (ramp if side == "l" else ramp[::-1])).astype(np.uint8)


@pytest.mark.parametrize(("width", "depth"), [(0.12, 0.35), (0.12, 0.15), (0.25, 0.3)])
def test_a_text_page_with_a_gutter_shadow_is_rejected(judge: StructureJudge, width: float, depth: float) -> None:
    for side in "lr":
        assert not judge(shadowed(book_page(seed=5, shape=A4), width, depth, side)).keep


@pytest.mark.parametrize(("width", "tone"), [(0.04, 0.6), (0.08, 0.45), (0.03, 0.3)])
def test_a_text_page_with_a_dark_edge_strip_is_rejected(judge: StructureJudge, width: float, tone: float) -> None:
    """A grey band along the edge (the facing page, a curled margin), not dark enough to be a frame."""
    img = book_page(seed=6, shape=A4).astype(np.float32)
    n = int(width * img.shape[1])
    img[:, :n] *= tone
    img[:, n : n + 3] *= np.linspace(tone, 1.0, 3)
    assert not judge(img.astype(np.uint8)).keep


def test_a_shadowed_illustrated_page_keeps_its_picture(judge: StructureJudge) -> None:
    page, pic = illustrated_page()
    v = judge(shadowed(page, 0.12, 0.3))
    assert v.keep and iou(v.boxes[0], frac(pic, OCTAVO)) > 0.8


@pytest.mark.parametrize("lpi", [40, 65, 85, 100, 133, 150])
def test_halftone_photo_beside_newspaper_text_is_kept_at_every_screen(judge: StructureJudge, lpi: int) -> None:
    """1920s-30s newspapers print photos at 65-133 lpi; at the view's 72 dpi most screens render as flat
    grey (or moire), whose rows are long straight runs of ink like rules."""
    img = newspaper_page(seed=2)
    pic = (60, 120, 330, 400)
    halftone(img, pic, lpi=lpi, seed=2)
    v = judge(img)
    assert v.keep and max(iou(b, frac(pic, img.shape)) for b in v.boxes) > 0.5


# --- line drawings without texture (issue #12): card symbols, geometric figures ------------------------


def outline(img: np.ndarray, points: np.ndarray | list, closed: bool = True) -> None:
    """A hairline (one view pixel, anti-aliased) through ``points``, as a line block prints at 72 dpi."""
    pts = np.round(np.asarray(points, np.float64) * 16).astype(np.int32)
    cv2.polylines(img, [pts], closed, INK, 1, cv2.LINE_AA, shift=4)


def heart(cx: float, cy: float, size: float, up: bool = True) -> np.ndarray:
    t = np.linspace(0, 2 * np.pi, 160)
    x = 16 * np.sin(t) ** 3
    y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
    return np.c_[cx + x * size / 34, cy + (y if up else -y) * size / 34]


def card_symbols(img: np.ndarray, box: tuple[int, int, int, int]) -> None:
    """Heart, diamond, spade and club drawn in outline, two by two in ``box`` (a card-game manual's figure)."""
    x0, y0, x1, y1 = box
    s = min(x1 - x0, y1 - y0) * 0.4
    centres = [(x0 + (x1 - x0) * fx, y0 + (y1 - y0) * fy) for fy in (0.27, 0.73) for fx in (0.27, 0.73)]
    (hx, hy), (dx, dy), (sx, sy), (cx, cy) = centres
    outline(img, heart(hx, hy, s))
    outline(img, [(dx, dy - s / 2), (dx + s / 3, dy), (dx, dy + s / 2), (dx - s / 3, dy)])
    outline(img, heart(sx, sy - s * 0.08, s, up=False))
    outline(img, [(sx - s / 8, sy + s / 2), (sx, sy + s / 4), (sx + s / 8, sy + s / 2)])
    r = s / 4.5
    for ox, oy in ((0, -1.1 * r), (-1.05 * r, 0.5 * r), (1.05 * r, 0.5 * r)):
        cv2.circle(img, (round((cx + ox) * 16), round((cy + oy) * 16)), round(r * 16), INK, 1, cv2.LINE_AA, 4)
    outline(img, [(cx - r / 2, cy + s / 2), (cx, cy + r * 0.4), (cx + r / 2, cy + s / 2)])


def geometric_figure(img: np.ndarray, box: tuple[int, int, int, int]) -> None:
    """A triangle ABC in its circumcircle with the altitude from C, vertices lettered (a geometry textbook)."""
    x0, y0, x1, y1 = box
    cx, cy, r = (x0 + x1) / 2, (y0 + y1) / 2, min(x1 - x0, y1 - y0) / 2 - 10
    a, b, c = ((cx + r * np.cos(t), cy + r * np.sin(t)) for t in np.radians([160, 20, 250]))
    outline(img, [a, b, c])
    outline(img, [c, (c[0], a[1] + (b[1] - a[1]) * (c[0] - a[0]) / (b[0] - a[0]))], closed=False)
    cv2.circle(img, (round(cx * 16), round(cy * 16)), round(r * 16), INK, 1, cv2.LINE_AA, 4)
    for (px, py), name in ((a, "A"), (b, "B"), (c, "C")):
        dx, dy = np.sign(px - cx), np.sign(py - cy)
        cv2.putText(img, name, (round(px + 8 * dx - 4), round(py + 8 * dy + 4)), cv2.FONT_HERSHEY_SIMPLEX, 0.35, INK)


Figure = Callable[[np.ndarray, tuple[int, int, int, int]], None]


def page_with_figure(draw: Figure, box: tuple[int, int, int, int], seed: int = 0) -> tuple[np.ndarray, tuple[int, ...]]:
    """A book page of text with ``draw``'s figure in ``box`` (a white gutter of ~3 mm around it), and the box
    of the figure's own ink."""
    img = book_page(seed=seed)
    img[box[1] - 10 : box[3] + 10, 40 : OCTAVO[1] - 40] = paper((box[3] - box[1] + 20, OCTAVO[1] - 80), seed=seed)
    alone = np.full(OCTAVO, 255, np.uint8)
    draw(alone, box)
    ys, xs = np.nonzero(alone < 200)
    draw(img, box)
    return img, (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)


def share(box: tuple[int, ...]) -> float:
    return (box[2] - box[0]) * (box[3] - box[1]) / (OCTAVO[0] * OCTAVO[1])


@pytest.mark.parametrize(
    ("draw", "box"),
    [
        (card_symbols, (105, 200, 295, 390)),  # a figure 56 x 58 mm, 11 % of the page
        (geometric_figure, (90, 170, 310, 390)),  # a circle of 70 mm, 17 %
        (geometric_figure, (115, 200, 285, 370)),  # 53 mm, 10 %
    ],
)
def test_a_line_drawing_without_texture_is_kept_and_boxed(
    judge: StructureJudge, draw: Figure, box: tuple[int, int, int, int]
) -> None:
    """Outlines have blank insides, so no window of them is inked in every row: they are found as stroke
    networks far larger than a glyph, crossed more than once, in a mostly blank area (the figure's straight
    lines go with the rules; what is left still spans it)."""
    img, figure = page_with_figure(draw, box)
    assert 0.1 <= share(figure) <= 0.2
    v = judge(img)
    assert v.keep and len(v.boxes) == 1
    assert iou(v.boxes[0], frac(figure, OCTAVO)) > 0.8


def test_a_line_drawing_under_a_tenth_of_the_page_is_minor(judge: StructureJudge) -> None:
    """The size that makes a drawing an illustration (~10 % of the page; labelled ``minor`` below) holds for
    line art as for texture, though its reference (``line_area``) is larger than ``min_area``."""
    img, figure = page_with_figure(card_symbols, (125, 230, 275, 380))
    assert 0.06 <= share(figure) <= 0.08
    v = judge(img)
    assert not v.keep and 0.1 < v.score < 0.5


@pytest.mark.parametrize("seed", range(3))
def test_text_with_a_small_line_ornament_is_rejected(judge: StructureJudge, seed: int) -> None:
    """A flourish of a few centimetres between paragraphs is an ornament, line-drawn or not."""
    img, figure = page_with_figure(card_symbols, (165, 275, 235, 345), seed=seed)
    assert share(figure) < 0.02
    v = judge(img)
    assert not v.keep and v.score < 0.1


def test_a_ruled_table_is_rejected(judge: StructureJudge) -> None:
    """A table's rules are long straight runs, its cells text: no stroke network is left once rules go."""
    img = book_page(seed=3)
    x0, y0, x1, y1 = 40, 150, 360, 470
    img[y0 - 6 : y1 + 6, x0 - 6 : x1 + 6] = paper((y1 - y0 + 12, x1 - x0 + 12), seed=3)
    cols, rows = np.linspace(x0, x1, 5).astype(int), np.linspace(y0, y1, 9).astype(int)
    for i in range(len(rows) - 1):
        for j in range(len(cols) - 1):
            text_block(img, (cols[j] + 5, rows[i] + 2, cols[j + 1] - 5, rows[i + 1] - 8), 14, 0.38, seed=i * 9 + j)
    for x in cols:
        cv2.line(img, (int(x), y0), (int(x), y1), INK, 1)
    for y in rows:
        cv2.line(img, (x0, int(y)), (x1, int(y)), INK, 1)
    v = judge(img)
    assert not v.keep and v.score < 0.2


def test_text_whose_lines_run_together_is_not_line_art(judge: StructureJudge) -> None:
    """Small type at 72 dpi: descenders touch the next line's ascenders, so glyphs chain into networks
    larger than a glyph, crossed more than once; but text inks nearly every 3 mm cell."""
    for pitch in (10, 11):
        img = paper(OCTAVO)
        text_block(img, (40, 40, 360, 580), pitch=pitch, scale=0.42)
        assert not judge(img).keep


def test_a_diagonal_hairline_is_not_line_art(judge: StructureJudge) -> None:
    """A single stroke, however long and whatever its angle (a resolution target's diagonal, a cancelled
    page's stroke), is crossed once by every row and column: no drawing."""
    img = paper(OCTAVO)
    cv2.line(img, (40, 580), (360, 40), INK, 1, cv2.LINE_AA)
    for i in range(6):
        cv2.rectangle(img, (70 + 40 * i, 470), (105 + 40 * i, 505), 40 + 35 * i, -1)
    assert not judge(img).keep


def test_a_shaded_part_inside_a_line_drawing_is_cropped_with_the_whole_drawing(judge: StructureJudge) -> None:
    """The hatching is found as texture; the outline around it, blank inside, belongs to the same picture:
    one crop, the drawing's (the texture's crop alone grows only so far along strokes)."""
    img, figure = page_with_figure(geometric_figure, (90, 170, 310, 390))
    engraving(img, (160, 250, 240, 330), seed=1, frame=False)
    v = judge(img)
    assert v.keep and len(v.boxes) == 1
    assert iou(v.boxes[0], frac(figure, OCTAVO)) > 0.8


def test_a_picture_on_its_sheet_holds_the_printed_regions_that_give_way_to_it() -> None:
    """A cabinet card's pale studio backdrop is no piece of its sheet; the sitter's dark clothes are, and the printed
    judge's texture reaches the sitter's head: the crop holds both, with the better score (it was the sheet's piece
    alone, the sitter's legs: crop IoU 0.14 on the real card)."""
    from pipeline.judges.candidates import Region
    from pipeline.judges.structure import _holding

    legs = Region((0.39, 0.43, 0.62, 0.87), 0.10, 0.0, 0.69)
    sitter = Region((0.29, 0.15, 0.68, 0.88), 0.28, 0.4, 0.80)
    held = _holding(legs, [sitter])
    assert held.box == (0.29, 0.15, 0.68, 0.88) and held.score == 0.80
    assert held.area == pytest.approx((0.68 - 0.29) * (0.88 - 0.15))
    assert _holding(legs, []) == legs
