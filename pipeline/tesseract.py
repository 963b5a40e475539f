"""Tesseract kept loaded: one engine per worker process and language set, initialised once, reused band after band.

Through tesserocr (Tesseract's C++ API; its PyPI wheels carry the library), a band costs its recognition only. A
program per band (pytesseract, before) started Tesseract and loaded five language packs each time: 0.37 s and up
to 116 MB a call, 69-73 % of a worker's time. The packs are the system's (Debian's ``tesseract-ocr-*``,
packages.txt), found by :func:`tessdata`. A crash inside Tesseract takes its worker with it: the run's engine
retries that task without OCR (:mod:`pipeline.distributor`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SYSTEM_TESSDATA = (
    "/usr/share/tesseract-ocr/5/tessdata",  # Debian, Ubuntu (tesseract-ocr-eng …)
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",  # Fedora, Arch
    "/usr/local/share/tessdata",  # built from source, Homebrew on Intel
    "/opt/homebrew/share/tessdata",  # Homebrew on Apple silicon
    "C:/Program Files/Tesseract-OCR/tessdata",  # the UB Mannheim installer
)
"""Where systems install Tesseract's language packs, looked in when ``$TESSDATA_PREFIX`` is not set."""
ENGINES_KEPT = 2
"""Engines a process keeps loaded (~60 MB for the default five packs): the full set and a page's own."""


@dataclass(frozen=True)
class Word:
    """One word as Tesseract read it."""

    text: str
    confidence: float
    """0-100."""
    width: int
    height: int
    line_end: bool
    """The last word of its line."""
    lang: str
    """The pack that read it."""


def tessdata() -> Path | None:
    """The folder of language packs Tesseract reads with: ``$TESSDATA_PREFIX`` when set (alone: a user who set it
    meant it), else the first of :data:`SYSTEM_TESSDATA` that holds packs; ``None`` when there is none."""
    return _tessdata(os.environ.get("TESSDATA_PREFIX"))


@cache
def _tessdata(prefix: str | None) -> Path | None:
    candidates = [Path(prefix), Path(prefix) / "tessdata"] if prefix is not None else map(Path, SYSTEM_TESSDATA)
    return next((folder for folder in candidates if any(folder.glob("*.traineddata"))), None)


def packs() -> frozenset[str]:
    """The language packs installed (none without a :func:`tessdata` folder)."""
    return _packs(tessdata())


@cache
def _packs(folder: Path | None) -> frozenset[str]:
    return frozenset(path.stem for path in folder.glob("*.traineddata")) if folder else frozenset()


def unavailable(lang: str) -> str:
    """Why Tesseract cannot read ``lang`` (packs joined by ``+``) here; empty when it can. Asked once per process
    for each language argument and ``$TESSDATA_PREFIX``: a worker asks it for every picture it reads words of."""
    return _unavailable(lang, os.environ.get("TESSDATA_PREFIX"))


@cache
def _unavailable(lang: str, prefix: str | None) -> str:
    try:
        import tesserocr  # noqa: F401 - only whether it is there
    except ImportError as exc:
        return f"tesserocr is not installed or does not load (pip install tesserocr; {exc})"
    folder = _tessdata(prefix)
    if folder is None:
        return (
            f"no Tesseract language packs in $TESSDATA_PREFIX={prefix!r}"
            if prefix is not None
            else "no Tesseract language packs found (apt-get install tesseract-ocr-eng, brew install tesseract-lang; "
            "or set $TESSDATA_PREFIX to their folder)"
        )
    have = _packs(folder)
    missing = [name for name in lang.split("+") if name not in have]
    if missing:
        apt = " ".join(f"tesseract-ocr-{name.lower()}" for name in missing if "/" not in name)
        return (
            f"Tesseract has no language pack for {'+'.join(missing)} in {folder} (apt-get install "
            f"{apt or 'the script packs'}; installed: {'+'.join(sorted(have - {'osd'})) or 'none'}; --ocr-lang chooses)"
        )
    return ""


class EngineFailed(Exception):
    """Tesseract could not start for these packs or failed on a band."""


class Engine:
    """Tesseract initialised for one language set (its first pack the main one), reading grey bands."""

    def __init__(self, lang: str) -> None:
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # one thread per band: the run's workers are its parallelism
        import tesserocr

        _quiet_leptonica(Path(tesserocr.__file__).parent)
        folder = tessdata()
        try:
            self._api = tesserocr.PyTessBaseAPI(path=f"{folder}{os.sep}", lang=lang, psm=tesserocr.PSM.AUTO)
        except RuntimeError as exc:
            raise EngineFailed(f"Tesseract does not start with {lang} from {folder}: {exc}") from None
        self.lang = lang

    def read(self, pixels: np.ndarray) -> list[Word]:
        """The words in ``pixels`` (``HxW`` uint8), in Tesseract's reading order."""
        import numpy as np

        band = np.ascontiguousarray(pixels)
        height, width = band.shape[:2]
        try:
            self._api.SetImageBytes(band.tobytes(), width, height, 1, width)
            self._api.Recognize()
            found = list(self._words())
        except RuntimeError as exc:
            raise EngineFailed(f"Tesseract failed on a {width}×{height} band: {exc}") from None
        finally:
            self._api.Clear()
        return found

    def _words(self) -> Iterator[Word]:
        import tesserocr

        level, line = tesserocr.RIL.WORD, tesserocr.RIL.TEXTLINE
        for word in tesserocr.iterate_level(self._api.GetIterator(), level):
            box = word.BoundingBox(level)
            if word.Empty(level) or box is None:
                continue
            x0, y0, x1, y1 = box
            text, confidence = word.GetUTF8Text(level), word.Confidence(level)
            lang = word.WordRecognitionLanguage() or self.lang.split("+")[0]
            yield Word(text, confidence, x1 - x0, y1 - y0, word.IsAtFinalElement(line, level), lang)

    def close(self) -> None:
        """Free the packs (~60 MB for the default five)."""
        self._api.End()


LEPTONICA_SILENT = 6
"""Leptonica's ``L_SEVERITY_NONE``: its messages off."""


@cache
def _quiet_leptonica(package: Path) -> None:
    """Leptonica (Tesseract's image library) prints its own errors to stderr, a few lines a band for what it meets
    in an engraving's hatching (``Error in pixScanForForeground: invalid box``) and for nothing the run must act on;
    the subprocess that ran Tesseract before kept them out of the user's terminal. Off, in the library that
    tesserocr loaded (its wheel's copy, or the system's)."""
    import ctypes
    import ctypes.util

    bundled = [str(path) for path in (package.parent / f"{package.name}.libs").glob("libleptonica*.so*")]
    for name in bundled or [ctypes.util.find_library("leptonica") or ctypes.util.find_library("lept")]:
        try:
            ctypes.CDLL(name).setMsgSeverity(LEPTONICA_SILENT)
        except (OSError, AttributeError, TypeError):  # TypeError: no library found at all
            continue
        return


_engines: dict[str, Engine] = {}


def engine(lang: str) -> Engine:
    """This process's engine for ``lang``, started on first use; at most :data:`ENGINES_KEPT` stay loaded (the one
    used longest ago is closed)."""
    if lang in _engines:
        _engines[lang] = _engines.pop(lang)  # the most recently used last
        return _engines[lang]
    while len(_engines) >= ENGINES_KEPT:
        _engines.pop(next(iter(_engines))).close()
    _engines[lang] = Engine(lang)
    return _engines[lang]
