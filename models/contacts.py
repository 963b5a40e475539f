"""Whom to call about a notifiable disease: helplines and veterinary authorities per region, set by the Space's owner.

"Report it to your veterinary authority" without a number is advice nobody can act on, and numbers differ by
country and state and change, so they are configuration, never code: ``CONTACTS`` names a JSON or YAML file
(default: ``contacts.json``, ``contacts.yaml`` or ``contacts.yml`` beside ``app.py``, if there is one)::

    {"Maharashtra": [{"name": "Animal husbandry helpline", "phone": "<its number>"},
                     {"name": {"en": "District veterinary officer", "hi": "ज़िला पशु चिकित्सा अधिकारी"},
                      "phone": "<its number>", "note": "weekdays 10-17"}],
     "Kenya": [...]}

Region → contacts, in the file's order; ``name`` and ``note`` are text or one text per language code. Without a
file the page says how to find the local authority instead. A file that cannot be read is logged and ignored: the
scanner keeps working and gives that generic advice.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from models.i18n import ENGLISH, text

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = ("contacts.json", "contacts.yaml", "contacts.yml")
FEW = 3
"""Up to this many regions, all are shown until the visitor picks one; beyond, the page asks for the region."""

log = logging.getLogger(__name__)


class ContactsError(ValueError):
    """The contacts file is missing, unreadable or not region → list of {name, phone}: one sentence saying which."""


@dataclass(frozen=True)
class Contact:
    """One helpline or authority: its name and note in one or several languages, and its number as written."""

    name: Mapping[str, str]
    phone: str
    note: Mapping[str, str]

    def name_in(self, lang: str) -> str:
        """The name in ``lang``, else English, else the first given."""
        return _in(self.name, lang)

    def note_in(self, lang: str) -> str:
        return _in(self.note, lang) if self.note else ""

    @property
    def tel(self) -> str:
        """The number for a ``tel:`` link: digits and a leading ``+`` only."""
        return re.sub(r"(?!^\+)[^\d]", "", self.phone.strip())


Contacts = dict[str, list[Contact]]


def _in(texts: Mapping[str, str], lang: str) -> str:
    return texts.get(lang) or texts.get(ENGLISH) or next(iter(texts.values()))


def _texts(value: object, where: str) -> dict[str, str]:
    if isinstance(value, str) and value.strip():
        return {ENGLISH: value.strip()}
    if isinstance(value, Mapping) and value and all(isinstance(v, str) and v.strip() for v in value.values()):
        return {str(k): v.strip() for k, v in value.items()}
    raise ContactsError(f"{where} must be text, or one text per language code ({{'en': ..., 'hi': ...}})")


def load(path: str | os.PathLike[str]) -> Contacts:
    """Read a contacts file (JSON, or YAML for ``.yaml``/``.yml``); raises :class:`ContactsError`."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8-sig")  # a BOM, as Windows editors save, is no error
        # YAML read as text only: its numbers would change a phone number (+254722000000 lost its +, 02224567 read
        # as octal became 600439, 1962:45 as base 60 became 117765)
        data = yaml.load(raw, Loader=yaml.BaseLoader) if path.suffix.lower() in (".yaml", ".yml") else json.loads(raw)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, yaml.YAMLError) as exc:
        raise ContactsError(f"contacts file {path} cannot be read: {exc}") from None
    if not isinstance(data, Mapping):
        raise ContactsError(f"contacts file {path} must map each region to a list of contacts")
    contacts: Contacts = {}
    for region, entries in data.items():
        if not isinstance(entries, list) or not entries:
            raise ContactsError(f"{path}: region {region!r} must have a list of contacts")
        contacts[str(region)] = []
        for i, entry in enumerate(entries, 1):
            where = f"{path}: {region} contact {i}"
            if not isinstance(entry, Mapping) or not re.search(r"\d", str(entry.get("phone", ""))):
                raise ContactsError(f"{where} needs a name and a phone number")
            if not isinstance(entry["phone"], str):  # a JSON number: a + or a leading 0 would be gone
                raise ContactsError(f'{where}\'s phone must be text, in quotes ("+254 722 000000")')
            name = _texts(entry.get("name"), f"{where}'s name")
            note = _texts(entry["note"], f"{where}'s note") if entry.get("note") else {}
            contacts[str(region)].append(Contact(name, str(entry["phone"]).strip(), note))
    return contacts


def from_env() -> Contacts:
    """The owner's contacts: ``CONTACTS``, else a default file beside ``app.py``; none (``{}``) without one, or
    when the file is broken (logged: the scanner still answers, with the generic advice)."""
    configured = os.environ.get("CONTACTS", "").strip()
    candidates = [Path(configured)] if configured else [ROOT / name for name in DEFAULT_FILES]
    for path in candidates:
        if configured or path.is_file():
            try:
                return load(path)
            except ContactsError as exc:
                log.error("%s; the page gives the generic advice instead", exc)
                return {}
    return {}


def shown(contacts: Contacts, region: str | None) -> Contacts:
    """The regions to show: the one picked, else all of them when there are few (``FEW``), else none."""
    if region in contacts:
        return {region: contacts[region]}
    return dict(contacts) if len(contacts) <= FEW else {}


def markdown(contacts: Contacts, region: str | None, lang: str = ENGLISH) -> str:
    """Whom to call, for the page: each shown region's contacts with a tap-to-call number, or how to find the
    veterinary authority (and, with many regions, to pick one first)."""
    lines = [text("contacts.title", lang)]
    regions = shown(contacts, region)
    if not regions:
        if contacts:
            lines.append(text("contacts.pick", lang))
        lines.append(text("contacts.none", lang))
        return "\n\n".join(lines)
    for name, entries in regions.items():
        if len(regions) > 1:
            lines.append(f"*{name}*")
        lines.append(
            "\n".join(
                f"- {c.name_in(lang)}: [{c.phone}](tel:{c.tel})" + (f" ({c.note_in(lang)})" if c.note else "")
                for c in entries
            )
        )
    return "\n\n".join(lines)
