"""How verdicts are worded: as sure as the model is, with a notifiable disease's advice wherever one is suspected."""

from __future__ import annotations

import pytest

from models import advice, i18n, triage

LUMPY, FMD, CLEAR = "lumpy_skin", "fmd", "normal_skin"


def _case(verdict: str, lumpy: float, clear: float, fmd: float) -> triage.CaseVerdict:
    return triage.CaseVerdict(verdict, {LUMPY: lumpy, CLEAR: clear, FMD: fmd})


def test_an_alarm_near_its_threshold_is_worded_as_possible_and_a_sure_one_as_likely() -> None:
    near = advice.headline(_case(LUMPY, 0.501, 0.499, 0.0))
    assert near == "Possible lumpy skin disease (50%) — have a veterinarian confirm"
    assert advice.headline(_case(LUMPY, 0.93, 0.05, 0.02)).startswith("Likely lumpy skin disease (93%)")
    assert advice.headline(_case(FMD, 0.1, 0.1, 0.8)).startswith("Likely foot-and-mouth disease")
    assert advice.headline(_case(FMD, 0.0, 0.004, 0.996)).startswith("Likely foot-and-mouth disease (over 99%)")


def test_every_suspected_notifiable_disease_gets_its_advice() -> None:
    for verdict, disease in ((LUMPY, "Lumpy skin disease"), (FMD, "Foot-and-mouth disease")):
        text = advice.advice(_case(verdict, 0.5, 0.2, 0.3))
        assert f"**{disease} is a notifiable disease.**" in text
    leaning = _case(triage.INCONCLUSIVE, 0.1, 0.35, 0.55)  # inconclusive, but FMD is the most probable
    assert "foot-and-mouth disease not ruled out" in advice.headline(leaning)
    assert advice.NOTIFIABLE_ADVICE[FMD] in advice.advice(leaning) and advice.RETAKE_ADVICE in advice.advice(leaning)


def test_a_healthy_answer_says_what_to_watch_for_and_an_unsure_one_how_to_retake() -> None:
    assert "Watch the animal" in advice.advice(_case(CLEAR, 0.02, 0.97, 0.01))
    assert advice.headline(_case(CLEAR, 0.02, 0.97, 0.01)) == "No sign of disease seen (97%)"
    zebu = _case(triage.INCONCLUSIVE, 0.46, 0.54, 0.0)  # below the alarm, but not to be shrugged off
    assert advice.headline(zebu).startswith("Inconclusive, lumpy skin disease not ruled out")
    assert advice.NOTIFIABLE_ADVICE[LUMPY] in advice.advice(zebu)
    unsure = _case(triage.INCONCLUSIVE, 0.2, 0.7, 0.1)
    assert advice.headline(unsure) == "Inconclusive — retake the photos"
    assert advice.advice(unsure) == advice.RETAKE_ADVICE


def test_refused_pictures_say_why() -> None:
    photo = triage.PhotoVerdict(triage.UNUSABLE, {LUMPY: 0.9, CLEAR: 0.1, FMD: 0.0}, reason="it is 1×1 pixels")
    case = triage.CaseVerdict(triage.UNUSABLE, photo.probabilities, [photo])
    assert advice.headline(case) == "Photo cannot be used: it is 1×1 pixels"
    assert "notifiable" not in advice.advice(case)
    assert advice.headline(_case(triage.NOT_CATTLE, 0.9, 0.1, 0.0)) == "Not a cattle photo — no triage"


@pytest.mark.parametrize("why", ["reason.unlike_cattle", "reason.like_non_cattle"])
def test_a_photo_unlike_the_training_cattle_says_so_and_shows_no_number_that_contradicts_it(why: str) -> None:
    unlike = triage.PhotoVerdict(triage.NOT_CATTLE, {LUMPY: 0.9, CLEAR: 0.1, FMD: 0.0}, gate=0.1, reason=i18n.text(why))
    case = triage.CaseVerdict(triage.NOT_CATTLE, unlike.probabilities, [unlike])
    assert advice.headline(case) == "Not a cattle photo — no triage", "short: the chart's heading on a phone"
    assert advice.advice(case).startswith("The model did not judge it: " + i18n.text(why))
    assert advice.advice(case, "hi").startswith(
        i18n.text("advice.not_cattle_reason", "hi", reason=i18n.text(why, "hi"))
    )
    assert advice.numbers(unlike) == {}, "no 'cattle 90 %' beside 'not a cattle photo'"
    assert advice.sureness(case) is None and "notifiable" not in advice.advice(case)
    gated = triage.PhotoVerdict(triage.NOT_CATTLE, unlike.probabilities, gate=0.8)
    both = triage.CaseVerdict(triage.NOT_CATTLE, unlike.probabilities, [unlike, gated])
    assert advice.advice(both).startswith("The photo does not show cattle."), "the gate refused one: no reason"
    assert advice.numbers(gated) == {"cattle": pytest.approx(0.2)} and advice.sureness(both) is not None


def test_the_numbers_shown_never_read_as_certainty() -> None:
    sure = triage.PhotoVerdict(FMD, {LUMPY: 0.00004, CLEAR: 0.00001, FMD: 0.99995}, gate=0.0000002)
    assert advice.numbers(sure) == {"cattle": 0.99, "lumpy skin": 0.01, "no sign": 0.01, "FMD": 0.99}
    case = triage.CaseVerdict(FMD, sure.probabilities, [sure])
    assert advice.table_rows(case, ["mouth.jpg"])[1] == [
        ["mouth.jpg", "foot-and-mouth disease", "99%", "1%", "1%", "99%"]
    ]
    assert "over 99%" in advice.headline(case)


def test_a_number_shown_never_reaches_a_threshold_the_model_did_not() -> None:
    """Rounded down: no sign at 83.96 % against an 84 % threshold is *inconclusive* and must not read "84 %"; an
    alarm at 79.6 % is *possible* (below 80 %), and must not read "80 %"."""
    unsure = triage.PhotoVerdict(triage.INCONCLUSIVE, {LUMPY: 0.1504, CLEAR: 0.8396, FMD: 0.01}, gate=0.0049)
    assert advice.numbers(unsure) == {"cattle": 0.99, "lumpy skin": 0.15, "no sign": 0.83, "FMD": 0.01}
    case = triage.CaseVerdict(triage.INCONCLUSIVE, unsure.probabilities, [unsure])
    assert advice.table_rows(case, ["cow.jpg"])[1] == [["cow.jpg", "inconclusive", "99%", "15%", "83%", "1%"]]
    assert advice.headline(_case(LUMPY, 0.796, 0.2, 0.004)) == (
        "Possible lumpy skin disease (79%) — have a veterinarian confirm"
    )
    assert advice.whole_percent(0.57) == 0.57 and advice.whole_percent(0.2999) == 0.29


def test_long_photo_names_are_shortened_in_the_table_keeping_their_end() -> None:
    assert advice.shown_name("cow.jpg") == "cow.jpg"
    shown = advice.shown_name("IMG_20261203_141502.jpg")
    assert len(shown) == 16 and shown.startswith("IMG_202") and shown.endswith("1502.jpg") and "…" in shown
