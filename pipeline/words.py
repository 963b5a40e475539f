"""The words printed in and around a picture, from the page's text layer (OCR or born-digital), for captions.

An engraving's title or legend usually sits right under or over it ("THE UNITED STATES CAPITOL"), and many
scanned archives carry an OCR layer: those words say what the picture shows, where a file name only teaches
a LoRA digits and fragments. Nothing is recognised here: the words are the PDF's own; where it has none
around a picture, :mod:`pipeline.ocr` reads them from the pixels and cleans them the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pipeline.judges import Box

if TYPE_CHECKING:
    import pymupdf

MARGIN_MM = 15.0
"""How far above and below a picture its title or legend may be printed."""
MAX_WORDS = 40
"""About 55 CLIP tokens: with a trigger word the caption stays inside CLIP's 77."""

_TOKEN = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")


def words_near(page: pymupdf.Page, boxes: Sequence[Box] = ()) -> str:
    """The words in and within :data:`MARGIN_MM` above or below ``boxes`` (page fractions), in reading order,
    cleaned for a caption: line-end hyphens joined, OCR noise (tokens that are mostly not letters) dropped,
    lower case, at most :data:`MAX_WORDS`. No boxes: the whole page's words. No text layer: ``""``."""
    return layer_words_near(page, boxes) or ""


def layer_words_near(page: pymupdf.Page, boxes: Sequence[Box] = ()) -> str | None:
    """:func:`words_near`, but ``None`` where the text layer has no word at all in that area: only there is
    the page read by OCR (:mod:`pipeline.ocr`), so a text layer's words are never read twice."""
    rect = page.rect
    margin = MARGIN_MM * 72 / 25.4
    areas = [rect] if not boxes else [_area(rect, box, margin) for box in boxes]
    found: dict[tuple[int, int, int], str] = {}
    for area in areas:
        for *_, text, block, line, number in page.get_text("words", clip=area):
            found.setdefault((block, line, number), text)
    if not found:
        return None
    keys = sorted(found)
    # the words are cleaned in reading order only until the caption is full: a newspaper page's text layer
    # holds ~10,000 words, of which a caption keeps the first 40
    return _cleaned(
        (found[key], index + 1 == len(keys) or keys[index + 1][:2] != key[:2]) for index, key in enumerate(keys)
    )


def _area(rect: pymupdf.Rect, box: Box, margin: float) -> pymupdf.Rect:
    import pymupdf

    x0, y0, x1, y1 = box
    return pymupdf.Rect(
        rect.x0 + x0 * rect.width,
        max(rect.y0, rect.y0 + y0 * rect.height - margin),
        rect.x0 + x1 * rect.width,
        min(rect.y1, rect.y0 + y1 * rect.height + margin),
    )


def clean_words(words: Sequence[str], line_ends: set[int] = frozenset()) -> str:
    """``words`` as one caption phrase: ``engrav-`` + ``ing`` at a line end joined, tokens that are mostly not
    letters (OCR noise, page numbers, rules of dots) dropped, punctuation removed, lower case, capped."""
    return _cleaned((word, index in line_ends) for index, word in enumerate(words))


def _cleaned(words: Iterable[tuple[str, bool]]) -> str:
    """:func:`clean_words` of ``(word, whether it ends its line)`` in reading order, read only until
    :data:`MAX_WORDS` are kept (the rest could only be cut off)."""
    kept: list[str] = []
    carry = ""
    for word, line_end in words:
        word = carry + word
        carry = ""
        if line_end and word.endswith(("-", "¬")) and len(word) > 2:
            carry = word[:-1]
            continue
        _keep(word, kept)
        if len(kept) >= MAX_WORDS:
            break
    if carry:
        _keep(carry, kept)
    return " ".join(kept[:MAX_WORDS])


def _keep(word: str, kept: list[str]) -> None:
    """Append ``word``'s tokens that are mostly letters to ``kept``, in lower case."""
    for token in _TOKEN.findall(word):
        letters = sum(ch.isalpha() for ch in token)
        if letters >= 2 and letters >= 0.7 * len(token):
            kept.append(token.lower())
