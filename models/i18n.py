"""The cattle scanner's words in the farmer's language: one JSON file per language in ``models/locales/``.

Why the server words everything rather than Gradio's ``gr.I18n``: Gradio translates only static component text in
the browser, picks the browser's language only among its own built-in ones (no Marathi, Bengali, Swahili), and has
no switch a page can offer; the verdicts and advice are written here anyway. So a language is one file
(``models/locales/<code>.json``, the same keys as ``en.json``; a value may be a list of lines), found at start-up:
adding Marathi is adding ``mr.json``. A key missing from a language falls back to English.

Messages made in English elsewhere (``models.classifier``'s photo that cannot be read, an unusable picture's reason,
written with :func:`text` from these same templates) reach the page as text, across the ZeroGPU process boundary, so
:func:`translate` recognises them by their English templates (``error.*``, ``reason.*``) and words them again in
another language.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

LOCALES = Path(__file__).with_name("locales")
ENGLISH = "en"
MESSAGE_KEYS = ("error.", "reason.")
"""Prefixes of the keys whose English text is a message made elsewhere, recognised by :func:`translate`."""


@functools.cache
def _table(lang: str) -> dict[str, str]:
    path = LOCALES / f"{lang}.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: "\n".join(value) if isinstance(value, list) else str(value) for key, value in data.items()}


@functools.cache
def languages() -> dict[str, str]:
    """Language code → its own name (``hi`` → ``हिन्दी``), English first: one entry per file in ``locales/``."""
    codes = sorted(p.stem for p in LOCALES.glob("*.json"))
    codes.sort(key=lambda code: code != ENGLISH)
    return {code: _table(code).get("language", code) for code in codes}


def keys(lang: str) -> set[str]:
    """The keys a language file defines (a test holds every file to English's)."""
    return set(_table(lang))


def text(key: str, lang: str = ENGLISH, **fields: object) -> str:
    """``key`` in ``lang`` (English where that language lacks it), its ``{fields}`` filled in."""
    template = _table(lang).get(key) if lang != ENGLISH else None
    template = template if template is not None else _table(ENGLISH)[key]
    return template.format(**fields) if fields else template


def pick(accept_language: str | None) -> str:
    """The language to start in, from the browser's ``Accept-Language`` header (``hi-IN,hi;q=0.9,en;q=0.8``):
    the most wanted one that has a file, by its full tag or its first part; English otherwise."""
    wanted = []
    for position, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:  # q=0: "not this one"
            wanted.append((-quality, position, tag.strip().lower()))
    known = {code.lower(): code for code in languages()}
    for _, _, tag in sorted(wanted):
        for candidate in (tag, tag.split("-")[0]):
            if candidate in known:
                return known[candidate]
    return ENGLISH


@functools.cache
def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    """Each message key's English template as a pattern whose named groups are its fields."""
    out = []
    for key, template in _table(ENGLISH).items():
        if key.startswith(MESSAGE_KEYS):
            parts = re.split(r"\{(\w+)\}", template)
            regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
            out.append((key, re.compile(regex, re.DOTALL)))
    return out


def translate(message: str, lang: str) -> str | None:
    """An English message made elsewhere (``models.classifier``'s errors and reasons) in ``lang``, or ``None``
    when it is not one of the known templates."""
    for key, pattern in _patterns():
        if match := pattern.fullmatch(message.strip()):
            fields = match.groupdict()
            if "reason" in fields:  # a decoder's own words stay as they are
                fields["reason"] = translate(fields["reason"], lang) or fields["reason"]
            return text(key, lang, **fields)
    return None
