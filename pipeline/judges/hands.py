"""Hands holding the page: smooth tone that comes in from the view's edge is no picture.

A hand or fingers holding the page, over text or beside it, is a large area of smooth tone reaching the view's
edge; print is ink or paper at this scale, however fine its hatching, and a halftone photograph's flat grey lies
inside the page. This stage decides which kept regions are mostly made of such tone (at least ``held`` of their
inked pixels) and scores them 0.
"""

from __future__ import annotations

import math
from dataclasses import replace

import cv2
import numpy as np

from pipeline.judges.candidates import Region
from pipeline.judges.measure import percentiles, rect

EDGE_CHECK_PIXELS = 1_000_000
"""Pixels the check for hands at the page's edge looks at, at most (a newspaper's 72 dpi view is 2 M)."""


def off_the_edge(regions: list[Region], gray: np.ndarray, held: float) -> list[Region]:
    """``regions``, those mostly made of smooth tone that comes in from the view's edge (at least ``held`` of
    their inked pixels) scored 0: a hand or fingers holding the page, over text or beside it (print is ink or
    paper at this scale, however fine its hatching; a halftone photograph's flat grey lies inside the page).
    Only pages with a kept region pay for this. Large views are sampled every few pixels down to about
    :data:`EDGE_CHECK_PIXELS`: a hand is centimetres wide, and sampling (not averaging) keeps print's texture."""
    step = max(1, math.ceil(math.sqrt(gray.size / EDGE_CHECK_PIXELS)))
    gray = np.ascontiguousarray(gray[::step, ::step]) if step > 1 else gray
    h, w = gray.shape
    mean = cv2.boxFilter(gray, cv2.CV_32F, (3, 3))  # 3x3 variance straight from the uint8 pixels
    variance = cv2.sqrBoxFilter(gray, cv2.CV_32F, (3, 3)) - mean * mean
    paper = percentiles(gray[:: max(1, h // 256), :: max(1, w // 256)], [95])[0]
    tone = (gray < paper - 30).view(np.uint8)
    smooth = (tone & (variance < 36).view(np.uint8)).astype(np.uint8)  # local std below 6 grey levels
    n, labels = cv2.connectedComponents(cv2.morphologyEx(smooth, cv2.MORPH_CLOSE, rect(3, 3)), connectivity=8)
    outside = np.zeros(n, bool)
    for edge in (labels[0], labels[-1], labels[:, 0], labels[:, -1]):
        outside[edge] = True
    outside[0] = False
    out = []
    for r in regions:
        x0, y0, x1, y1 = (round(v * s) for v, s in zip(r.box, (w, h, w, h), strict=True))
        inked = max(1, cv2.countNonZero(tone[y0:y1, x0:x1]))
        share = np.count_nonzero(outside[labels[y0:y1, x0:x1]] & (smooth[y0:y1, x0:x1] > 0)) / inked
        out.append(replace(r, score=0.0) if share >= held else r)
    return out
