"""What a verdict says to the person holding the phone: a headline worded as sure as the model is, and advice.

Plain functions of :mod:`models.triage`'s verdicts, so the Space and the case report (``models.report``) word a
case the same way, in any language of ``models/locales/`` (``lang``, English by default: ``/classify``'s words).
Why a module of its own: a notifiable-disease alarm is answered from a low probability on purpose (a missed case
spreads), so the flat name of the disease would overstate what the model knows. The headline therefore follows the
calibrated probability: *possible … — have a veterinarian confirm* below ``SURE``, *likely …* from it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from models.animals import CATTLE, OTHER_ANIMAL
from models.i18n import ENGLISH, text, translate
from models.triage import INCONCLUSIVE, NOT_CATTLE, NOTIFIABLE, UNUSABLE, CaseVerdict, PhotoVerdict

SURE = 0.8
"""From this calibrated probability on, a disease is called *likely* rather than *possible*."""
VERY_SURE = 0.95
"""From this probability on, the case report says the model is *very sure*."""
NOT_RULED_OUT = 0.25
"""An *inconclusive* answer names a notifiable disease (and gives its advice) from this probability on: a healthy-
looking zebu at 46 % lumpy skin must not read as a plain "retake the photos"."""

VERDICTS = ("lumpy_skin", "fmd", "normal_skin", NOT_CATTLE, INCONCLUSIVE, UNUSABLE, OTHER_ANIMAL)
NOTIFIABLE_ADVICE = {label: text(f"advice.{label}") for label in NOTIFIABLE}
RETAKE_ADVICE = text("advice.retake")
PHOTO_GUIDE = text("guide.body")
SHORT_NAMED = ("lumpy_skin", "fmd", "normal_skin", "cattle")
"""Labels with short words (``short.*``) for the numbers' columns and chart: short enough for a table on a phone."""


def short_name(label: str, lang: str = ENGLISH) -> str:
    """The short words for a label's probability (``cattle``: the photo shows cattle)."""
    return text(f"short.{label}", lang) if label in SHORT_NAMED else label.replace("_", " ")


def whole_percent(p: float) -> float:
    """``p`` rounded down to a whole percent: a number shown never reaches a threshold the model did not (no sign at
    83.96 % reads 83 %, not the 84 % that answers it; a possible disease at 79.6 % reads 79 %, not the 80 % of
    *likely*)."""
    return math.floor(p * 100 + 1e-9) / 100


def percent(p: float, lang: str = ENGLISH) -> str:
    """A probability for a headline, rounded down (``whole_percent``): never 0 % or 100 %, which would read as
    certainty."""
    if p > 0.99:
        return text("percent.over", lang)
    return text("percent.under", lang) if p < 0.01 else text("percent", lang, value=f"{whole_percent(p) * 100:.0f}")


def name(label: str, lang: str = ENGLISH) -> str:
    """The words for a label or verdict."""
    return text(f"name.{label}", lang) if label in VERDICTS else label.replace("_", " ")


def headline(case: CaseVerdict | PhotoVerdict, lang: str = ENGLISH) -> str:
    """The verdict worded as sure as the model is (see the module docstring)."""
    verdict, probs = case.verdict, case.probabilities
    if verdict == OTHER_ANIMAL:
        return text(f"headline.animal.{_animal(case)}", lang)
    if verdict in NOTIFIABLE:
        p = probs.get(verdict, 0.0)
        key = "headline.likely" if p >= SURE else "headline.possible"
        return text(key, lang, disease=name(verdict, lang), p=percent(p, lang))
    if verdict == INCONCLUSIVE:
        leaning = suspected(case)
        if leaning:
            return text("headline.leaning", lang, disease=name(leaning, lang))
        return text("headline.inconclusive", lang)
    if verdict == NOT_CATTLE:
        return text("headline.not_cattle", lang)
    if verdict == UNUSABLE:
        reason = _reason(case)
        if not reason:
            return text("headline.unusable", lang)
        return text("headline.unusable_reason", lang, reason=translate(reason, lang) or reason)
    p = probs.get(verdict, 0.0)
    if verdict == "normal_skin":
        return text("headline.healthy", lang, p=percent(p, lang))
    return text("headline.other", lang, name=name(verdict, lang), p=percent(p, lang))


def _reason(case: CaseVerdict | PhotoVerdict) -> str | None:
    """Why a refused answer was refused (a photo's own reason, or for a case the first of its photos refused the
    same way that has one): for a ``not_cattle`` answer, only when every such photo was turned away as unlike the
    training cattle, since the gate's own refusals have no reason to give."""
    photos = getattr(case, "photos", None) or [case]
    refused = [p for p in photos if p.verdict == case.verdict]
    reasons = [getattr(p, "reason", None) for p in refused]
    if case.verdict == NOT_CATTLE and not all(reasons):
        return None
    return getattr(case, "reason", None) or next((r for r in reasons if r), None)


def suspected(case: CaseVerdict | PhotoVerdict) -> str | None:
    """The most probable notifiable disease of an answer, if it reaches ``NOT_RULED_OUT``, else ``None``."""
    diseases = {k: v for k, v in case.probabilities.items() if k in NOTIFIABLE and v >= NOT_RULED_OUT}
    return max(diseases, key=diseases.get) if diseases else None


def _animal(case: CaseVerdict | PhotoVerdict) -> str:
    """The animal of an answer (a photo's own answer: cattle unless its case says otherwise)."""
    return getattr(case, "animal", CATTLE)


