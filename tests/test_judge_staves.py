"""Printed music (``pipeline/judges/staves.py``): a staff of five thin, even, unbroken lines is a picture, whatever
the page's declared size; lines of type, a ledger's rules, five thick bars and a short sign of five strokes are
not."""

from __future__ import annotations

import cv2
import numpy as np
import pymupdf
from judge_stages import page
from test_judge_line_art import drawings
from test_judge_structure import INK, OCTAVO, book_page, paper, text_block

from pipeline.judges.structure import StructureJudge


def music(img: np.ndarray, top: int, x0: int, x1: int, gap: int) -> tuple[int, int, int, int]:
    """A staff at ``top`` from ``x0`` to ``x1``, lines ``gap`` px apart, with a clef, bar lines, note heads on
    and between its lines and their stems; returns the staff's box."""
    bottom = top + 4 * gap
    for k in range(5):
        cv2.line(img, (x0, top + k * gap), (x1, top + k * gap), INK, 1)
    cv2.ellipse(img, (x0 + 8, top + 2 * gap), (5, 2 * gap), 0, 0, 360, INK, 2)  # a clef's bulk
    rng = np.random.default_rng(0)
    for x in range(x0 + 24, x1 - 8, 14):
        y = top + int(rng.integers(-2, 11)) * gap // 2
        cv2.ellipse(img, (x, y), (gap // 2 + 1, gap // 2), -20, 0, 360, INK, -1)
        cv2.line(img, (x + gap // 2, y), (x + gap // 2, y - 3 * gap), INK, 1)
    for x in range(x0 + 80, x1, 80):
        cv2.line(img, (x, top), (x, bottom), INK, 1)
    cv2.line(img, (x1, top), (x1, bottom), INK, 2)
    return x0, top, x1, bottom


def music_page(gap: int = 5) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """An octavo page of text with a music example across its column, as in a treatise on figured bass."""
    h, w = OCTAVO
    img = paper(OCTAVO)
    text_block(img, (40, 40, w - 40, 300), pitch=14, scale=0.38)
    staff = music(img, 360, 50, w - 50, gap)
    text_block(img, (40, 440, w - 40, h - 40), pitch=14, scale=0.38, seed=1)
    return img, staff


def soft_paragraphs() -> np.ndarray:
    """A page of paragraphs of five lines of 6 pt type set 12 pt apart, drawn at 72 dpi and softened as a scan
    reduced to the view is: each line a thin band, five of them evenly spaced, but with gaps between words."""
    words = ["Von", "der", "Religion", "geistl", "Sachen", "Schriften", "in", "Regier", "Abth", "dem", "Journal"]
    rng = np.random.default_rng(0)
    with pymupdf.open() as doc:
        sheet = doc.new_page(width=400, height=620)
        y = 50
        while y < 580:
            for _ in range(5):
                sheet.insert_text((40, y), " ".join(rng.choice(words, 12)), fontsize=6, fontname="tiro")
                y += 12
            y += 24
        pixmap = sheet.get_pixmap(dpi=72, colorspace=pymupdf.csGRAY)
    drawn = np.frombuffer(pixmap.samples, np.uint8).reshape(pixmap.h, pixmap.w)
    return cv2.GaussianBlur(drawn, (0, 0), 0.5)


def test_a_music_example_among_text_is_kept_as_a_picture_boxed_on_its_staff() -> None:
    img, (x0, top, x1, bottom) = music_page()
    verdict = StructureJudge()(img)
    assert verdict.keep, verdict.score
    h, w = OCTAVO
    (box,) = verdict.boxes
    assert box[0] <= x0 / w + 0.03 and box[2] >= x1 / w - 0.03, (box, "the staff end to end")
    assert box[1] < top / h and box[3] > bottom / h, (box, "the notes above and below its lines")
    assert box[1] > 300 / h and box[3] < 440 / h, (box, "not the text around it")
    blank = img.copy()
    blank[330:420] = paper((90, w))
    assert not StructureJudge()(blank).keep, "the same page without its music is text"


def test_a_staff_is_found_at_the_sizes_a_page_is_declared_at() -> None:
    """Staff lines 1.0-2.6 mm apart in print, on a page declared at its size, half of it or twice: lines 3, 5 and
    10 px apart in the judge's 72 dpi view (1.1, 1.8 and 3.5 mm)."""
    for gap in (3, 5, 10):
        img, staff = music_page(gap)
        found = page(img).music
        assert len(found) == 1 and found[0][1] < staff[1] and found[0][3] > staff[3], (gap, found)


def test_lines_of_type_a_ledger_and_a_short_sign_are_no_staves() -> None:
    h, w = OCTAVO
    tight = paper(OCTAVO)
    text_block(tight, (40, 40, w - 40, h - 40), pitch=7, scale=0.25)  # small type at 2.5 mm, every line
    paragraphs = soft_paragraphs()
    ledger = paper(OCTAVO)
    for y in range(60, h - 40, 12):  # an account book's ruling: its lines go on past five
        cv2.line(ledger, (40, y), (w - 40, y), INK, 1)
    sign = book_page()
    for k in range(5):  # five strokes 5 px apart, 20 px long: a sign in the text, not a staff
        cv2.line(sign, (180, 300 + 5 * k), (200, 300 + 5 * k), INK, 1)
    bars = paper(OCTAVO)
    for k in range(5):  # five bands 4 px thick, 8 apart: lines of type seen at half their size are such blurs
        cv2.rectangle(bars, (50, 300 + 8 * k), (350, 303 + 8 * k), INK, -1)
    pages = {"type": book_page(), "tight type": tight, "paragraphs": paragraphs, "ledger": ledger, "sign": sign}
    pages["thick bars"] = bars
    for name, img in pages.items():
        assert page(img).music == [], name


def test_a_page_of_music_is_kept_as_music_not_as_line_art() -> None:
    """Staff lines are rules; what is left, notes with stems and beams, is glyph-sized: no line art. The staves
    are the picture (a few bars, as books print them among text, stay under the judge's least area)."""
    rng = np.random.default_rng(0)
    img = paper(OCTAVO)
    for top in range(60, 560, 42):  # staves 15 mm apart
        for i in range(5):
            cv2.line(img, (40, top + 6 * i), (360, top + 6 * i), INK, 1, cv2.LINE_AA)
        x = 55
        while x < 330:
            n, up = int(rng.integers(1, 5)), bool(rng.random() < 0.5)
            heads = [(x + 12 * k, top + 3 * int(rng.integers(-2, 10))) for k in range(n)]
            for hx, hy in heads:
                cv2.ellipse(img, (hx, hy), (3, 2), -20, 0, 360, INK, -1, cv2.LINE_AA)
                cv2.line(img, (hx + (3 if up else -3), hy), (hx + (3 if up else -3), hy + (-20 if up else 20)), INK)
            if n > 1:
                by = min(y for _x, y in heads) - 20 if up else max(y for _x, y in heads) + 20
                cv2.line(img, (heads[0][0] + (3 if up else -3), by), (heads[-1][0] + (3 if up else -3), by), INK, 3)
            x += 12 * n + 18
    assert drawings(img) == [], "notes are no line drawing"
    verdict = StructureJudge()(img)
    assert verdict.keep and len(verdict.boxes) == 1, verdict
    x0, y0, x1, y1 = verdict.boxes[0]
    assert x0 < 0.15 and x1 > 0.85 and y0 < 0.1 and y1 > 0.85, (verdict.boxes, "every staff of the page")
