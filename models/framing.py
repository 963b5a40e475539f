"""How to frame the photos, drawn: four small schematic pictures beside the photo guide's words.

A farmer who reads little, or reads another language than the page's, sees what the words say: the whole side of
the animal from about a metre, the lumps filling the frame, the open mouth, the cleft between the claws. Each is an
inline SVG (no file to serve, no photo whose licence we would need), its dashed rounded rectangle the phone's frame;
the captions are the page's language (``models/locales``: ``framing.*``) and each picture's ``aria-label``.
"""

from __future__ import annotations

from html import escape

from models.i18n import ENGLISH, text

FRAME = (
    '<rect x="4" y="4" width="112" height="82" rx="9" fill="none" stroke="#4b5563" stroke-width="2.5" '
    'stroke-dasharray="7 4"/>'
)
"""The phone's frame, the same in every picture: what lies inside it is what the photo should hold."""

SIDE = (
    FRAME
    + '<path d="M20 40 Q16 52 15 62" stroke="#7c5534" stroke-width="2.5" fill="none"/>'
    + '<rect x="20" y="33" width="64" height="28" rx="13" fill="#9c6b43"/>'
    + '<ellipse cx="70" cy="33" rx="9" ry="7" fill="#9c6b43"/>'
    + '<path d="M80 36 L96 31 L104 44 L94 51 L82 47 Z" fill="#8a5c38"/>'
    + '<path d="M95 32 L99 23 M91 33 L89 24" stroke="#e5e7eb" stroke-width="2.5" stroke-linecap="round"/>'
    + '<path d="M86 37 L79 33 L84 40 Z" fill="#7c5534"/><circle cx="95" cy="40" r="1.8" fill="#1f2937"/>'
    + "".join(f'<rect x="{x}" y="56" width="5" height="22" rx="2" fill="#7c5534"/>' for x in (26, 35, 68, 77))
    + "".join(
        f'<circle cx="{x}" cy="{y}" r="2.2" fill="#5b3a21"/>' for x, y in ((42, 42), (55, 39), (63, 48), (49, 51))
    )
)
"""The whole side of the animal, well inside the frame, a few lumps on its skin."""

CLOSEUP = (
    '<rect x="4" y="4" width="112" height="82" rx="9" fill="#9c6b43"/>'
    + "".join(
        f'<circle cx="{x}" cy="{y}" r="{r}" fill="#7a4f2e"/><path d="M{x - r * 0.6:.1f} {y - r * 0.3:.1f} '
        f'A{r} {r} 0 0 1 {x + r * 0.2:.1f} {y - r * 0.8:.1f}" stroke="#c08a5c" stroke-width="2" fill="none"/>'
        for x, y, r in ((28, 28, 9), (62, 22, 7), (90, 34, 10), (40, 62, 8), (76, 66, 9), (102, 70, 6))
    )
    + '<circle cx="40" cy="62" r="3" fill="#3b2412"/>'
    + FRAME
)
"""Skin lumps filling the frame: raised round nodules, one with a dark scab."""

MOUTH = (
    FRAME
    + '<path d="M14 30 Q60 8 106 30 L106 66 Q60 84 14 66 Z" fill="#d8b49c"/>'
    + '<path d="M24 44 Q60 30 96 44 Q60 74 24 44 Z" fill="#7f1d1d"/>'
    + '<path d="M34 50 Q60 42 86 50 Q60 68 34 50 Z" fill="#f4a3a8"/>'
    + '<path d="M30 42 Q60 32 90 42" stroke="#f9fafb" stroke-width="4" fill="none"/>'
    + "".join(
        f'<circle cx="{x}" cy="{y}" r="3.2" fill="#fff7ed" stroke="#dc2626" stroke-width="1.5"/>'
        for x, y in ((50, 53), (66, 55), (58, 60))
    )
)
"""The open mouth seen from the front: gums and dental pad, the tongue with a few blisters."""

FOOT = (
    FRAME
    + '<rect x="30" y="10" width="60" height="30" rx="6" fill="#9c6b43"/>'
    + '<path d="M30 40 L30 72 Q30 80 42 80 L56 80 L57 40 Z" fill="#374151"/>'
    + '<path d="M90 40 L90 72 Q90 80 78 80 L64 80 L63 40 Z" fill="#374151"/>'
    + '<path d="M30 40 L90 40" stroke="#6b7280" stroke-width="3"/>'
    + '<ellipse cx="60" cy="52" rx="7" ry="16" fill="none" stroke="#dc2626" stroke-width="2.5"/>'
)
"""A cloven hoof from the front: the skin just above it and the cleft between the two claws, circled."""

FIGURES = (("framing.side", SIDE), ("framing.closeup", CLOSEUP), ("framing.mouth", MOUTH), ("framing.foot", FOOT))


def figures(lang: str = ENGLISH) -> str:
    """The four pictures with their captions in ``lang``, as HTML that wraps two to a row on a phone."""
    cells = []
    for key, drawing in FIGURES:
        caption = escape(text(key, lang))
        cells.append(
            '<figure style="flex:1 1 130px;max-width:190px;margin:0;text-align:center">'
            f'<svg viewBox="0 0 120 90" width="100%" role="img" aria-label="{caption}" '
            f'xmlns="http://www.w3.org/2000/svg">{drawing}</svg>'
            f'<figcaption style="font-size:0.9em;line-height:1.25">{caption}</figcaption></figure>'
        )
    return f'<div style="display:flex;flex-wrap:wrap;gap:10px;justify-content:flex-start">{"".join(cells)}</div>'
