"""Drop images already in the dataset: exact copies and near copies, across a whole run and across PDFs.

The same plate printed in ten issues, or the same PDF given twice, would otherwise become ten copies the
LoRA overfits to. Each image gets a :class:`Fingerprint`:

* ``exact``: SHA-256 (first 128 bits) of the decoded pixels with their size and mode, so a copy is found
  whatever JPEG settings wrote it, and two different images never collide in practice (SHA-256 rather than
  BLAKE2b: CPUs hash it in hardware, 4.5 vs 9.5 ms for a 1 MP RGB image here);
* ``phash``: the 64-bit DCT perceptual hash of :mod:`imagehash` (:func:`phash`), equal or close (Hamming distance) for
  rescaled, re-encoded or slightly shifted copies of one picture.

A picture cut again with another box (the same advertisement in two issues, its box found a little larger in
one) is 10-38 bits away, as far as different pictures: for those each kept image also keeps its 128 strongest
ORB keypoints (:class:`LocalFeatures`, 4.6 KB). Keypoints that share a 16-bit slice of their descriptor vote for
the images they come from (binary searches in one sorted array), and the most voted images are verified by a
RANSAC similarity transform (:func:`same_picture`). ``bench/dedupe_crops.py`` measures it.

:class:`DuplicateIndex` keeps 24 bytes of hashes per kept image in numpy arrays (plus its name) and
answers by a linear scan with ``bitwise_count``: 0.45 ms per lookup at 100 000 images (measured), no tree to keep.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Iterable
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
    kind: Literal["exact", "near", "recut"]
    """``recut``: the same picture under another box, found by its keypoints."""
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


FEATURE_SIDE = 512
"""Keypoints are found on the grey picture scaled to this longer side: an engraving's hatching stays visible."""
MAX_FEATURES = 128
"""Keypoints kept per image; with 256 the verdicts on ``bench/dedupe_crops.py``'s pairs are the same."""
MIN_INLIERS = 16
"""Keypoints that must agree on one shift and scale: shifted crops of real pictures have a median of 40 and
different pictures, text windows of one typeface included, at most 8 (``bench/dedupe_crops.py``)."""
MIN_SPREAD = 0.2
"""The agreeing keypoints must span this share of each picture's area: a shared logo or border alone is not the
same picture."""
INDEX_BYTES_PER_IMAGE = 16 * 1024
"""What the index holds per kept image, by design (keypoints ~5 KB, their vote keys 4 KB, hashes 24 bytes): 9.4 KB
traced by tracemalloc, 14 KB of private memory, measured with 130 generated pictures; it grows with the kept
images, not with the pages."""
CANDIDATES = 8
"""Most-voted earlier images verified per lookup, besides the :data:`NEAREST` closest by perceptual hash."""
NEAREST = 4
"""Closest earlier images by perceptual hash also verified: a picture printed again (another inking of one woodcut)
shares few exact descriptor slices, so few votes, while its phash stays nearer than most pictures'."""
_SLICES = 4
"""Descriptor slices (16 bits each) used as hash keys for voting."""


@dataclass(frozen=True)
class LocalFeatures:
    """ORB keypoints of an image: positions (``N×2`` float16, in the picture scaled to ``FEATURE_SIDE``: a
    quarter-pixel is precise enough) and 32-byte descriptors (``N×32`` uint8)."""

    points: np.ndarray
    descriptors: np.ndarray
    size: tuple[int, int]
    """``(width, height)`` of the scaled picture the points are in."""


def local_features(picture: Image.Image, count: int = MAX_FEATURES) -> LocalFeatures:
    """The ``count`` strongest ORB keypoints of ``picture`` (about 3 ms for a fitted 1 MP image)."""
    import cv2

    grey = picture.convert("L")
    scale = FEATURE_SIDE / max(grey.size)
    if scale < 1:
        size = (max(1, round(grey.width * scale)), max(1, round(grey.height * scale)))
        grey = grey.resize(size, Image.Resampling.BOX)
    keypoints, descriptors = cv2.ORB_create(nfeatures=count, fastThreshold=10).detectAndCompute(np.asarray(grey), None)
    if descriptors is None:
        return LocalFeatures(np.empty((0, 2), np.float16), np.empty((0, 32), np.uint8), grey.size)
    return LocalFeatures(np.array([k.pt for k in keypoints], np.float16), descriptors, grey.size)


def same_picture(a: LocalFeatures, b: LocalFeatures, min_inliers: int = MIN_INLIERS) -> bool:
    """Whether ``b`` shows ``a``'s picture under a shift and a uniform scale (another box, another size): mutual
    nearest descriptors, a RANSAC similarity transform with ``min_inliers`` agreeing keypoints, spread over at
    least ``MIN_SPREAD`` of both pictures."""
    import cv2

    if min(len(a.descriptors), len(b.descriptors)) < min_inliers:
        return False
    matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(a.descriptors, b.descriptors)
    if len(matches) < min_inliers:
        return False
    src = a.points[[m.queryIdx for m in matches]].astype(np.float32)
    dst = b.points[[m.trainIdx for m in matches]].astype(np.float32)
    transform, inliers = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=4.0)
    if transform is None or int(inliers.sum()) < min_inliers:
        return False
    if not 0.5 <= float(np.hypot(transform[0, 0], transform[1, 0])) <= 2.0:
        return False
    agree = inliers.ravel().astype(bool)
    return _spread(src[agree], a.size) >= MIN_SPREAD and _spread(dst[agree], b.size) >= MIN_SPREAD


