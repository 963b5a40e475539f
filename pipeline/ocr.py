"""The words printed in and around a picture on a page without a text layer, read by Tesseract.

Book scans and many archive PDFs carry no OCR layer, yet their plates' legends are on the page, in the pixels:
without them ``{words}`` is empty and a caption says nothing of what the picture shows. Where the text layer
has no words in the band around a picture (:data:`pipeline.words.MARGIN_MM` above and below it, and the
picture itself: a cartoon's labels, a plate's legend inside its frame), that band is rendered at
:data:`OCR_DPI` from the page (from its scan; a coarser scan is interpolated up, as Tesseract reads small type
better so and misreads hatching less) and read by Debian's ``tesseract-ocr`` through pytesseract. Words
Tesseract is unsure of, and boxes too narrow for their letters (hatching read as ``WW``), are dropped, the
rest cleaned like the text layer's (:func:`pipeline.words.clean_words`).

Tesseract runs as a subprocess per band (one thread each: the run's parallelism is its worker processes), so a
crash costs one page's words, never the worker. pytesseract hands it the band and reads its answer through
temporary files: they go to a run folder of the worker's own (:func:`pipeline.fetch.make_run_folder`), removed
when the worker exits, and swept by the next run's workers after a ``kill -9``. Without Tesseract the run goes on
without OCR; without some packs of the default set it reads with the others (a set named with ``--ocr-lang`` is
read whole or not at all): :func:`ocr_note` says so once, in the main process; workers find the same and read
with what is there, or nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import unicodedata
from collections.abc import Iterator, Sequence
from functools import cache
from multiprocessing.util import Finalize
from pathlib import Path
from typing import TYPE_CHECKING

import pipeline.words
from pipeline.judges import Box
from pipeline.names import one_line
from pipeline.words import MARGIN_MM, clean_words

if TYPE_CHECKING:
    import numpy as np
    import pymupdf

    from pipeline.captions import CaptionTemplate
    from pipeline.scan import Scan

DEFAULT_LANG = "eng+rus+fra+deu+frk"
"""Tesseract's language packs the archive's scripts need: English, Russian (Cyrillic), French, German in Antiqua
and in Fraktur (``frk``: German books before ~1940 are mostly set in it)."""
OCR_DPI = 300
"""Tesseract's best resolution for body and legend type (8-12 pt: x-heights of 20-30 px)."""
MIN_CONFIDENCE = 60
"""Words Tesseract gives less confidence (0-100) are dropped: what it reads into hatching scores lower."""
MIN_ASPECT = 0.25
"""A word's box is at least this wide per letter for its height (type's letters are 0.3-1 as wide as the line
is tall): strokes of hatching read as ``WW`` or ``NUN`` are tall and thin, and Tesseract can be sure of them."""
GAP_MM = 10.0
"""White set between a picture and the strips above and below it before Tesseract reads them (:func:`_apart`)."""
MAX_PIXELS = 16_000_000
"""Largest band Tesseract is given: a whole newspaper page at 300 dpi is ~30 MP, and minutes of work."""
STRIP_PIXELS = 1_000_000
"""A whole page (no picture boxes) is read top down in strips of about this many pixels, until a caption's
:data:`pipeline.words.MAX_WORDS` are found: a strip of dense type takes Tesseract seconds, a whole page minutes."""
COMMAND = os.environ.get("TESSERACT_CMD") or "tesseract"
"""The Tesseract program: a name on ``PATH`` or a path, ``$TESSERACT_CMD`` where set (Windows installs it off
the ``PATH``)."""
LANG_FORMAT = re.compile(r"[A-Za-z0-9_/-]+(\+[A-Za-z0-9_/-]+)*")
"""Tesseract's language argument: pack names joined by ``+`` (``eng+deu``, ``script/Fraktur``)."""


class OcrFailed(Exception):
    """Tesseract ran but failed on this band; the page keeps no OCR words, and says why in its warning."""


def ocr_note(template: CaptionTemplate, ocr: bool, lang: str) -> str:
    """One line for the user when the run's captions (``template``) want OCR (``ocr``, in ``lang``: the options'
    ``ocr`` and ``ocr_lang``) but it cannot run as asked (no Tesseract, a language pack missing), empty otherwise;
    say it once per run: the run goes on, with the installed packs of the default set (:func:`reading_lang`) or
    without OCR."""
    if not ocr or "words" not in template.fields:
        return ""
    read, why = reading_lang(lang)
    if not why:
        return ""
    if read is None:
        return f"note: no OCR: {why}; pages without a text layer get no {{words}} (--no-ocr hides this note)"
    return f"note: OCR reads {read} only: {why}"


