import math

import pytest

from pipeline.judges import parse_threshold, threshold_of


@pytest.mark.parametrize(
    ("typed", "value"), [("", None), ("  ", None), (None, None), ("0.3", 0.3), (" 45 ", 45.0), (7, 7)]
)
def test_parse_threshold_empty_is_the_judges_own(typed: str | float | None, value: float | None) -> None:
    assert parse_threshold(typed) == value


@pytest.mark.parametrize("typed", ["high", "0,5", "nan", "inf"])
def test_parse_threshold_refuses_what_is_no_threshold(typed: str) -> None:
    with pytest.raises(ValueError, match=repr(typed).replace("'", ".")):
        parse_threshold(typed)


def test_threshold_of_is_the_judges_own_default_for_none() -> None:
    assert threshold_of("structure", parse_threshold("")) == 0.5
    assert threshold_of("sigma", parse_threshold("")) == 45.0
    assert math.isclose(threshold_of("sigma", parse_threshold("30.5")), 30.5)