def _spread(points: np.ndarray, size: tuple[int, int]) -> float:
    """Share of the picture's area covered by the bounding box of ``points``."""
    span = points.max(axis=0) - points.min(axis=0)
    return float(span[0] * span[1]) / max(1, size[0] * size[1])


def _keys(features: LocalFeatures) -> np.ndarray:
    """Hash keys (slice number and 16-bit value) of each descriptor, unique: a keypoint seen again usually keeps
    a slice."""
    words = np.ascontiguousarray(features.descriptors[:, : 2 * _SLICES]).view(np.uint16).astype(np.uint32)
    return np.unique(words + (np.arange(_SLICES, dtype=np.uint32) << 16))


class _Votes:
    """Hash key → kept images having it, as two flat arrays sorted by key (8 bytes per key and image, no Python
    object per key), plus the keys of recent images not merged in yet (merged every :data:`_MERGE` images)."""

    def __init__(self) -> None:
        self._keys = np.empty(0, np.uint32)
        self._ids = np.empty(0, np.uint32)
        self._recent: list[tuple[int, np.ndarray]] = []

    def add(self, image: int, keys: np.ndarray) -> None:
        self._recent.append((image, keys))
        if len(self._recent) >= _MERGE:
            keys = np.concatenate([self._keys, *(k for _, k in self._recent)])
            ids = np.concatenate([self._ids, *(np.full(len(k), i, np.uint32) for i, k in self._recent)])
            order = np.argsort(keys, kind="stable")
            self._keys, self._ids, self._recent = keys[order], ids[order], []

    def most_voted(self, keys: np.ndarray, count: int) -> list[int]:
        """The ``count`` images sharing the most keys with ``keys`` (most first, then earliest)."""
        lo, hi = np.searchsorted(self._keys, keys, "left"), np.searchsorted(self._keys, keys, "right")
        lengths = hi - lo
        offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        voters = [self._ids[np.repeat(lo, lengths) + offsets]]
        voters += [np.full(int(np.isin(k, keys).sum()), i, np.uint32) for i, k in self._recent]
        images, votes = np.unique(np.concatenate(voters), return_counts=True)
        return [int(images[i]) for i in np.argsort(-votes, kind="stable")[:count]]


_MERGE = 64
"""Images whose keys wait in a list before a merge into the sorted arrays: a merge sorts everything (~1 ms per
1,000 images), a lookup scans the waiting ones."""


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
        self._features: list[LocalFeatures | None] = []
        self._votes = _Votes()

    def __len__(self) -> int:
        return len(self._names)

    def find(self, fp: Fingerprint, features: LocalFeatures | None = None) -> Duplicate | None:
        """The earlier image ``fp`` duplicates: an exact copy first, else the nearest phash within the
        threshold (the earliest on ties), else, given ``features``, an image showing the same picture under
        another box; ``None`` when it is new."""
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
        if features is None:
            return None
        voted = self._votes.most_voted(_keys(features), CANDIDATES)
        closest = np.argsort(distances, kind="stable")[:NEAREST].tolist()
        for i in dict.fromkeys(voted + closest):
            earlier = self._features[i]
            if earlier is not None and same_picture(earlier, features):
                return Duplicate(self._names[i], "recut", int(distances[i]))
        return None

    def add(self, name: str, fp: Fingerprint, features: LocalFeatures | None = None) -> None:
        """Remember a kept image (with its keypoints, when given, for finding it again under another box)."""
        count = len(self._names)
        if count == len(self._phash):
            self._exact = np.concatenate([self._exact, np.empty_like(self._exact)])
            self._phash = np.concatenate([self._phash, np.empty_like(self._phash)])
        self._exact[count] = _exact_words(fp.exact)
        self._phash[count] = np.uint64(int(fp.phash, 16))
        self._names.append(name)
        self._features.append(features)
        if features is not None:
            self._votes.add(count, _keys(features))

    def check(self, name: str, fp: Fingerprint, features: LocalFeatures | None = None) -> Duplicate | None:
        """:meth:`find`, and :meth:`add` the image when it is new: the one call per image of a run."""
        duplicate = self.find(fp, features)
        if duplicate is None:
            self.add(name, fp, features)
        return duplicate

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[tuple[str, str]],
        threshold: int = DEFAULT_THRESHOLD,
        read: Callable[[str], bytes] | None = None,
    ) -> DuplicateIndex:
        """Rebuild the index of a resumed run from its manifest: ``(image name, str(fingerprint))`` per kept image;
        with ``read`` (a written image's bytes by name), their keypoints too, where the image can still be read."""
        index = cls(threshold)
        for name, text in rows:
            features = None
            if read is not None:
                try:
                    with Image.open(io.BytesIO(read(name))) as image:
                        features = local_features(image)
                except (OSError, KeyError):  # not on this disk (an uploaded shard): found by its hashes only
                    features = None
            index.add(name, Fingerprint.parse(text), features)
        return index


def _exact_words(hexdigest: str) -> tuple[np.uint64, np.uint64]:
    value = int(hexdigest, 16)
    return np.uint64(value >> 64), np.uint64(value & 0xFFFFFFFFFFFFFFFF)