def reading_lang(lang: str) -> tuple[str | None, str]:
    """The packs Tesseract reads ``lang`` with here (``None``: no OCR) and why it is not ``lang`` itself (``""``
    when it is). The default set is read with those of its packs that are installed: a user with English, French
    and German installed gets their words, not an OCR turned off for a missing Cyrillic pack. A set asked for with
    ``--ocr-lang`` is read whole or not at all: a page read without a pack the user named would be read wrong."""
    why = unavailable(lang)
    if not why:
        return lang, ""
    if lang == DEFAULT_LANG:
        kept = "+".join(name for name in lang.split("+") if name in _packs(COMMAND))
        if kept and not unavailable(kept):
            return kept, why
    return None, why


def unavailable(lang: str) -> str:
    """Why Tesseract cannot read ``lang`` here (empty when it can)."""
    return _unavailable(COMMAND, lang)


@cache
def _unavailable(command: str, lang: str) -> str:
    """:func:`unavailable` for one program and language argument, asked once per process."""
    try:
        import pytesseract  # noqa: F401 - only whether it is there
    except ImportError:
        return "pytesseract is not installed (pip install pytesseract)"
    program = shutil.which(command)
    if program is None:
        return (
            f"Tesseract is not installed ({command!r} not found; apt-get install tesseract-ocr, brew install tesseract)"
        )
    try:
        have = _listed(program)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Tesseract does not run ({type(exc).__name__}: {exc})"
    version = _unusable_version(program)
    if version:
        return version
    missing = [name for name in lang.split("+") if name not in have]
    if missing:
        packs = " ".join(f"tesseract-ocr-{name.lower()}" for name in missing if "/" not in name)
        return (
            f"Tesseract has no language pack for {'+'.join(missing)} (apt-get install {packs or 'the script packs'}; "
            f"installed: {'+'.join(sorted(have - {'osd'})) or 'none'}; --ocr-lang chooses)"
        )
    return ""


@cache
def _packs(command: str) -> frozenset[str]:
    """The language packs ``command`` has (none when it is not there or does not run)."""
    program = shutil.which(command)
    try:
        return _listed(program) if program is not None else frozenset()
    except (OSError, subprocess.SubprocessError):
        return frozenset()


def _listed(program: str) -> frozenset[str]:
    """The packs ``tesseract --list-langs`` names (its first line is a heading)."""
    listed = subprocess.run([program, "--list-langs"], capture_output=True, text=True, timeout=60, check=True)
    return frozenset(line.strip() for line in listed.stdout.splitlines()[1:] if line.strip())


def _unusable_version(program: str) -> str:
    """Why pytesseract refuses ``program``'s version (empty when it takes it). pytesseract asks Tesseract's version
    before every read and raises ``SystemExit`` on one older than 3.05 or one it cannot parse: found only in a
    worker, that would end the whole run at its first page without a text layer."""
    import pytesseract

    saved, pytesseract.pytesseract.tesseract_cmd = pytesseract.pytesseract.tesseract_cmd, program
    try:
        pytesseract.get_tesseract_version()
    except (SystemExit, pytesseract.TesseractNotFoundError, OSError, subprocess.SubprocessError) as exc:
        reason = one_line(f"{type(exc).__name__}: {exc}")
        return f"pytesseract cannot use this Tesseract ({reason}; it needs 3.05 or newer)"
    finally:
        pytesseract.pytesseract.tesseract_cmd = saved
    return ""


