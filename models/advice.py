"""What a verdict says to the person holding the phone: a headline worded as sure as the model is, and advice.

Plain functions of :mod:`models.triage`'s verdicts, so the Space (and any report) words a case the same way.
Why a module of its own: a notifiable-disease alarm is answered from a low probability on purpose (a missed case
spreads), so the flat name of the disease would overstate what the model knows. The headline therefore follows the
calibrated probability: *possible … — have a veterinarian confirm* below ``SURE``, *likely …* from it.
"""

from __future__ import annotations

from models.triage import INCONCLUSIVE, NOT_CATTLE, NOTIFIABLE, UNUSABLE, CaseVerdict, PhotoVerdict

SURE = 0.8
"""From this calibrated probability on, a disease is called *likely* rather than *possible*."""
NOT_RULED_OUT = 0.25
"""An *inconclusive* answer names a notifiable disease (and gives its advice) from this probability on: a healthy-
looking zebu at 46 % lumpy skin must not read as a plain "retake the photos"."""

NAMES = {
    "lumpy_skin": "lumpy skin disease",
    "fmd": "foot-and-mouth disease",
    "normal_skin": "no sign of disease",
    NOT_CATTLE: "not a cattle photo",
    INCONCLUSIVE: "inconclusive",
    UNUSABLE: "photo cannot be used",
}
"""Words for labels and verdicts; an unknown label (another model's) is shown as itself."""

NOTIFIABLE_ADVICE = {
    "lumpy_skin": (
        "**Lumpy skin disease is a notifiable disease.** Call a veterinarian or your veterinary authority today. "
        "Until then keep the animal apart from the herd, control flies and ticks, and do not move or sell animals."
    ),
    "fmd": (
        "**Foot-and-mouth disease is a notifiable disease.** Call a veterinarian or your veterinary authority today. "
        "Keep all animals on the farm, do not move or sell any, keep visitors and vehicles away, and wash boots, "
        "hands and tools after touching the animals."
    ),
}

HEALTHY_ADVICE = (
    "No sign of lumpy skin disease or foot-and-mouth disease was found on the photo; this cannot rule them out. "
    "Watch the animal for the next days: call a veterinarian if you see **round lumps in the skin**, fever, "
    "**drooling, blisters or sores in the mouth or on the feet**, lameness, or if it stops eating or gives less milk."
)

RETAKE_ADVICE = (
    "Take new photos in daylight: the affected skin filling the frame from about one metre, and a close-up; for the "
    "mouth or feet, the tongue, gums and the skin between the claws. If the animal looks unwell, call a veterinarian."
)

PHOTO_GUIDE = """**What to photograph** (up to 8 photos of one animal, in daylight, in focus):
- **Skin lumps**: the affected side of the animal from about one metre, then a close-up of the lumps filling the frame.
- **Mouth**: the open mouth — tongue, gums, the pad behind the lower teeth, the muzzle.
- **Feet and udder**: the skin between the claws, just above the hoof, and the teats.
- One animal per case; no filters, no screenshots."""


SHORT_NAMES = {
    "lumpy_skin": "lumpy skin",
    "fmd": "FMD",
    "normal_skin": "no sign",
}
"""Column and chart names for the numbers: short enough for a table on a phone."""


def short_name(label: str) -> str:
    """The short words for a label's probability."""
    return SHORT_NAMES.get(label, label.replace("_", " "))


def percent(p: float) -> str:
    """A probability for a headline: never 0 % or 100 %, which would read as certainty."""
    return "over 99%" if p > 0.99 else "under 1%" if p < 0.01 else f"{p:.0%}"


def name(label: str) -> str:
    """The words for a label or verdict."""
    return NAMES.get(label, label.replace("_", " "))


def headline(case: CaseVerdict | PhotoVerdict) -> str:
    """The verdict worded as sure as the model is (see the module docstring)."""
    verdict, probs = case.verdict, case.probabilities
    if verdict in NOTIFIABLE:
        p = probs.get(verdict, 0.0)
        if p >= SURE:
            return f"Likely {name(verdict)} ({percent(p)}) — call a veterinarian"
        return f"Possible {name(verdict)} ({percent(p)}) — have a veterinarian confirm"
    if verdict == INCONCLUSIVE:
        leaning = suspected(case)
        if leaning:
            return f"Inconclusive, {name(leaning)} not ruled out — have a veterinarian examine the animal"
        return "Inconclusive — retake the photos"
    if verdict == NOT_CATTLE:
        return "Not a cattle photo — no triage"
    if verdict == UNUSABLE:
        reason = getattr(case, "reason", None) or next(
            (p.reason for p in getattr(case, "photos", []) if p.reason), None
        )
        return f"Photo cannot be used: {reason}" if reason else "Photo cannot be used"
    p = probs.get(verdict, 0.0)
    return f"No sign of disease seen ({percent(p)})" if verdict == "normal_skin" else f"{name(verdict)} ({percent(p)})"


def suspected(case: CaseVerdict | PhotoVerdict) -> str | None:
    """The most probable notifiable disease of an answer, if it reaches ``NOT_RULED_OUT``, else ``None``."""
    diseases = {k: v for k, v in case.probabilities.items() if k in NOTIFIABLE and v >= NOT_RULED_OUT}
    return max(diseases, key=diseases.get) if diseases else None


def advice(case: CaseVerdict | PhotoVerdict) -> str:
    """What to do now: a notifiable disease's advice (also when an inconclusive answer leans to one), what to
    watch for after a healthy answer, how to retake the photos otherwise."""
    verdict = case.verdict
    if verdict in NOTIFIABLE_ADVICE:
        return NOTIFIABLE_ADVICE[verdict]
    if verdict == INCONCLUSIVE:
        leaning = suspected(case)
        return "\n\n".join([NOTIFIABLE_ADVICE[leaning], RETAKE_ADVICE] if leaning else [RETAKE_ADVICE])
    if verdict == "normal_skin":
        return HEALTHY_ADVICE
    if verdict == NOT_CATTLE:
        return "The photo does not show cattle. " + RETAKE_ADVICE
    if verdict == UNUSABLE:
        return RETAKE_ADVICE
    return ""
