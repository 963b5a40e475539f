"""The score: how much a region looks like a picture, from its own evidence, as a probability-like 0..1.

``sigmoid(z)`` of a log-linear sum of a region's size, texture fill, solid-black share, aspect and edge variety,
written so that a region exactly at the reference values (``min_area``, ``fill_ref``, ``solid_ref``,
``max_aspect``, ``variety_ref``) scores 0.5: one threshold (0.5) means "a picture at least this big and this
textured" for any page. This module decides that sum, and measures a textured core's evidence from the ink
under it (:func:`core_evidence`); line drawings are scored on their size alone (:func:`size_evidence`).
"""

from __future__ import annotations

import math
from typing import Protocol

import cv2
import numpy as np

from pipeline.judges.measure import COARSE, PixelBox, px, rect


class ScoreSettings(Protocol):
    """What the score reads of the judge's parameters (see :class:`~.structure.StructureJudge`)."""

    @property
    def dpi(self) -> float: ...

    min_area: float
    max_aspect: float
    fill_ref: float
    solid_ref: float
    variety_ref: float


def size_evidence(area: float, ref: float, aspect: float, max_aspect: float) -> float:
    """The size and shape terms of a region's log-odds: 0 at area ``ref`` and aspect up to ``max_aspect``;
    bigger helps up to a point (+1.5), smaller hurts steeply, longer than ``max_aspect`` hurts."""
    ratio = math.log(max(area, 1e-9) / ref)
    return (min(1.5, 1.5 * ratio) if ratio > 0 else 4.0 * ratio) - 3.0 * max(0.0, math.log(aspect / max_aspect))


def texture_score(
    settings: ScoreSettings, area: float, fill: float, solid: float, aspect: float, variety: float = 1.0
) -> float:
    """Log-linear evidence, squashed to 0..1; exactly 0.5 for a region at ``min_area``, ``fill_ref``,
    ``solid_ref`` and ``max_aspect``. Bigger helps up to a point (+1.5), smaller hurts steeply."""
    z = (
        size_evidence(area, settings.min_area, aspect, settings.max_aspect)
        + 3.0 * math.log(max(fill, 1e-3) / settings.fill_ref)
        - 10.0 * max(0.0, solid - settings.solid_ref)
        - 8.0 * max(0.0, math.log(settings.variety_ref / max(variety, 1e-3)))
    )
    return 1.0 / (1.0 + math.exp(-z))


def core_evidence(
    ink: np.ndarray, box: PixelBox, core_px: int, grid: tuple[int, int], settings: ScoreSettings
) -> float:
    """Score of a textured core from the ink under it: size, texture fill, solid black, aspect, edge variety.

    ``box``: the core's box on the core grid (``grid``: that grid's rows and columns); ``core_px``: its core
    pixel count."""
    h = ink.shape[0]
    hf, wf = grid
    cx_scale, cy_scale = COARSE, h / hf
    bx0, by0, bx1, by1 = box
    cw, ch = bx1 - bx0, by1 - by0
    area = cw * ch / float(wf * hf)
    crop = ink[int(by0 * cy_scale) : int(by1 * cy_scale), int(bx0 * cx_scale) : int(bx1 * cx_scale)]
    inked = crop > 0.3
    k2 = px(2.0, settings.dpi)
    solid = float((cv2.blur(crop, (k2, k2))[inked] > 0.8).mean()) if inked.any() else 0.0
    # variety: share of the area with a sharp ink edge nearby (hatching, dots, contours); uniform
    # grey patches and solid blocks of test targets have edges only at their borders
    gx = cv2.Sobel(crop, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(crop, cv2.CV_32F, 0, 1, ksize=3)
    edges = ((np.abs(gx) + np.abs(gy)) > 1.0).astype(np.uint8)
    edges = cv2.dilate(edges, rect(k2, k2))
    variety = float(edges.mean()) if edges.size else 0.0
    return texture_score(settings, area, core_px / float(cw * ch), solid, max(cw / ch, ch / cw), variety)
