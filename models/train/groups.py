"""Near-duplicate groups (perceptual hash, then ImageNet-feature cosine) and the splits that never cut one: grouped
folds, the held-out share, learning-curve subsamples, the photos each leave-one-source-out fit leaves out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from PIL import Image

from models.train.config import FEATURE_LINK_COSINE, SEED


def phash_groups(images: Sequence[Image.Image], distance: int = 10) -> np.ndarray:
    """Group ids: photos whose perceptual hashes are within ``distance`` bits are joined (transitively).

    10 bits: copies, re-encodes and re-crops of a few percent land within it (``pipeline.dedupe``'s measurements:
    a 2 % shift ≤ 10 bits), while different photos are rarely that close.
    """
    from pipeline.dedupe import phash

    bits = np.array([[int(c, 16) >> s & 1 for c in phash(im) for s in (3, 2, 1, 0)] for im in images], dtype=np.int32)
    return _components(len(bits), lambda a, b: bits[a:b] @ (1 - bits).T + (1 - bits[a:b]) @ bits.T <= distance)


def join_similar(groups: np.ndarray, features: torch.Tensor, cosine: float = FEATURE_LINK_COSINE) -> np.ndarray:
    """``groups`` merged wherever two photos' pooled ImageNet features, centred on the photos' mean, have at least
    ``cosine``: zoomed, rotated and stretched copies of one photo, which a perceptual hash misses, become one group."""
    x = features.float() - features.float().mean(dim=0)
    x = (x / x.norm(dim=1, keepdim=True).clamp(min=1e-12)).numpy()
    return _components(len(x), lambda a, b: (x[a:b] @ x.T >= cosine) | (groups[a:b, None] == groups[None, :]))


def _components(n: int, linked_rows: Callable[[int, int], np.ndarray], block: int = 1024) -> np.ndarray:
    """Group ids of the connected components (links chain) of ``n`` photos; ``linked_rows(a, b)`` says which photos
    rows ``a:b`` link to, a block of rows at a time, so a large folder never needs an n × n matrix."""
    from scipy.sparse import coo_matrix  # here: models.predict imports this module for its folder listing
    from scipy.sparse.csgraph import connected_components

    rows, cols = [np.zeros(0, dtype=int)], [np.zeros(0, dtype=int)]
    for a in range(0, n, block):
        r, c = np.nonzero(linked_rows(a, min(n, a + block)))
        rows.append(r + a)
        cols.append(c)
    links = coo_matrix((np.ones(sum(map(len, rows))), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    return connected_components(links, directed=False)[1]


def grouped_folds(groups: np.ndarray, targets: np.ndarray, k: int, seed: int = SEED) -> np.ndarray:
    """Fold number per photo: whole groups go to folds, each target's photos spread evenly (largest groups first)."""
    rng = np.random.default_rng(seed)
    fold_of = np.zeros(len(groups), dtype=int)
    counts = np.zeros((k, len(np.unique(targets))), dtype=int)
    target_ids = {t: i for i, t in enumerate(np.unique(targets))}
    ids = np.unique(groups)
    order = sorted(rng.permutation(ids), key=lambda g: -int((groups == g).sum()))
    for g in order:
        members = np.nonzero(groups == g)[0]
        t = target_ids[int(np.bincount(targets[members] - targets.min()).argmax() + targets.min())]
        fold = int(np.argmin(counts[:, t] * 1000 + counts.sum(axis=1)))
        fold_of[members] = fold
        counts[fold, t] += len(members)
    return fold_of


def holdout_mask(groups: np.ndarray, targets: np.ndarray, fraction: float, seed: int = SEED) -> np.ndarray:
    """True for held-out photos: about ``fraction`` of each target, whole near-duplicate groups only."""
    if fraction <= 0:
        return np.zeros(len(groups), dtype=bool)
    folds = grouped_folds(groups, targets, max(2, round(1 / fraction)), seed=seed + 1)
    return folds == 0


def subsample_groups(rows: np.ndarray, groups: np.ndarray, fraction: float, seed: int = SEED) -> np.ndarray:
    """``rows`` of a random ``fraction`` of their near-duplicate groups, whole groups only: a learning curve's
    smaller training sets (``--train-fraction``) keep the split's guarantee."""
    if fraction >= 1:
        return rows
    present = np.unique(groups[rows])
    kept = np.random.default_rng(seed).choice(present, max(1, round(fraction * len(present))), replace=False)
    return rows[np.isin(groups[rows], kept)]


def sources_to_leave_out(targets: np.ndarray, sources: np.ndarray) -> dict[str, np.ndarray]:
    """Per source, the photos a leave-one-source-out fit leaves out: all of its photos, but for a label no other
    source has (the one collection of lumpy-skin photos cannot be left out: nothing would teach the label)."""
    out = {}
    for name in np.unique(sources):
        mine = sources == name
        elsewhere = {int(t) for t in np.unique(targets[~mine])}
        mask = mine & np.isin(targets, list(elsewhere))
        if mask.any():
            out[str(name)] = mask
    return out
