"""The seed article's filter: keep a page when its grey-level standard deviation exceeds a threshold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from pipeline.judges.base import Verdict


@dataclass
class SigmaJudge:
    """Brightness σ as the article computes it: the page rendered RGB at ``Matrix(2, 2)``, cv2's grey, std > 45.

    Grey scans come as a grey view (the pipeline renders them grey: identical values, a third of the pixels).
    A scanned page's view is decoded from its scan (cheaper than drawing it); see ``exact_within``.
    Kept for comparison and reproducibility: σ measures ink coverage and scan contrast, not pictures.
    """

    threshold: float = 45.0
    name: str = "sigma"
    zoom: float = 2.0
    colorspace: Literal["gray", "rgb"] = "rgb"
    exact_within: float = 12.0
    real_size: bool = False
    """σ of the decoded scan differs from σ of MuPDF's drawing by up to 1.19 on the 237 real pages
    (``bench/scan_view.py``) and 6.1 on pixel-sized synthetic noise scanned at 300 dpi (MuPDF's scaler and
    OpenCV's differ most on such noise): pages within 12 of the threshold get MuPDF's drawing, so the
    decisions are the article's."""

    def release(self) -> None:
        """Nothing is kept between pages."""

    def __call__(self, view: np.ndarray) -> Verdict:
        gray = cv2.cvtColor(view, cv2.COLOR_RGB2GRAY) if view.ndim == 3 else view
        score = float(cv2.meanStdDev(gray)[1][0, 0])
        # σ judges the whole page: that is its candidate, unless the page is one flat grey (nothing on it)
        return Verdict(keep=score > self.threshold, score=score, best=(0.0, 0.0, 1.0, 1.0) if score > 0 else None)
