"""A page's real size from its text lines: the same pixels give the same decision whatever page size the PDF
declares (``pipeline/scale.py``, used by ``pipeline.worker.judge_view``)."""

from __future__ import annotations

from pathlib import Path

import cv2
import pymupdf
import pytest
from factories import blank_page, engraving, mixed_page, on_bed, pdf_from_images, stained, text_page

from pipeline.judges import make_judge
from pipeline.scale import ASSUMED_PITCH_MM, line_pitch, true_zoom
from pipeline.worker import judge_page

LINE = 22
""":func:`factories.text_page`'s line pitch in pixels."""


@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
def test_line_pitch_is_the_distance_between_lines_at_any_resolution(scale: float) -> None:
    page = text_page(1200, 1600, columns=3)
    small = cv2.resize(page, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    assert line_pitch(small) == pytest.approx(LINE * scale, rel=0.1)


@pytest.mark.parametrize("bed", [False, True])
def test_text_on_stained_paper_has_its_line_pitch(bed: bool) -> None:
    # the stains' light patches are lighter than the paper under the text by more than the faint ink is dark:
    # the leading is judged against the paper nearby, not the page's lightest row (nor a white bed's)
    page = stained(text_page(1200, 1600, columns=3), tone=190, contrast=0.5, mottle=12)
    assert line_pitch(on_bed(page) if bed else page) == pytest.approx(LINE, rel=0.1)


def test_pictures_and_paper_have_no_line_pitch() -> None:
    assert line_pitch(blank_page()) is None
    assert line_pitch(engraving(800, 1100)) is None


def test_true_zoom_corrects_only_text_smaller_than_any_print() -> None:
    # 22 px at 72 dpi is 7.8 mm (a large book): as declared
    assert true_zoom(22.0, 1.0) == 1.0
    assert true_zoom(None, 1.0) == 1.0
    # 4 px at 72 dpi is 1.4 mm, smaller than agate: viewed as if the lines were ASSUMED_PITCH_MM apart
    zoom = true_zoom(4.0, 1.0)
    assert 4.0 * zoom / 72 * 25.4 == pytest.approx(ASSUMED_PITCH_MM)


def _decisions(tmp_path: Path, image, dpis: list[int]) -> list[bool]:
    judge = make_judge("structure")
    kept = []
    for dpi in dpis:
        path = pdf_from_images(tmp_path / f"page_{dpi}.pdf", [image], dpi=dpi)
        with pymupdf.open(path) as doc:
            kept.append(judge_page(doc[0], judge)[0].keep)
    return kept


def test_a_text_page_declared_at_a_quarter_of_its_size_is_still_text(tmp_path: Path) -> None:
    # the same scan as a 100 dpi page and wrapped at 200 and 400 dpi: at 400 dpi its lines are 1.4 mm apart,
    # which the judge's 72 dpi view of the declared page turns into a grey texture
    assert _decisions(tmp_path, text_page(1600, 2200, columns=4), [100, 200, 400]) == [False, False, False]


def test_a_picture_page_declared_small_is_still_kept(tmp_path: Path) -> None:
    assert _decisions(tmp_path, mixed_page(1600, 2200), [100, 400]) == [True, True]
