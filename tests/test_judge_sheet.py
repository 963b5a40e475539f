"""Pictures that are the page (``pipeline/judges/sheet.py`` through the structure judge): plates, washes,
photographs on album cards and faint pencil kept with their boxes; blank versos, mount backs, hands at the edge
and calibration targets dropped. Pages from ``tests/page_kinds.py``, judged grey as the pipeline's worker hands
a scan to the judge."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import page_kinds as kinds
import pymupdf
import pytest
from factories import pdf_from_images

from pipeline.judges import Box, make_judge
from pipeline.judges.structure import StructureJudge
from pipeline.worker import judge_page


@pytest.fixture(scope="module")
def judge() -> StructureJudge:
    return make_judge("structure")


def _grey(view: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(view, cv2.COLOR_RGB2GRAY) if view.ndim == 3 else view


def _iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - ix * iy
    return ix * iy / union


@pytest.mark.parametrize("n_photos", [1, 2, 3, 4])
@pytest.mark.parametrize("card", ["cream", "mid grey", "near-black"])
def test_photographs_on_an_album_card_are_kept_one_box_each(judge: StructureJudge, n_photos: int, card: str) -> None:
    view, truth = kinds.album_page(n_photos, card, seed=n_photos)
    verdict = judge(_grey(view))
    assert verdict.keep
    assert len(verdict.boxes) == n_photos
    for box in truth:
        assert max(_iou(box, found) for found in verdict.boxes) > 0.7


@pytest.mark.parametrize("style", ["watercolour", "engraving", "drawing"])
def test_a_plate_filling_its_sheet_is_kept_without_its_margins(judge: StructureJudge, style: str) -> None:
    view, [truth] = kinds.plate_page(seed=1, style=style)
    verdict = judge(_grey(view))
    assert verdict.keep
    assert max(_iou(truth, found) for found in verdict.boxes) > 0.7


@pytest.mark.parametrize(("seed", "border"), [(0, (40, 70, 150)), (1, (150, 40, 35)), (2, (60, 110, 60))])
def test_a_painting_filling_its_sheet_inside_a_coloured_border_is_kept_without_it(
    judge: StructureJudge, seed: int, border: tuple[int, int, int]
) -> None:
    view, [truth] = kinds.bordered_plate_page(seed=seed, border=border)
    verdict = judge(_grey(view))
    assert verdict.keep
    assert max(_iou(truth, found) for found in verdict.boxes) > 0.8


def test_a_faint_pencil_drawing_is_kept(judge: StructureJudge) -> None:
    view, [truth] = kinds.pencil_page(seed=1, ink=195)
    verdict = judge(_grey(view))
    assert verdict.keep
    assert max(_iou(truth, found) for found in verdict.boxes) > 0.5  # faint strokes: a looser box


def negative_target_in_frame(seed: int = 0) -> tuple[np.ndarray, None]:
    """A microfilm reel's start card (white lettering on film black, two paper slips) in the scanner's
    dark grey frame: the card is a dark piece on a dark sheet, not a photograph on a mount."""
    rng = np.random.default_rng(seed)
    page = rng.integers(14, 21, (880, 600), dtype=np.uint8)  # the frame: black noise, averaged in the view
    page[100:780, 70:530] = rng.integers(0, 4, (680, 460), dtype=np.uint8)
    for i, word in enumerate(["HISTORICAL", "SOCIETY", "START", "ST CLOUD", "NORDSTERN", "1877  THRU  1878"]):
        cv2.putText(page, word, (95, 180 + 80 * i), cv2.FONT_HERSHEY_SIMPLEX, 1.6, 255, 5, cv2.LINE_AA)
    for x0 in (90, 320):
        page[650:750, x0 : x0 + 190] = 235
        for y in range(662, 745, 9):
            page[y : y + 3, x0 + 8 : x0 + 8 + int(rng.integers(80, 175))] = 40
    return page, None


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(negative_target_in_frame, id="negative target card in a scanner frame"),
        pytest.param(lambda: kinds.blank_verso(seed=2, contrast=0.1), id="blank verso with bleed-through"),
        pytest.param(lambda: kinds.mount_back(seed=2, card_tone="cream", mark="note"), id="back of a mount, note"),
        pytest.param(lambda: kinds.mount_back(seed=3, card_tone="near-black", mark="stamp"), id="dark mount, stamp"),
        pytest.param(lambda: kinds.hand_at_edge(on_text=False, seed=2, cover=0.12), id="hand on a blank sheet"),
        pytest.param(lambda: kinds.hand_at_edge(on_text=True, seed=0, cover=0.08), id="hand on a text page"),
        pytest.param(lambda: kinds.hand_at_edge(on_text=True, seed=4, cover=0.12), id="fingers on a text page"),
        pytest.param(lambda: kinds.camera_book(illustrated=False, seed=2), id="photographed text page"),
        pytest.param(lambda: kinds.calibration_target(seed=2), id="calibration target"),
    ],
)
def test_pages_without_a_picture_are_dropped(judge: StructureJudge, page) -> None:
    view, _ = page()
    assert not judge(_grey(view)).keep


def test_an_album_page_keeps_its_decision_whatever_size_the_pdf_declares(tmp_path: Path) -> None:
    view, truth = kinds.album_page(3, "mid grey", seed=5)
    judge = make_judge("structure")
    found = []
    for dpi in (36, 72, 144):  # the same pixels in a page twice, once and half its real size
        path = pdf_from_images(tmp_path / f"album_{dpi}.pdf", [view], dpi=dpi)
        with pymupdf.open(path) as doc:
            verdict = judge_page(doc[0], judge)[0]
        found.append((verdict.keep, len(verdict.boxes)))
    assert found == [(True, len(truth))] * 3


def on_the_bed(
    page: tuple[np.ndarray, list[Box]], bed: int, margin: float, seed: int = 0
) -> tuple[np.ndarray, list[Box]]:
    """``page`` (a card or sheet, RGB, and its true boxes) lying on a scanner's bed of grey level ``bed``, with
    ``margin`` (of each side) of bed showing around it: the page's outer band then holds two grounds."""
    view, truth = page
    h, w = view.shape[:2]
    mh, mw = round(margin * h), round(margin * w)
    rng = np.random.default_rng(seed)
    scan = np.clip(bed + rng.normal(0, 1.5, (h + 2 * mh, w + 2 * mw, 3)), 0, 255).astype(np.uint8)
    scan[mh : mh + h, mw : mw + w] = view
    sh, sw = scan.shape[:2]
    moved = [
        ((x0 * w + mw) / sw, (y0 * h + mh) / sh, (x1 * w + mw) / sw, (y1 * h + mh) / sh) for x0, y0, x1, y1 in truth
    ]
    return scan, moved


@pytest.mark.parametrize(
    ("card", "bed", "margin"),
    [("cream", 244, 0.06), ("light grey", 20, 0.1), ("mid grey", 20, 0.05), ("near-black", 200, 0.08)],
)
def test_a_card_on_the_scanners_bed_is_read_on_the_card(
    judge: StructureJudge, card: str, bed: int, margin: float
) -> None:
    """The bed around the card is the page's outer band as much as the card is: the photograph is the picture,
    found on the card (the card and the bed are its grounds), with its own box."""
    view, truth = on_the_bed(kinds.album_page(1, card, seed=3), bed, margin)
    verdict = judge(_grey(view))
    assert verdict.keep
    assert max(_iou(truth[0], found) for found in verdict.boxes) > 0.7


@pytest.mark.parametrize(("card", "bed"), [("cream", 244), ("mid grey", 20), ("near-black", 200)])
def test_a_blank_card_on_the_scanners_bed_is_no_picture(judge: StructureJudge, card: str, bed: int) -> None:
    """A card is a ground, not a picture: with nothing on it, the page is dropped however it differs from the bed."""
    view, _ = on_the_bed(kinds.mount_back(seed=1, card_tone=card, mark=None), bed, 0.08)
    assert not judge(_grey(view)).keep
