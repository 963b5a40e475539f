"""Text from outside (file names, MuPDF's messages) made safe to write, and output names that cannot collide.

A file name with bytes that are not UTF-8 reaches Python as lone surrogates, and so can a MuPDF warning:
written as they are, they stop the run while it writes ``manifest.csv``. Output names must also extract on
Linux, macOS and Windows: no path separators, control or reserved characters, no reserved device names,
no two names differing only by case, and short enough for any file system. They must not deceive either:
no bidirectional controls (``cow`` + U+202E + ``gpj.exe`` shows as ``cowexe.jpg``), and no leading ``=``, ``+``,
``-``, ``@`` (a formula in the spreadsheet that opens ``manifest.csv``, an option to a shell command).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_STEM_BYTES = 80
"""Longest output stem in UTF-8 bytes: page and region suffixes add at most ~20, far below 255-byte limits."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UNPORTABLE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]')
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Bidirectional controls: they reorder how a name is shown (Trojan Source), never what it means."""
_FORMULA_STARTS = ("=", "+", "-", "@")
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def safe_text(text: str) -> str:
    """``text`` with undecodable bytes (lone surrogates) and control characters replaced by U+FFFD.

    Tabs and line breaks stay (CSV quotes them); everything returned encodes as UTF-8.
    """
    if text.isascii() and not _CONTROL.search(text):
        return text
    try:  # bytes that were escaped on decoding: decode them again, bad ones as U+FFFD
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # other lone surrogates
        text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return _CONTROL.sub("\ufffd", text)


def one_line(text: str) -> str:
    """Outside text (a name from a zip, a library's message) made encodable and put on one line of a summary, a
    note or a manifest cell: its own line breaks and runs of white space become single spaces."""
    return " ".join(safe_text(text).split())


def portable_stem(stem: str) -> str:
    """A file-name stem every common file system and ``unzip`` accepts, shortened with a hash when long.

    Characters Windows forbids and control characters become ``_``; bidirectional controls and leading/trailing
    dots and spaces go; reserved device names (``CON``, ``LPT1``) and a leading formula character (``=``, ``+``,
    ``-``, ``@``) get a ``_`` prefix, so output names never need a quote in ``manifest.csv``; longer than
    :data:`MAX_STEM_BYTES` it keeps its start and gains 8 hex digits of the original's hash, so two long names
    stay apart.
    """
    name = _BIDI.sub("", unicodedata.normalize("NFC", safe_text(stem)))
    name = _UNPORTABLE.sub("_", name).strip(" .") or "pdf"
    if name.split(".")[0].lower() in _WINDOWS_RESERVED or name.startswith(_FORMULA_STARTS):
        name = "_" + name
    encoded = name.encode("utf-8")
    if len(encoded) > MAX_STEM_BYTES:
        digest = hashlib.sha256(stem.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        head = encoded[: MAX_STEM_BYTES - 9].decode("utf-8", "ignore").rstrip(" .")
        name = f"{head}-{digest}"
    return name


class StemRegistry:
    """Hands out output stems unique within a run, compared without case (macOS and Windows ignore it).

    The first file named ``x`` gets ``x``, later ones ``x~2``, ``x~3``…, skipping any stem already handed out,
    so ``c1/x.pdf``, ``c2/x.pdf`` and ``c3/x~2.pdf`` get three different stems.
    """

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def reserve(self, stem: str) -> str:
        base = portable_stem(stem)
        candidate, number = base, 1
        while candidate.casefold() in self._taken:
            number += 1
            candidate = f"{base}~{number}"
        self._taken.add(candidate.casefold())
        return candidate
