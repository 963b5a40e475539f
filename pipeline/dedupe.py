"""Drop images already in the dataset: exact copies and near copies, across a whole run and across PDFs.

The same plate printed in ten issues, or the same PDF given twice, would otherwise become ten copies the
LoRA overfits to. Each image gets a :class:`Fingerprint`:

* ``exact``: SHA-256 (first 128 bits) of the decoded pixels with their size and mode, so a copy is found
  whatever JPEG settings wrote it, and two different images never collide in practice (SHA-256 rather than
  BLAKE2b: CPUs hash it in hardware, 4.5 vs 9.5 ms for a 1 MP RGB image here);
* ``phash``: the 64-bit DCT perceptual hash of :mod:`imagehash` (:func:`phash`), equal or close (Hamming distance) for
  rescaled, re-encoded or slightly shifted copies of one picture.

:class:`DuplicateIndex` keeps 24 bytes of hashes per kept image in numpy arrays (plus its name) and
answers by a linear scan with ``bitwise_count``: 0.45 ms per lookup at 100 000 images (measured), no tree to keep.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import imagehash
import numpy as np
from PIL import Image

DEFAULT_THRESHOLD = 6
"""Largest phash Hamming distance (of 64 bits) still called a near duplicate, measured by
``bench/phash_threshold.py`` on 38 pictures (12 generated engravings, 8 generated text/mixed pages, 18 illustration
crops of the real book scans) and 12 variants of each: copies rescaled ×0.5 or ×0.75, re-JPEGed at q40/q75,
brightened, or all combined are 0–6 bits away; shifted or cropped by 1 % ≤ 6, by 2 % ≤ 10, by 4 % ≤ 14.
Different pictures: the closest pair is 10 bits apart (two panels of one Busch cartoon page), then 14 (generated
text pages), 18 (real illustrations), 20 (generated engravings). But whole pages of one book with the same layout
(a text block around a small figure, ``darwin_pflanzen`` pages 2 and 3 in ``../shared/data``) are only 8 apart,
while the same advertising page reprinted a week later (the 1856 weekly, page 4) is 6 apart: 6 catches every
re-encoded, rescaled or 1 %-shifted copy and that reprint, and keeps different pages of one book apart."""

_FINGERPRINT = re.compile(r"[0-9a-fA-F]{32}:[0-9a-fA-F]{16}")


@dataclass(frozen=True)
class Fingerprint:
    """An image's exact and perceptual hashes, as hex strings (what the manifest stores)."""

    exact: str
    """32 hex digits (the first 128 bits of SHA-256 of size, mode and pixels)."""
    phash: str
    """16 hex digits (64-bit perceptual hash)."""

    def __str__(self) -> str:
        """``exact:phash``, one manifest cell."""
        return f"{self.exact}:{self.phash}"

    @classmethod
    def parse(cls, text: str) -> Fingerprint:
        """The inverse of ``str()``; raises ``ValueError`` on anything else."""
        if not _FINGERPRINT.fullmatch(text.strip()):
            raise ValueError(f"not a fingerprint (32 hex digits ':' 16 hex digits): {text!r}")
        exact, _, phash = text.strip().lower().partition(":")
        return cls(exact, phash)


@dataclass(frozen=True)
class Duplicate:
    """Why an image is a duplicate: the earlier image it copies and how close it is."""

    of: str
    """Name of the earlier (kept) image."""
    kind: Literal["exact", "near"]
    distance: int
    """phash Hamming distance (0 for exact copies)."""


def fingerprint(image: Image.Image | np.ndarray) -> Fingerprint:
    """Fingerprint an image (the fitted image, before JPEG encoding, so settings do not matter): about
    15 ms for a 1 MP RGB image, most of it the phash's resize."""
    picture = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    digest = hashlib.sha256(f"{picture.mode} {picture.width}x{picture.height}\n".encode())
    digest.update(picture.tobytes())
    return Fingerprint(digest.hexdigest()[:32], phash(picture))


_DCT = 2 * np.cos(np.pi * np.outer(np.arange(32), 2 * np.arange(32) + 1) / 64)
"""scipy.fftpack's unnormalised DCT-II as a 32×32 matrix: ``dct(x, axis=0) == _DCT @ x``."""


def phash(picture: Image.Image) -> str:
    """:func:`imagehash.phash` as hex, bit for bit (same 32×32 LANCZOS thumbnail, DCT-II, median of the 8×8
    lowest frequencies), with the DCT as two small matrix products: imagehash imports SciPy for it, 17 MB more
    in every worker process."""
    pixels = np.asarray(picture.convert("L").resize((32, 32), Image.Resampling.LANCZOS), dtype=np.float64)
    low = (_DCT @ pixels @ _DCT.T)[:8, :8]
    return str(imagehash.ImageHash(low > np.median(low)))


class DuplicateIndex:
    """The fingerprints of the images kept so far in a run; finds the earlier image a new one duplicates.

    Only images added with :meth:`add` (the kept ones) are compared against, so a duplicate always names
    an image that is in the dataset.
    """

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        if not 0 <= threshold < 64:
            raise ValueError(f"the near-duplicate threshold must be 0-63 bits, got {threshold}")
        self.threshold = threshold
        self._names: list[str] = []
        self._exact = np.empty((1024, 2), np.uint64)
        self._phash = np.empty(1024, np.uint64)

    def __len__(self) -> int:
        return len(self._names)

    def find(self, fp: Fingerprint) -> Duplicate | None:
        """The earlier image ``fp`` duplicates: an exact copy first, else the nearest phash within the
        threshold (the earliest on ties); ``None`` when it is new."""
        count = len(self._names)
        if count == 0:
            return None
        hi, lo = _exact_words(fp.exact)
        exact = self._exact[:count]
        same = np.flatnonzero((exact[:, 0] == hi) & (exact[:, 1] == lo))
        if same.size:
            return Duplicate(self._names[int(same[0])], "exact", 0)
        distances = np.bitwise_count(self._phash[:count] ^ np.uint64(int(fp.phash, 16)))
        nearest = int(np.argmin(distances))
        if distances[nearest] <= self.threshold:
            return Duplicate(self._names[nearest], "near", int(distances[nearest]))
        return None

    def add(self, name: str, fp: Fingerprint) -> None:
        """Remember a kept image."""
        count = len(self._names)
        if count == len(self._phash):
            self._exact = np.concatenate([self._exact, np.empty_like(self._exact)])
            self._phash = np.concatenate([self._phash, np.empty_like(self._phash)])
        self._exact[count] = _exact_words(fp.exact)
        self._phash[count] = np.uint64(int(fp.phash, 16))
        self._names.append(name)

    def check(self, name: str, fp: Fingerprint) -> Duplicate | None:
        """:meth:`find`, and :meth:`add` the image when it is new: the one call per image of a run."""
        duplicate = self.find(fp)
        if duplicate is None:
            self.add(name, fp)
        return duplicate

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str]], threshold: int = DEFAULT_THRESHOLD) -> DuplicateIndex:
        """Rebuild the index of a resumed run from its manifest: ``(image name, str(fingerprint))`` per kept image."""
        index = cls(threshold)
        for name, text in rows:
            index.add(name, Fingerprint.parse(text))
        return index


def _exact_words(hexdigest: str) -> tuple[np.uint64, np.uint64]:
    value = int(hexdigest, 16)
    return np.uint64(value >> 64), np.uint64(value & 0xFFFFFFFFFFFFFFFF)
