"""Which animal the photos show. The scanner judges cattle and buffalo; for the other animals of a smallholding it
gives no cattle verdict, but that species' notifiable signs to look for and whom to call.

Why the visitor says it rather than the model alone: goats, sheep and pigs live beside the cattle where lumpy skin
disease and foot-and-mouth disease spread, FMD is a disease of all of them, and close-ups of diseased goats passed the
cattle gate 23 times in 31 on photos of collections it never saw (a goat's lesion got a cattle verdict). The person
holding the phone knows the animal; the gate stays the second check (cattle chosen, a goat's photo is still turned
away as not cattle when the gate sees it).
"""

from __future__ import annotations

from models.i18n import ENGLISH, text
from models.triage import CaseVerdict, PhotoVerdict

CATTLE = "cattle"
"""Cattle or buffalo: the animals the model was trained on, the default (calls without an animal mean these)."""
ANIMALS = (CATTLE, "goat_sheep", "pig", "other")
"""The choices, in the order the page offers them."""
OTHER_ANIMAL = "other_animal"
"""The verdict of a case of an animal the scanner was not made for: no model ran, no cattle verdict given."""

_WORDS = {
    CATTLE: ("cattle", "cow", "cows", "bull", "ox", "calf", "buffalo", "zebu", "cattle_or_buffalo"),
    "goat_sheep": ("goat_sheep", "goat", "goats", "sheep", "lamb", "kid"),
    "pig": ("pig", "pigs", "swine", "hog", "piglet"),
    "other": ("other", "other_animal", "horse", "donkey", "dog", "camel"),
}
ALIASES = {word: animal for animal, words in _WORDS.items() for word in words}
"""What a program may send as ``animal`` (``goat``, ``sheep``, ``buffalo``…): the choice it names."""


def animal_of(value: str | None) -> str:
    """The choice a page's or a program's ``animal`` names (case and spaces ignored; empty: cattle, as old calls
    without one mean); an unknown word is a ``ValueError`` naming the choices."""
    key = "_".join((value or "").strip().lower().replace("-", " ").split()) or CATTLE
    if key not in ALIASES:
        raise ValueError(text("error.animal", animal=value, choices=", ".join(ANIMALS)))
    return ALIASES[key]


def covered(animal: str) -> bool:
    """Whether the model judges photos of this animal (only cattle and buffalo)."""
    return animal == CATTLE


def choices(lang: str = ENGLISH) -> list[tuple[str, str]]:
    """The page's choices as (words in ``lang``, value)."""
    return [(text(f"animal.{animal}", lang), animal) for animal in ANIMALS]


def uncovered_case(animal: str, photos: int) -> CaseVerdict:
    """The answer for photos of an animal the scanner was not made for: no verdict of the model, for the case and for
    each photo (the photos were opened, so a file that is no photo is still said to be one)."""
    return CaseVerdict(OTHER_ANIMAL, {}, [PhotoVerdict(OTHER_ANIMAL, {}) for _ in range(photos)], animal=animal)
