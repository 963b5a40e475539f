import numpy as np
import pytest
from factories import blank_page, engraving, text_page

from pipeline.judges import make_judge
from pipeline.judges.sigma import SigmaJudge


def test_sigma_is_the_grey_standard_deviation_of_an_rgb_view() -> None:
    rng = np.random.default_rng(1)
    view = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    luma = view @ np.array([0.299, 0.587, 0.114])
    verdict = SigmaJudge()(view)
    assert verdict.score == pytest.approx(luma.std(), abs=0.5)
    assert verdict.boxes == ()


@pytest.mark.parametrize(
    ("page", "kept"),
    [(blank_page(), False), (text_page(ink=0.05), False), (engraving(400, 300), True)],
    ids=["blank", "sparse-text", "engraving"],
)
def test_default_threshold_is_the_articles_45(page: np.ndarray, kept: bool) -> None:
    verdict = SigmaJudge()(page)
    assert verdict.keep is kept
    assert verdict.keep == (page.std() > 45)


def test_its_candidate_is_the_whole_page_kept_or_not_unless_the_page_is_flat() -> None:
    """σ judges whole pages: the report measures the kind of the whole page, kept or dropped."""
    assert SigmaJudge()(engraving(400, 300)).best == (0.0, 0.0, 1.0, 1.0)
    assert SigmaJudge()(text_page(ink=0.05)).best == (0.0, 0.0, 1.0, 1.0)
    assert SigmaJudge()(np.full((40, 30), 200, np.uint8)).best is None


def test_threshold_is_strict_and_configurable() -> None:
    page = np.zeros((10, 10), np.uint8)
    page[:, 5:] = 100  # σ = 50 exactly
    assert make_judge("sigma", threshold=50)(page).keep is False
    assert make_judge("sigma", threshold=49.9)(page).keep is True


def test_unknown_filter_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="sigma"):
        make_judge("nope")
