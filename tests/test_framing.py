"""The photo guide's framing pictures: well-formed SVG, four of them, captioned in the page's language."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from models import framing, i18n


@pytest.mark.parametrize("lang", sorted(i18n.languages()))
def test_four_well_formed_pictures_each_captioned_and_labelled_in_the_pages_language(lang: str) -> None:
    html = framing.figures(lang)
    svgs = [ET.fromstring(svg) for svg in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]
    captions = re.findall(r"<figcaption[^>]*>(.*?)</figcaption>", html)
    expected = [i18n.text(key, lang) for key, _ in framing.FIGURES]
    assert len(svgs) == 4 and captions == expected
    assert [svg.get("aria-label") for svg in svgs] == expected, "a screen reader reads the caption"
    assert all(svg.get("role") == "img" for svg in svgs)