def calls_vet(case: CaseVerdict | PhotoVerdict) -> bool:
    """Whether the page and the report show whom to call: a notifiable disease suspected (:func:`to_report`), or an
    animal the scanner was not made for, whose notifiable signs the advice lists."""
    return case.verdict == OTHER_ANIMAL or to_report(case) is not None


def to_report(case: CaseVerdict | PhotoVerdict) -> str | None:
    """The notifiable disease this answer asks to report (its verdict, or the one an inconclusive answer leans
    to), else ``None``: when the page shows whom to call."""
    if case.verdict in NOTIFIABLE:
        return case.verdict
    return suspected(case) if case.verdict == INCONCLUSIVE else None


def advice(case: CaseVerdict | PhotoVerdict, lang: str = ENGLISH) -> str:
    """What to do now: a notifiable disease's advice (also when an inconclusive answer leans to one), what to
    watch for after a healthy answer, how to retake the photos otherwise."""
    verdict = case.verdict
    retake = text("advice.retake", lang)
    if verdict == OTHER_ANIMAL:
        return text(f"advice.animal.{_animal(case)}", lang)
    if verdict in NOTIFIABLE:
        return text(f"advice.{verdict}", lang)
    if verdict == INCONCLUSIVE:
        leaning = suspected(case)
        return "\n\n".join([text(f"advice.{leaning}", lang), retake] if leaning else [retake])
    if verdict == "normal_skin":
        return text("advice.healthy", lang)
    if verdict == NOT_CATTLE:  # turned away as unlike the training cattle: the model does not know what it shows
        reason = _reason(case)
        said = text("advice.not_cattle_reason", lang, reason=translate(reason, lang) or reason) if reason else None
        return (said or text("advice.not_cattle", lang)) + " " + retake
    if verdict == UNUSABLE:
        return retake
    return ""


def sureness(case: CaseVerdict | PhotoVerdict, lang: str = ENGLISH) -> str | None:
    """How sure the model is, in words (the case report's line for people who do not read percentages), or
    ``None`` for a picture that was not judged."""
    verdict = case.verdict
    if verdict in (UNUSABLE, OTHER_ANIMAL):
        return None
    if verdict == INCONCLUSIVE:
        return text("sure.unsure", lang)
    if verdict == NOT_CATTLE:  # how sure that no photo shows cattle: the least sure photo's gate
        photos = getattr(case, "photos", None) or [case]
        gates = [p.gate for p in photos if p.verdict == NOT_CATTLE and p.gate is not None and p.reason is None]
        if not gates:  # turned away as unlike the training cattle: no probability to word
            return None
        p = min(gates)
    else:
        p = case.probabilities.get(verdict, 0.0)
    key = "sure.very" if p >= VERY_SURE else "sure.fairly" if p >= SURE else "sure.not"
    return text(key, lang)


SHOWN_RANGE = (0.01, 0.99)
"""The chart, table and report show a probability between 1 % and 99 % (``percent``'s words in numbers)."""


def numbers(photo: PhotoVerdict, lang: str = ENGLISH) -> dict[str, float]:
    """One photo's numbers, the same in the chart, the table and the report: P(cattle photo) and, for a photo
    answered as cattle, its calibrated triage probabilities (a photo turned away has none to show). A picture
    refused with a reason (unusable, or unlike the training cattle) has no number at all: the gate's probability
    did not decide it, and "cattle 90 %" beside "not a cattle photo" would contradict the answer. Each number is
    held within ``SHOWN_RANGE``: a chart at 100 % or 0 % reads as a certainty the model does not have (the
    headline says "over 99 %"), and rounded down to a whole percent, as the headline's (``whole_percent``)."""
    out = {} if photo.gate is None or photo.reason else {short_name("cattle", lang): 1 - photo.gate}
    if photo.verdict not in (NOT_CATTLE, UNUSABLE):
        out |= {short_name(k, lang): v for k, v in photo.probabilities.items()}
    low, high = SHOWN_RANGE
    return {k: min(max(whole_percent(v), low), high) for k, v in out.items()}


def table_rows(case: CaseVerdict, names: Sequence[str], lang: str = ENGLISH) -> tuple[list[str], list[list[str]]]:
    """The per-photo table's header and rows (each photo's name, answer and numbers; ``—`` where a photo has
    none): the page's Markdown table and the case report's HTML one."""
    shown = [numbers(p, lang) for p in case.photos]
    columns = list(dict.fromkeys(k for n in shown for k in n))
    rows = [
        [photo_name, name(photo.verdict, lang), *(f"{row[c]:.0%}" if c in row else "—" for c in columns)]
        for photo_name, photo, row in zip(names, case.photos, shown, strict=True)
    ]
    return [text("table.photo", lang), text("table.answer", lang), *columns], rows


def table(case: CaseVerdict, names: Sequence[str], lang: str = ENGLISH) -> str:
    """The per-photo table (Markdown), photo names shortened for a phone (:func:`shown_name`)."""
    header, rows = table_rows(case, [shown_name(n) for n in names], lang)
    lines = [f"| {' | '.join(header)} |", f"|---|---|{'---|' * (len(header) - 2)}"]
    return "\n".join([*lines, *(f"| {' | '.join(row)} |" for row in rows)])


def shown_name(photo_name: str, limit: int = 16) -> str:
    """A photo's file name short enough for the table's first column on a phone: a camera's long names
    (``IMG_20261203_141502.jpg``) otherwise wrap letter by letter; the end, with the extension, is kept."""
    return photo_name if len(photo_name) <= limit else f"{photo_name[: limit - 9]}…{photo_name[-8:]}"