def bands(page: pymupdf.Page, boxes: Sequence[Box] = ()) -> list[Box]:
    """The areas to read, as page fractions: each box with :data:`pipeline.words.MARGIN_MM` above and below it
    (the text layer's area), overlapping ones joined so no word is read twice; no boxes: the whole page."""
    if not boxes:
        return [(0.0, 0.0, 1.0, 1.0)]
    margin = MARGIN_MM * 72 / 25.4 / page.rect.height
    found = [(x0, max(0.0, y0 - margin), x1, min(1.0, y1 + margin)) for x0, y0, x1, y1 in boxes]
    joined = True
    while joined:
        joined = False
        for i, a in enumerate(found):
            for j in range(i + 1, len(found)):
                b = found[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    found[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    del found[j]
                    joined = True
                    break
            if joined:
                break
    return sorted(found, key=lambda band: (band[1], band[0]))


def read_words(
    page: pymupdf.Page,
    boxes: Sequence[Box],
    lang: str = DEFAULT_LANG,
    scan: Scan | None = None,
    scale: float = 1.0,
) -> str:
    """The words Tesseract reads in :func:`bands` of ``page``, cleaned for a caption (``""`` when none).

    ``scale`` is the page's real size over its declared one (:mod:`pipeline.scale`): a page declared too small
    is rendered larger so its type reaches :data:`OCR_DPI`. Raises :class:`OcrFailed` when Tesseract fails."""
    from pipeline.render import render

    words: list[str] = []
    line_ends: set[int] = set()
    for band in bands(page, boxes):
        x0, y0, x1, y1 = band
        area = page.rect.width * (x1 - x0) * page.rect.height * (y1 - y0)
        zoom = min(OCR_DPI / 72 * scale, (MAX_PIXELS / max(area, 1e-6)) ** 0.5)
        pixels = render(page, zoom, "gray", band, scan)
        cuts = [(edge - y0) / (y1 - y0) for box in boxes if y0 <= box[1] < y1 for edge in (box[1], box[3])]
        parts = _strips(pixels) if not boxes else [_apart(pixels, cuts, round(GAP_MM / 25.4 * 72 * zoom))]
        for part in parts:
            read, ends = _tesseract(part, lang)
            line_ends.update(len(words) + i for i in ends)
            words.extend(read)
            cleaned = clean_words(words, line_ends)
            if len(cleaned.split()) >= pipeline.words.MAX_WORDS:  # a caption holds no more: the rest of the page
                return cleaned  # (later strips, later bands) would be read for nothing
    return clean_words(words, line_ends)


def _strips(pixels: np.ndarray) -> Iterator[np.ndarray]:
    """A whole page, top down, in strips of :data:`STRIP_PIXELS` and then twice as many as the strip before (each
    Tesseract call costs ~0.45 s of start), each cut at the whitest row near its end (between two lines of type).
    A newspaper page read whole at 300 dpi took Tesseract 235 s for the 40 words a caption keeps; read strip by
    strip, the reading stops once they are found (10 s)."""
    import numpy as np

    height, width = pixels.shape[:2]
    rows = max(1, STRIP_PIXELS // max(width, 1))
    top = 0
    while top < height:
        end = min(height, top + rows)
        if end < height:
            window = pixels[top + rows * 3 // 4 : end]
            end = top + rows * 3 // 4 + int(window.mean(axis=1).argmax())  # the whitest row of its last quarter
        yield np.ascontiguousarray(pixels[top:end])
        top = end
        rows *= 2  # a page with few words (a plate) is read in a few calls, not one per strip


def _apart(pixels: np.ndarray, cuts: Sequence[float], gap: int) -> np.ndarray:
    """``pixels`` cut into strips at ``cuts`` (fractions of its height: the pictures' top and bottom edges), the
    strips stacked again with ``gap`` rows of white between them. Tesseract's layout analysis otherwise takes a
    legend set close under a picture for part of it, and reads its letters as the picture's marks, or nothing."""
    import numpy as np

    rows = sorted({min(pixels.shape[0], max(0, round(cut * pixels.shape[0]))) for cut in cuts} - {0, pixels.shape[0]})
    if not rows:
        return np.ascontiguousarray(pixels)
    white = np.full((gap, pixels.shape[1]), 255, np.uint8)
    strips = np.split(pixels, rows)
    return np.vstack([part for strip in strips[:-1] for part in (strip, white)] + [strips[-1]])


def _tesseract(pixels: np.ndarray, lang: str) -> tuple[list[str], set[int]]:
    """Tesseract's confident words in ``pixels`` (grey), in its reading order, and which of them end a line."""
    import pytesseract
    from PIL import Image

    os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # one thread per band: workers are the parallelism
    pytesseract.pytesseract.tesseract_cmd = COMMAND
    try:
        with _in_scratch():
            data = pytesseract.image_to_data(Image.fromarray(pixels), lang=lang, output_type=pytesseract.Output.DICT)
    except (
        pytesseract.TesseractError, pytesseract.TesseractNotFoundError, OSError, RuntimeError,
        subprocess.SubprocessError, SystemExit,  # pytesseract's answer to a Tesseract version it refuses
    ) as exc:  # fmt: skip
        raise OcrFailed("OCR failed: " + one_line(f"{type(exc).__name__}: {exc}")) from None
    kept: list[tuple[tuple[int, int, int], str]] = []
    for text, confidence, block, paragraph, line, width, height in zip(
        data["text"], data["conf"], data["block_num"], data["par_num"], data["line_num"], data["width"],
        data["height"], strict=True,
    ):  # fmt: skip
        text = text.strip()
        if text and float(confidence) >= MIN_CONFIDENCE and width >= MIN_ASPECT * height * len(text):
            kept.append(((block, paragraph, line), unicodedata.normalize("NFKC", text)))  # ſ → s, ﬁ → fi
    ends = {i for i, (key, _) in enumerate(kept) if i + 1 == len(kept) or kept[i + 1][0] != key}
    return [text for _, text in kept], ends


@cache
def _scratch() -> Path:
    """This process's folder for Tesseract's files, made (after sweeping those of runs that are gone) on the first
    band it reads, and removed when the process exits (a pool's worker too: ``Finalize`` runs at its exit)."""
    from pipeline.fetch import make_run_folder

    folder = make_run_folder()
    Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=0)
    return folder


@contextlib.contextmanager
def _in_scratch() -> Iterator[None]:
    """pytesseract's temporary files (the band as a picture, Tesseract's answer) in :func:`_scratch`: it takes no
    folder, only the process's default, which a worker (one band at a time) may point there for the call."""
    previous = tempfile.tempdir
    tempfile.tempdir = str(_scratch())
    try:
        yield
    finally:
        tempfile.tempdir = previous
