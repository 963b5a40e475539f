"""Fine-tune EfficientNet-Lite into a cattle triage model with a cattle gate, offline, in minutes on 2 CPU cores.

``python -m models.train DATA_DIR -o MODEL_DIR [--not-cattle DIR ...] [--classes a b] [--extra-cattle DIR ...]
[--cattle-as LABEL] [--sources CSV]``

DATA_DIR has one sub-folder per triage class; folders named ``breed_*`` are cattle photos without a triage
label (they teach the gate what cattle look like) unless ``--classes`` names them. With ``--not-cattle`` the
model gets one more label, ``not_cattle``, in the same softmax head: one backbone pass serves gate and triage,
and any transformers loader sees an ordinary classifier. Cattle photos without a triage label are trained to
"not not_cattle" (loss ``-log(1 - p_not_cattle)``).

Why it is fast: the ImageNet trunk (stem and blocks) stays frozen. Each photo, its mirror image and one mildly
augmented view (at 320 px) run through it once and are cached. The classifier is an L2-regularised multinomial
logistic regression, fitted by full-batch L-BFGS in seconds (``--tune head``, the default), on the 1280 pooled final
features and, by default, the 192 pooled mid-level features of the last block's input (the second-to-last stage's
output, penalised at a quarter of the final ones' penalty): the network itself carries those to its classifier
(``models.lite.install_readout``, a widened last block; ``--no-mid-features`` for the final ones alone).
``--tune top`` instead fine-tunes the head convolution (320 → 1280 channels) with the classifier from the
final-feature ridge head, for 5 epochs of Adam on the cached trunk outputs, held near ImageNet's weights by L2-SP
(about 10 s per fit).
Why it generalises: near-duplicate photos (perceptual hash within ``--phash-distance`` bits, or pooled ImageNet
features at a cosine of at least 0.6: zoomed, rotated and stretched copies; chained) are one group, and groups
never straddle cross-validation folds (nor the optional ``--holdout`` split). Beside grouped 20-fold
cross-validation (repeated with ``--cv-repeats`` fold draws), each collection (``--sources``) is left out whole and
predicted by a model fitted without it; the temperature and the verdict thresholds are chosen on these
out-of-source predictions (labels only one collection has keep their grouped-CV prediction), because a user's
photos come from a collection the model never saw. The final model is then fitted on every photo; both estimates,
per source and per kind of photo, go to ``metrics.json``. Logits are averaged over the
photo and its mirror image, in cross-validation as in inference (the policy's ``mirror``).
Why these defaults: the measurements behind each one are in ``docs/triage-model.md`` ("Why the training
defaults").
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import sys
import time
import typing
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageOps
from tqdm import tqdm

from models import triage
from models.classifier import list_images, read_photo
from models.lite import READOUT_CHANNELS, READOUT_OFFSET, VARIANTS, build_lite, image_processor, install_readout
from pipeline.settings import add_settings, flag, from_args, setting

CATTLE_ONLY = -1
"""Target of a cattle photo without a triage label."""
LABEL_FIXES = Path(__file__).with_name("label_fixes.csv")
"""Photos of the public data sets filed under the wrong label, with their right one (``relabelled``)."""
SEED = 0
L2 = 0.5
"""Ridge penalty of the classifier's triage rows on standardised features (both ``--tune`` modes); module docstring."""
L2_GATE = 0.01
"""The gate row's penalty: weaker, because the gate has three times the photos behind it; 0.01 rather than 0.1 turned
away more goat breeds left out (0.81 → 0.86) and more of every non-cattle collection left out (docs/triage-model.md)."""
MID_L2_FACTOR = 0.25
"""The mid-level features' weights are penalised at this fraction of their row's penalty: held back as hard as the
1280 final features, the 192 mid-level ones were under-used (module docstring)."""
TOP_EPOCHS = 5
TOP_LR = 1e-4
L2SP = 0.01
"""``--tune top``: epochs, Adam's learning rate and the L2-SP penalty (module docstring)."""
READOUT_HEADROOM = 2.0
"""A readout row is scaled so that its largest value on the training photos' pixels travels at ±2, inside
ReLU6's ±3 linear range (``models.lite.install_readout``): a photo may exceed the training range by half."""
CV_FOLDS = 20
"""Grouped CV folds: each fold's model sees 95 % of the photos, so the out-of-fold predictions that choose the
temperature and thresholds, and the estimate, come from models close to the shipped one, fitted on all of them.
With 357 triage photos the figure still rises with the share trained on (module docstring)."""
FEATURE_LINK_COSINE = 0.6
"""Near-duplicates a perceptual hash misses: the lumpy-skin photos hold zoomed, rotated and stretched copies of one
another (pairs viewed: at a cosine of 0.65-0.75 mostly copies, 0.60-0.65 half, below 0.60 few). 0.6 is the lowest
cosine before chaining runs away (at 0.55 one group swallows 83 photos; at 0.6 the largest holds 19)."""
SOURCE_POWER = 0.5
"""Within a label, a source of n photos weighs n^-0.5 per photo (normalised to the label's mean weight): one web
collection of 257 lumpy-skin zebu or 498 ImageNet photos otherwise teaches its breed, place and framing as the
label. Leave-one-source-out on the cached features (docs/triage-model.md): a goat breed left out turned away
0.74 (0.70 without), a horse breed 0.85 (0.79); 1 (every source alike) let 3 goat-app photos outweigh 498 others."""
MAX_CATTLE_REJECTED = 0.02
"""The gate turns away at most 2 % of the cattle photos of collections left out: the project allows 3 %, and each
point allowed turned away 2-7 % more of the non-cattle photos of a breed or class left out (docs/triage-model.md)."""
REFERENCE_K = 5
"""A photo's distance to the training cattle is to its 5 most similar (``models.triage.reference_distance``); on the
cached features, leave one source out, the reference alone with k = 1 / 5 / 20 turned away 95 / 95 / 95 % of the
ImageNet sample at 2 % of cattle photos: one look-alike photo should not vouch alone."""
NEIGHBOUR_K = 10
"""A photo's similarity to the training non-cattle photos is to its 10 most similar (``models.triage``'s neighbour
check): on the shipped model's out-of-fold predictions, with the reference's 5 for the cattle side, k = 10 turned
away more goats of known collections (grouped CV) within the same 2 % of cattle left out than k = 5, which the choice
of operating point left off (docs/triage-model.md)."""
NEIGHBOUR_MARGINS = np.round(np.arange(-0.05, 0.0201, 0.005), 3)
"""Where the neighbour check's margin is looked for (cosine; ``None``, no check, is a candidate too)."""
REFERENCE_QUANTILES = np.arange(0.95, 0.99999, 0.0025)
"""Where the reference's threshold is looked for: these quantiles of the cattle photos' out-of-source distances."""
ALERT_MISSED_LIMIT = 0.05
FALSE_ALARM_LIMIT = 0.10
COVERAGE_LIMIT = 0.80
NEW_SOURCE_COVERAGE_LIMIT = 0.70
ANSWERED_RIGHT_LIMIT = 0.95
NEW_SOURCE_ANSWERED_RIGHT_LIMIT = 0.90
ALERT_ANSWERED_LIMIT = 0.80
"""The project's limits: at most 5 % of a notifiable disease's photos answered as something else, at most 10 % of
the other cattle photos called that disease, at least 80 % of photos answered with 95 % of the answers right (70 %
and 90 % on collections the model never saw; ``choose_operating_point`` aims inside them, with margin, first), and in
its first two tiers each notifiable disease answered as itself on at least 80 % of its photos (the project's bar for FMD
as a class: the rest of them are *inconclusive*, with the disease's advice where it leans to it)."""
NOISY_MISSED_LIMIT = 2 * ALERT_MISSED_LIMIT
"""Cases missed that ``choose_operating_point`` accepts to answer the coverage asked. On the real photos, all 10
lumpy-skin photos the model called healthy with P ≥ 0.88 (3.9 % of 257) show no lesion (news photos of herds,
vaccination scenes, contact sheet viewed): a perfect model misses them too. Making them *inconclusive* (answering
healthy only from 0.90) cost 10-15 points of coverage, 30 % of healthy zebu inconclusive instead of 12 %."""
TRAINED_IMAGE_SIZE = 320
"""Photos are resized to this square, not ImageNet's 224: most training photos are 256 px, and the nodules of
lumpy skin then span more of the frozen backbone's 10×10 final map (measured in the module docstring)."""


@dataclass
class Dataset:
    """Photos with integer targets into ``labels`` (``CATTLE_ONLY`` for unlabelled cattle) and their groups."""

    paths: list[Path]
    targets: np.ndarray
    labels: list[str]
    gate_label: str | None
    groups: np.ndarray | None = None
    sources: list[str] = field(default_factory=list)
    """The collection each photo comes from: the unit of leave-one-source-out validation (``photo_sources``)."""


class DataError(ValueError):
    """The photos or options given cannot make a model (a library error: ``main`` prints it as ``error:``)."""


def _setting(default: object, help: str) -> Any:
    """A ``TrainConfig`` field: its default and its ``--help`` line, which shows the default."""
    return setting(default, help.replace("%", "%%") + " (default: %(default)s)")


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run: ``train``'s recipe and ``main``'s options (one each, built from the fields,
    so a default is written once). Values out of range raise ``DataError``. The measurements behind the defaults
    are in ``docs/triage-model.md`` ("Why the training defaults")."""

    epochs: int = _setting(TOP_EPOCHS, "with --tune top: epochs of Adam on the cached trunk outputs")
    """``--tune top`` only; 5 (at lr 1e-4): 10 epochs at lr 3e-4 scored lower (``TOP_EPOCHS``)."""
    views: int = _setting(3, "cached views per photo: the photo, its mirror, then mild augmentations")
    """Views per photo in the feature cache; 3 (photo, mirror, one mild view): 2-8 scored within fold noise."""
    folds: int = _setting(CV_FOLDS, "grouped CV folds choosing temperature and thresholds (0: none)")
    """Grouped CV folds (0 or 1: none); 20, so each fold's model is close to the shipped one (``CV_FOLDS``)."""
    cv_repeats: int = _setting(3, "grouped CV repeated with other fold draws")
    """Fold draws pooled for the temperature, thresholds and estimate; 3 averages out one draw's fold noise."""
    holdout: float = _setting(0.0, "fraction held out of all training and scored once (0: CV is the estimate)")
    """Share of near-duplicate groups kept out of everything; 0: the shipped model trains on every photo."""
    lr: float = _setting(TOP_LR, "with --tune top: Adam's learning rate")
    """``--tune top`` only; 1e-4 (5 epochs): 3e-4 (10 epochs) scored lower (``TOP_LR``)."""
    l2sp: float = _setting(L2SP, "with --tune top: L2-SP pull of the tuned convolutions back to ImageNet's weights")
    """``--tune top`` only; 0.01: without the pull, top tuning scored lower (``L2SP``)."""
    l2: float = _setting(L2, "ridge penalty of the classifier's triage rows, on standardised features")
    """The triage rows' penalty; 0.5: with 20 folds it tied 0.35 and beat 0.7-1.4, also on fresh draws (``L2``)."""
    l2_gate: float = _setting(L2_GATE, "ridge penalty of the classifier's gate (not_cattle) row")
    """The gate row's penalty; weaker than ``l2``: the gate has three times the photos behind it (``L2_GATE``)."""
    mid_l2_factor: float = _setting(MID_L2_FACTOR, "mid-level features' penalty as a fraction of their row's")
    """0.25: at the final features' penalty the mid-level ones were under-used (``MID_L2_FACTOR``)."""
    tune: Literal["head", "top"] = _setting(
        "head", "head: ridge logistic regression on frozen features; top: then fine-tune from --tune-from on"
    )
    """What is fitted; ``head``: top tuning scored 0.007 lower on average and takes longer."""
    tune_from: int | None = _setting(
        None, "with --tune top: first trained block (Lite0 has 16, Lite2 21); none: the head convolution only"
    )
    """``--tune top`` only; the head convolution alone (320 → 1280 on Lite0): Lite0's block 15 as well scored lower."""
    backbone: Literal["lite0", "lite2"] = _setting("lite0", "frozen ImageNet trunk (models/lite.py)")
    """Lite0: Lite2 turned more non-cattle away but called more healthy cattle lumpy, left out by source
    (docs/triage-model.md, "Why the training defaults")."""
    image_size: int = _setting(TRAINED_IMAGE_SIZE, "square input size in pixels")
    """320, not ImageNet's 224: lumpy-skin nodules span more of the final map (``TRAINED_IMAGE_SIZE``)."""
    mid_features: bool = _setting(
        True, "with --tune head: the last block's inputs (192 on Lite0) beside the 1280 final features"
    )
    """On: the mid-level features raised balanced accuracy and the answers' accuracy on every fold set."""
    train_fraction: float = _setting(
        1.0, "each CV fold trains on this share of its groups (learning curves; the saved model uses every photo)"
    )
    """Below 1 only for learning curves (``bench/learning_curve.py``); 1: folds train on all they may."""
    source_power: float = _setting(
        SOURCE_POWER, "within a label, a source of n photos weighs n^-POWER each (0: classes only; 1: sources alike)"
    )
    """Photo weights beside the class balance; 0.5 (``SOURCE_POWER``): a big collection no longer sets the label."""
    max_cattle_rejected: float = _setting(
        MAX_CATTLE_REJECTED, "the gate turns away at most this share of cattle photos of collections left out"
    )
    """The gate's threshold (``choose_operating_point``); 0.02 (``MAX_CATTLE_REJECTED``)."""
    reference_k: int = _setting(
        REFERENCE_K, "with --tune head: also turn away photos far from their K most similar training cattle (0: off)"
    )
    """The reference beside the gate (``models.triage``); 5 (``REFERENCE_K``): the gate alone let most of a kind of
    non-cattle photo it never saw through."""
    neighbour_k: int = _setting(
        NEIGHBOUR_K,
        "with a reference: also turn away photos nearer their K most similar training non-cattle photos (0: off)",
    )
    """The neighbour check beside the reference (``models.triage``); 10 (``NEIGHBOUR_K``); its margin is chosen with
    the gate's threshold, and may be none."""
    leave_source_out: bool = _setting(
        True, "leave-one-source-out fits choose the policy (off: grouped CV alone chooses it)"
    )
    """On: a user's photos come from a collection the model never saw, which this estimate imitates."""
    phash_distance: int = _setting(10, "near-duplicate photos: perceptual hashes within this many bits")
    """10 bits: re-encodes and crops of a few percent fall within it, different photos rarely (``phash_groups``)."""
    max_steps: int | None = _setting(None, "with --tune top: stop each training run after this many steps")
    """Smoke tests only; None: every epoch runs."""
    pretrained: bool = _setting(True, "ImageNet weights (off: random init, for tests)")
    """On: the frozen trunk's ImageNet features are what the head reads; random weights are for tests."""
    seed: int = _setting(SEED, "seed of the views, fold draws, holdout and top tuning")
    """0: a fixed seed makes a run repeatable (the measurements vary it to see fold noise)."""

    @property
    def blocks(self) -> int:
        """The backbone's block count: ``--tune-from`` beyond it trains nothing but the classifier."""
        return VARIANTS[self.backbone].blocks

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            choices = typing.get_args(hints[f.name]) if typing.get_origin(hints[f.name]) is Literal else ()
            if choices and getattr(self, f.name) not in choices:
                raise DataError(f"{flag(f.name)} {getattr(self, f.name)!r}: not one of {list(choices)}")
        ranges = {  # name: (in range, the range); out of range a run crashes or means nothing
            "epochs": (self.epochs >= 0, "0 or more"),
            "views": (self.views >= 1, "1 or more"),
            "folds": (self.folds >= 0, "0 or more"),
            "cv_repeats": (self.cv_repeats >= 0, "0 or more"),
            "holdout": (0 <= self.holdout < 1, "in [0, 1)"),
            "lr": (self.lr > 0, "above 0"),
            "l2sp": (self.l2sp >= 0, "0 or more"),
            "l2": (self.l2 >= 0, "0 or more"),
            "l2_gate": (self.l2_gate >= 0, "0 or more"),
            "mid_l2_factor": (self.mid_l2_factor >= 0, "0 or more"),
            "source_power": (0 <= self.source_power <= 1, "in [0, 1]"),
            "max_cattle_rejected": (0 <= self.max_cattle_rejected < 1, "in [0, 1)"),
            "reference_k": (self.reference_k >= 0, "0 or more"),
            "neighbour_k": (self.neighbour_k >= 0, "0 or more"),
            "tune_from": (self.tune_from is None or 0 <= self.tune_from <= self.blocks, f"in [0, {self.blocks}]"),
            "image_size": (self.image_size >= 32, "32 or more: the backbone shrinks a photo 32 times"),
            "train_fraction": (0 < self.train_fraction <= 1, "in (0, 1]"),
            "phash_distance": (0 <= self.phash_distance <= 64, "in [0, 64], a 64-bit hash"),
            "max_steps": (self.max_steps is None or self.max_steps >= 0, "0 or more"),
            "seed": (self.seed >= 0, "0 or more"),
        }
        for name, (ok, allowed) in ranges.items():
            if not ok:
                raise DataError(f"{flag(name)} {getattr(self, name)}: must be {allowed}")


def scan(
    data_dir: Path,
    classes: Sequence[str] | None = None,
    not_cattle: Path | Sequence[Path] | None = None,
    extra_cattle: Sequence[Path] = (),
    cattle_as: str | None = None,
    sources: Path | None = None,
    relabel: Path | None = LABEL_FIXES,
) -> Dataset:
    """Collect the photos: triage classes, then cattle-only folders (``breed_*``, ``extra_cattle``), then not-cattle
    (one folder or several).

    ``cattle_as`` gives the cattle-only photos a triage class (healthy breeds as ``normal_skin``) instead of none.
    ``sources`` is a provenance CSV (``photo_sources``) naming each photo's collection. ``relabel`` is a CSV of
    photos whose folder gives them the wrong label (``relabelled``; ``None``: none).
    """
    if isinstance(not_cattle, (str, Path)):
        not_cattle = [Path(not_cattle)]
    folders = sorted(p for p in Path(data_dir).iterdir() if p.is_dir())
    names = list(classes) if classes else [p.name for p in folders if not p.name.startswith("breed_")]
    unknown = [n for n in names if not (Path(data_dir) / n).is_dir()]
    if unknown or len(names) < 2:
        raise DataError(f"need at least two class folders in {data_dir} (missing: {unknown})")
    if cattle_as and cattle_as not in names:
        raise DataError(f"--cattle-as {cattle_as} is not one of the classes {names}")
    labels = list(names)
    gate = triage.NOT_CATTLE if not_cattle else None
    if gate:
        labels.append(gate)
    paths: list[Path] = []
    targets: list[int] = []
    for i, name in enumerate(names):
        found = list_images(Path(data_dir) / name)
        paths += found
        targets += [i] * len(found)
    if gate:
        cattle_only = [p for p in folders if p.name.startswith("breed_") and p.name not in names]
        for folder in [*cattle_only, *map(Path, extra_cattle)]:
            found = list_images(folder)
            paths += found
            targets += [names.index(cattle_as) if cattle_as else CATTLE_ONLY] * len(found)
        for folder in not_cattle:
            found = list_images(Path(folder))
            paths += found
            targets += [labels.index(gate)] * len(found)
    data = Dataset(paths, np.array(targets), labels, gate, sources=photo_sources(paths, sources))
    return relabelled(data, relabel) if relabel is not None else data


def relabelled(data: Dataset, csv_file: Path) -> Dataset:
    """``data`` with the corrections of ``csv_file`` (columns ``file``, ``label``, ``why``): each photo whose path
    ends with a row's ``file`` gets that row's label, and a source of its own (its collection's name + the label),
    so that leaving it out never leaves a whole collection out. Rows naming a label the model lacks, or no photo
    given, are skipped: the corrections are for one public data set, and any copy of it (a warning names the rows
    that found no photo when others did).

    Why: the public lumpy-skin data set files electron micrographs, a histology slide, line drawings, a laptop banner
    and vaccine vials under *lumpy skin*, and clip art and a web-shop screenshot under *normal skin* (each viewed;
    the ``why`` column says what it shows). Trained as a disease they teach it; scored as one, the gate that
    rightly turns them away counts as a missed case."""
    import csv

    with open(csv_file, newline="", encoding="utf-8") as f:
        fixes = [(row["file"].strip().replace("\\", "/"), row["label"].strip()) for row in csv.DictReader(f)]
    targets, sources = data.targets.copy(), list(data.sources)
    found = set()
    for i, path in enumerate(data.paths):
        posix = Path(path).as_posix()
        for file, label in fixes:
            if posix == file or posix.endswith("/" + file):
                found.add(file)
                if label in data.labels:
                    targets[i] = data.labels.index(label)
                    sources[i] = f"{sources[i]} · relabelled {label}"
    missing = [file for file, _ in fixes if file not in found]
    if found and missing:  # the data set the corrections are for, without some of its photos: renamed, or a typo
        warnings.warn(f"{csv_file}: no photo found for {len(missing)} row(s): {', '.join(missing)}", stacklevel=2)
    return replace(data, targets=targets, sources=sources)


def photo_sources(paths: Sequence[Path], csv_file: Path | None = None) -> list[str]:
    """Each photo's collection: the ``source_repo`` a provenance CSV (columns ``file``, ``source_repo``; ``file``
    relative to the CSV's folder, as ``../shared/data/sources_extra.csv``) gives it, else its folder's name.

    Why: photos of one collection share a camera, a place, a breed and a framing; a model validated on folds of
    one collection learns those. Leaving a whole source out is the estimate of a collection never seen.
    """
    named: dict[Path, str] = {}
    if csv_file is not None:
        import csv

        with open(csv_file, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                named[(Path(csv_file).parent / row["file"]).resolve()] = row["source_repo"]
    return [named.get(Path(p).resolve(), Path(p).parent.name) for p in paths]


# ---------------------------------------------------------------- grouping and splits
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


# ---------------------------------------------------------------- features
def augment(im: Image.Image, rng: np.random.Generator) -> Image.Image:
    """A random view: crop 80-100 % of the area, flip, rotate ±10°, brightness/contrast/colour ±20 %.

    Mild on purpose: a lumpy-skin photo cropped to half its area may have lost its nodules and still be trained as
    lumpy skin (stronger views cost lumpy-skin recall, see the module docstring)."""
    w, h = im.size
    area = w * h * rng.uniform(0.8, 1.0)
    ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
    cw, ch = min(w, round(math.sqrt(area * ratio))), min(h, round(math.sqrt(area / ratio)))
    x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    im = im.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        im = ImageOps.mirror(im)
    im = im.rotate(float(rng.uniform(-10, 10)), resample=Image.Resampling.BILINEAR, fillcolor=(124, 116, 104))
    for enhance in (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color):
        im = enhance(im).enhance(float(rng.uniform(0.8, 1.2)))
    return im


def trunk(model: torch.nn.Module, pixel_values: torch.Tensor, upto: int) -> torch.Tensor:
    """The frozen part: stem and blocks ``[0, upto)``."""
    h = model.efficientnet.embeddings(pixel_values)
    for block in model.efficientnet.encoder.blocks[:upto]:
        h = block(h)
    return h


def pooled(model: torch.nn.Module, hidden: torch.Tensor, start: int) -> torch.Tensor:
    """Blocks ``[start, 16)``, head convolution and global pooling: the 1280 features the classifier reads."""
    enc = model.efficientnet.encoder
    for block in enc.blocks[start:]:
        hidden = block(hidden)
    return enc.top_activation(enc.top_bn(enc.top_conv(hidden))).mean(dim=(2, 3))


def top(model: torch.nn.Module, hidden: torch.Tensor, start: int) -> torch.Tensor:
    """The trained part → logits; ``hidden`` is a trunk output, or already pooled features (head-only tuning)."""
    features = hidden if hidden.dim() == 2 else pooled(model, hidden, start)
    return model.classifier(model.dropout(features))


def pool_views(model: torch.nn.Module, feats: torch.Tensor, start: int, batch: int = 256) -> torch.Tensor:
    """Pooled features of every cached view, for head-only tuning (the rest of the network stays frozen)."""
    model.eval()
    flat = feats.reshape(-1, *feats.shape[2:])
    with torch.inference_mode():
        out = torch.cat([pooled(model, flat[s : s + batch].float(), start) for s in range(0, len(flat), batch)])
    return out.reshape(feats.shape[0], feats.shape[1], -1)


def cache_features(
    model: torch.nn.Module,
    paths: Sequence[Path],
    views: int,
    upto: int,
    image_size: int,
    seed: int = SEED,
    batch: int = 32,
) -> tuple[torch.Tensor, list[Image.Image]]:
    """Trunk outputs, (photos, views, C, H, W) in float16: view 0 is the photo as inference sees it, view 1 its
    mirror image (the second view inference averages), the rest random augmentations."""
    processor = image_processor(image_size)
    rng = np.random.default_rng(seed)
    out: list[torch.Tensor] = []
    thumbs: list[Image.Image] = []
    model.eval()
    with torch.inference_mode(), tqdm(total=len(paths), desc="features", unit="photo") as bar:
        for start in range(0, len(paths), batch):
            images = []
            for path in paths[start : start + batch]:
                im = read_photo(path)
                thumbs.append(im.copy())
                images += [im, ImageOps.mirror(im), *(augment(im, rng) for _ in range(views - 2))][:views]
            pixels = processor(images=images, return_tensors="pt")["pixel_values"]
            feats = trunk(model, pixels, upto).half()
            out.append(feats.reshape(-1, views, *feats.shape[1:]))
            bar.update(len(images) // views)
    return torch.cat(out), thumbs


# ---------------------------------------------------------------- training
def class_weights(targets: np.ndarray, n_labels: int) -> torch.Tensor:
    """Inverse-frequency weights (balanced accuracy is the target), cattle-only photos counted apart."""
    counts = np.bincount(targets[targets >= 0], minlength=n_labels).astype(float)
    weights = len(targets[targets >= 0]) / (n_labels * np.maximum(counts, 1))
    return torch.tensor(weights, dtype=torch.float32)


def train_top(
    model: torch.nn.Module,
    feats: torch.Tensor,
    pooled_feats: torch.Tensor,
    targets: np.ndarray,
    gate_index: int | None,
    epochs: int,
    lr: float = TOP_LR,
    l2: float = L2,
    l2_gate: float = L2_GATE,
    l2sp: float = L2SP,
    *,
    start: int,
    batch: int = 32,
    seed: int = SEED,
    desc: str = "train",
    max_steps: int | None = None,
) -> None:
    """Fine-tune the top (blocks ``start`` onward, the head convolution) and the classifier from the ridge head.

    Why it starts from ``fit_head`` and is held back: a randomly started head on ~300 triage photos overfits the
    top before the classifier means anything. So the ridge head comes first, and Adam then moves every trained
    weight a little, one random cached view per photo per epoch, under the same ridge penalty on the classifier
    (in standardised units, as ``fit_head``) and an L2-SP penalty pulling the convolutions back to ImageNet's
    weights. BatchNorm statistics stay ImageNet's (eval mode): batches of 32 would only add noise.
    """
    std = fit_head(model, pooled_feats, targets, gate_index, l2, l2_gate)
    enc = model.efficientnet.encoder
    top_modules = [*enc.blocks[start:], enc.top_conv, enc.top_bn]
    anchor = [p.detach().clone() for m in top_modules for p in m.parameters()]
    top_params = [p for m in top_modules for p in m.parameters()]
    penalty = ridge_penalty(model.config.num_labels, gate_index, l2, l2_gate)
    opt = torch.optim.Adam([*top_params, *model.classifier.parameters()], lr=lr)
    weights = class_weights(targets, model.config.num_labels)
    y = torch.as_tensor(targets)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    steps = epochs * math.ceil(len(targets) / batch)
    if max_steps is not None:
        steps = min(steps, max_steps)
    model.eval()
    step = 0
    with tqdm(total=steps, desc=desc, unit="step") as bar:
        while step < steps:
            order = rng.permutation(len(targets))
            view = torch.as_tensor(rng.integers(0, feats.shape[1], len(targets)))
            for s in range(0, len(order), batch):
                if step >= steps:
                    break
                idx = torch.as_tensor(order[s : s + batch])
                loss = _loss(top(model, feats[idx, view[idx]].float(), start), y[idx], weights, gate_index)
                ridge = (penalty * (model.classifier.weight * std) ** 2).sum()
                drift = sum(((p - a) ** 2).sum() for p, a in zip(top_params, anchor, strict=True))
                opt.zero_grad()
                (loss + ridge + l2sp * drift).backward()
                opt.step()
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}")


def source_balance(targets: np.ndarray, sources: Sequence[str], power: float = 1.0) -> np.ndarray:
    """Per-photo weights: a photo of a source with n photos of its label weighs n^-``power``, scaled so that each
    label's mean weight is 1 (``power`` 1: every source of a label weighs the same; 0: all photos alike).

    Why: a label's photos mostly from one collection teach that collection's breed, place and framing as the label
    (``--source-power``, ``SOURCE_POWER``)."""
    weights = np.ones(len(targets))
    sources = np.asarray(sources, dtype=object)
    for t in np.unique(targets):
        of_label = targets == t
        for name in np.unique(sources[of_label]):
            rows = of_label & (sources == name)
            weights[rows] = float(rows.sum()) ** -power
        weights[of_label] *= of_label.sum() / weights[of_label].sum()
    return weights


def _loss(
    logits: torch.Tensor,
    y: torch.Tensor,
    weights: torch.Tensor,
    gate_index: int | None,
    sample_weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Weighted cross-entropy (class ``weights``, times ``sample_weights`` per sample when given); a cattle-only
    photo contributes ``-log(1 - p_not_cattle)``."""
    labelled = y >= 0
    total = logits.new_zeros(())
    count = logits.new_zeros(())
    if labelled.any():
        w = weights[y[labelled]]
        if sample_weights is not None:
            w = w * sample_weights[labelled]
        ce = torch.nn.functional.cross_entropy(logits[labelled], y[labelled], reduction="none")
        total = total + (w * ce).sum()
        count = count + w.sum()
    if gate_index is not None and (~labelled).any():
        logp = logits[~labelled].log_softmax(-1)
        not_gate = torch.cat([logp[:, :gate_index], logp[:, gate_index + 1 :]], dim=1).logsumexp(-1)
        total = total - not_gate.sum()
        count = count + (~labelled).sum()
    return total / count.clamp(min=1)


def predict_logits(
    model: torch.nn.Module, feats: torch.Tensor, start: int, mirror: bool = True, batch: int = 128
) -> np.ndarray:
    """Logits as inference computes them: of view 0 (the photo), averaged with view 1 (its mirror) if ``mirror``."""
    model.eval()
    views = [0, 1] if mirror and feats.shape[1] > 1 else [0]
    with torch.inference_mode():
        return np.mean(
            [
                np.concatenate(
                    [top(model, feats[s : s + batch, v].float(), start).numpy() for s in range(0, len(feats), batch)]
                )
                for v in views
            ],
            axis=0,
        ).astype(np.float64)


def fit_head(
    model: torch.nn.Module,
    feats: torch.Tensor,
    targets: np.ndarray,
    gate_index: int | None,
    l2: float,
    l2_gate: float,
    readout: tuple[torch.Tensor, list[int]] | None = None,
    mid_l2_factor: float = MID_L2_FACTOR,
    photo_weights: np.ndarray | None = None,
) -> torch.Tensor:
    """Set the classifier to an L2-regularised multinomial logistic regression on pooled features (photos, views, D).

    Why not SGD on the head: with ~300 triage photos and 1280 features the head overfits unless it is held back
    hard, and a strong ridge penalty on standardised features is the direct way to do that; full-batch L-BFGS
    finds its one optimum in seconds, deterministically. Every view of a photo is a sample. The gate row gets its
    own, weaker penalty (``l2_gate``): "is this cattle" has ~900 photos behind it, triage ~300. The
    standardisation is folded into the weights, so the saved model is a plain transformers classifier. Returns the
    features' scale (std), in which the penalty is measured.

    ``readout = (maps, slots)``: ``feats`` are the 1280 final features followed by the pooled last-block inputs
    ``maps`` (photos, views, C, H, W); the final features ``slots`` (one per label) leave the fit and carry the
    fitted weights of the last-block inputs instead (``models.lite.install_readout``). Feature columns past the
    network's own (``config.hidden_dim``) are mid-level ones, penalised at ``mid_l2_factor`` of their row's penalty.
    ``photo_weights`` multiply each photo's class weight (``source_balance``).
    """
    columns = torch.arange(feats.shape[-1])
    if readout is not None:
        columns = columns[~torch.isin(columns, torch.as_tensor(readout[1]))]
    x = feats.reshape(-1, feats.shape[-1])[:, columns].float()
    y = torch.as_tensor(np.repeat(targets, feats.shape[1]))
    mean, std = x.mean(dim=0), x.std(dim=0) + 1e-6
    z = (x - mean) / std
    n_labels = model.config.num_labels
    torch.manual_seed(SEED)
    linear = torch.nn.Linear(z.shape[1], n_labels)
    mid = columns >= model.config.hidden_dim
    penalty = ridge_penalty(n_labels, gate_index, l2, l2_gate) * torch.where(mid, mid_l2_factor, 1.0)
    weights = class_weights(targets, n_labels)
    per_sample = None
    if photo_weights is not None:
        per_sample = torch.as_tensor(np.repeat(photo_weights, feats.shape[1]), dtype=torch.float32)
    opt = torch.optim.LBFGS(linear.parameters(), max_iter=500, tolerance_grad=1e-6, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = _loss(linear(z), y, weights, gate_index, per_sample) + (penalty * linear.weight**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        weight = linear.weight / std
        bias = linear.bias - weight @ mean
        if readout is None:
            model.classifier.weight.copy_(weight)
            model.classifier.bias.copy_(bias)
            return std
        maps, slots = readout
        final = columns[~mid]
        scale = (largest_readout(weight[:, mid], maps) / READOUT_HEADROOM).clamp(min=1e-6)
        install_readout(model, weight[:, mid], scale, slots)
        model.classifier.weight.zero_()
        model.classifier.weight[:, final] = weight[:, ~mid]
        model.classifier.weight[range(len(slots)), slots] = scale
        model.classifier.bias.copy_(bias - READOUT_OFFSET * scale)
    return std


def largest_readout(weight: torch.Tensor, maps: torch.Tensor, batch: int = 64) -> torch.Tensor:
    """Per readout row, the largest ``|weight · x|`` over every pixel of ``maps`` (photos, views, C, H, W), a batch
    of photos at a time (the float16 cache is not copied to float32 whole)."""
    parts = [
        torch.einsum("kc,nvchw->knvhw", weight, maps[s : s + batch].float()).abs().flatten(1).amax(1)
        for s in range(0, len(maps), batch)
    ]
    return torch.stack(parts).amax(0)


def ridge_penalty(n_labels: int, gate_index: int | None, l2: float, l2_gate: float) -> torch.Tensor:
    """The classifier rows' penalties, (labels, 1): ``l2`` for triage rows, the weaker ``l2_gate`` for the gate row."""
    penalty = torch.full((n_labels, 1), float(l2))
    if gate_index is not None:
        penalty[gate_index] = l2_gate
    return penalty


# ---------------------------------------------------------------- operating point
def choose_operating_point(
    policy: triage.Policy,
    logits: np.ndarray,
    targets: np.ndarray,
    max_alert_missed: float = 0.02,
    min_coverage: float = 0.82,
    max_cattle_rejected: float = MAX_CATTLE_REJECTED,
    distances: np.ndarray | None = None,
    sources: np.ndarray | None = None,
    within: Predictions | None = None,
) -> triage.Policy:
    """Temperature, gate threshold and verdict thresholds from validation (out-of-fold) predictions.

    Gate: the threshold that turns away the most non-cattle photos (on a tie, the fewest cattle photos, then the
    lowest threshold) while turning away at most ``max_cattle_rejected`` of the cattle photos: a cattle photo turned
    away is a case never triaged, so 2 in 100 may be, inside the 3 % the project allows. With ``distances`` (each
    photo's out-of-fold ``triage.reference_distances``) the reference's threshold is chosen with it, among
    ``REFERENCE_QUANTILES`` of the cattle photos' distances or none, and where they hold distances to the non-cattle
    photos too, the neighbour check's margin, among ``NEIGHBOUR_MARGINS`` or none: the combination that turns away
    the most non-cattle photos within that share (then the fewest cattle photos, then the larger distance and
    margin). None may turn away more than that share of a notifiable disease's photos either: such a photo turned
    away is a case missed. "The most non-cattle photos" is their share averaged over their ``sources`` when given:
    the 498 ImageNet photos would otherwise outvote 116 goats (leave one source out: goats turned away 17 % against
    22 %, the ImageNet sample 96 % against 90 %). With ``within``, the limits hold for both sets of predictions and
    the share is the mean of both (each by source): the project asks for non-cattle turned away on new collections
    and on new photos of the collections it has, and the out-of-source share alone barely tells margins apart (a
    collection left out takes all of its kind with it: the whole goat collection left out leaves no goat to be near).

    Triage thresholds are scored as the app answers: a photo the gate or the reference turns away is not answered,
    and is a case missed when it shows a notifiable disease. Among thresholds that miss at most
    ``max_alert_missed`` of each alert class and answer at least ``min_coverage`` of the photos (the project asks
    for 80 %; 2 points of margin), the most accurate on answered photos; if none does, the same within the
    project's own limits (``ALERT_MISSED_LIMIT``, ``COVERAGE_LIMIT``). These tiers also call at most
    ``FALSE_ALARM_LIMIT`` of the other cattle photos a notifiable disease and answer ``ANSWERED_RIGHT_LIMIT`` of
    the photos right (else a missed case is avoided by calling many healthy animals sick). Where no threshold
    misses that few within the false-alarm limit (lumpy skin's label noise: photos without visible nodules), the
    limit on missed cases is the fewest that the false-alarm limit allows. Where that few are missed only below
    the coverage asked, the fewest missed at the coverage asked (margin first), up to ``NOISY_MISSED_LIMIT``. Else
    the most photos answered within the limits (missed cases, false alarms, answers right: with the same margin
    first, since the most answered sit on the limit); else within the first two alone; else the fewest missed.
    Never "the most accurate whatever it misses": a disease that spreads comes first, a false alarm (a movement
    stop, an authority's call) second, a wrong answer third; beyond label noise coverage gives way, because an
    unsure photo is *inconclusive — see a veterinarian*.

    ``within``: predictions for new photos of the collections trained on (pooled grouped CV), when ``logits`` are
    for collections left out. The coverage tiers then hold for ``within``, as the project asks them of the sources
    it has, and every limit on missed cases and false alarms for both; on the collections left out at least
    ``NEW_SOURCE_COVERAGE_LIMIT`` (with the same margin) must be answered, ``NEW_SOURCE_ANSWERED_RIGHT_LIMIT`` of
    them right, and their accuracy is what is maximised: a user's photos come from a collection the model never
    saw."""
    idx = {x: i for i, x in enumerate(policy.labels)}
    tri = np.isin(targets, [idx[x] for x in policy.triage_labels])
    tri_y = np.array([policy.triage_labels.index(policy.labels[t]) for t in targets[tri]])
    temperature = triage.fit_temperature(logits[tri][:, [idx[x] for x in policy.triage_labels]], tri_y)
    policy = replace(policy, temperature=temperature)
    if policy.gate_label is not None:
        policy = _choose_gate(policy, Predictions(logits, targets, distances, sources), max_cattle_rejected, within)
    # the first alert (lumpy skin) finely, the others coarsely: the grid is their product
    grids = [np.arange(0.05, 0.951, 0.025 if i == 0 else 0.05) for i in range(len(policy.alert_labels))]
    candidates = [
        replace(policy.with_alerts([round(float(a), 3) for a in alerts]), answer_threshold=round(float(b), 3))
        for alerts in itertools.product(*grids)
        for b in np.arange(0.5, 0.991, 0.01)
    ]
    new = _triage_scores(policy, candidates, Predictions(logits, targets, distances))
    known = new if within is None else _triage_scores(policy, candidates, within)
    alarms_ok = (new[:, 3] <= FALSE_ALARM_LIMIT) & (known[:, 3] <= FALSE_ALARM_LIMIT)
    answered_as_itself = (new[:, 4] >= ALERT_ANSWERED_LIMIT) & (known[:, 4] >= ALERT_ANSWERED_LIMIT)
    # the fewest cases each estimate can miss within the false-alarm limit
    floors = [s[alarms_ok, 2].min() if alarms_ok.any() else 1.0 for s in (new, known)]

    def missed_within(limit: float) -> np.ndarray:
        return (new[:, 2] <= max(limit, floors[0]) + 1e-9) & (known[:, 2] <= max(limit, floors[1]) + 1e-9)

    margin = min_coverage - COVERAGE_LIMIT

    def right(extra: float) -> np.ndarray:
        ok = known[:, 1] >= ANSWERED_RIGHT_LIMIT + extra
        return ok if within is None else ok & (new[:, 1] >= NEW_SOURCE_ANSWERED_RIGHT_LIMIT + extra)

    for missed_limit, coverage_at_least in ((max_alert_missed, min_coverage), (ALERT_MISSED_LIMIT, COVERAGE_LIMIT)):
        ok = alarms_ok & answered_as_itself & right(0.0) & missed_within(missed_limit)
        ok &= known[:, 0] >= coverage_at_least
        if within is not None:
            ok &= new[:, 0] >= NEW_SOURCE_COVERAGE_LIMIT + (margin if missed_limit == max_alert_missed else 0.0)
        if ok.any():
            return candidates[max(np.nonzero(ok)[0], key=lambda i: (round(new[i, 1], 4), new[i, 0]))]
    # that few missed cases only below the coverage asked: at the coverage asked, with the answers right, the fewest
    # missed cases, up to NOISY_MISSED_LIMIT (label noise: photos filed under lumpy skin that show no lesion)
    worst_missed = np.maximum(new[:, 2], known[:, 2])
    for extra in (margin, 0.0):
        ok = (
            alarms_ok
            & right(0.0)
            & (worst_missed <= NOISY_MISSED_LIMIT + 1e-9)
            & (known[:, 0] >= COVERAGE_LIMIT + extra)
        )
        if within is not None:
            ok &= new[:, 0] >= NEW_SOURCE_COVERAGE_LIMIT + extra
        if ok.any():
            return candidates[min(np.nonzero(ok)[0], key=lambda i: (round(worst_missed[i], 4), -round(new[i, 1], 4)))]
    # the answers not right enough at that coverage: within the limits on missed cases, false alarms and answers
    # right, the most photos answered (the rest are "inconclusive — see a veterinarian"); else without the answers'
    # limit; else the fewest missed cases. Coverage gives way here: an unsure answer is safe, a wrong one is not.
    within_limits = alarms_ok & missed_within(ALERT_MISSED_LIMIT)
    # answers right with the coverage tiers' margin first: the most answered sit on the limit
    for ok in (within_limits & right(margin), within_limits & right(0.0), within_limits):
        if ok.any():
            return candidates[max(np.nonzero(ok)[0], key=lambda i: (round(new[i, 0], 3), round(new[i, 1], 4)))]
    return candidates[min(range(len(candidates)), key=lambda i: (round(new[i, 2], 4), round(new[i, 3], 4), -new[i, 1]))]


@dataclass(frozen=True)
class Predictions:
    """Out-of-fold predictions of photos with known targets: logits, targets and (for a model with a reference)
    ``triage.reference_distances``."""

    logits: np.ndarray
    targets: np.ndarray
    distances: np.ndarray | None = None
    sources: np.ndarray | None = None
    """Each photo's collection: the gate is chosen on the share of non-cattle photos it turns away per collection."""


def _triage_scores(policy: triage.Policy, candidates: Sequence[triage.Policy], data: Predictions) -> np.ndarray:
    """Per candidate (``policy``'s gate, its own thresholds), over the cattle photos: coverage, accuracy of the
    answered, the largest share of an alert class missed, the largest share of other cattle photos called an
    alert, the smallest share of an alert class answered as itself. A photo the gate or reference turns away counts
    as unanswered, and as missed for an alert class."""
    idx = {x: i for i, x in enumerate(policy.labels)}
    tri = np.isin(data.targets, [idx[x] for x in policy.triage_labels])
    y = np.array([policy.triage_labels.index(policy.labels[t]) for t in data.targets[tri]])
    away = policy.turned_away(data.logits[tri], None if data.distances is None else data.distances[tri])
    probs = policy.triage_probabilities(data.logits[tri])
    alerts = [(i, y == i) for i in (policy.triage_labels.index(x) for x in policy.alert_labels) if (y == i).any()]
    out = np.zeros((len(candidates), 5))
    for n, p in enumerate(candidates):
        answer = np.where(away, -2, p.decide_indices(probs))  # -1 inconclusive, -2 turned away
        answered, correct = answer >= 0, answer == y
        out[n, 0] = answered.mean()
        out[n, 1] = correct[answered].mean() if answered.any() else 0.0
        out[n, 2] = max([((answer[a] != -1) & ~correct[a]).mean() for _, a in alerts], default=0.0)
        out[n, 3] = max([(answer[~a] == i).mean() for i, a in alerts if (~a).any()], default=0.0)
        out[n, 4] = min([(answer[a] == i).mean() for i, a in alerts], default=1.0)
    return out


def _choose_gate(
    policy: triage.Policy, new: Predictions, max_cattle_rejected: float, within: Predictions | None = None
) -> triage.Policy:
    """``choose_operating_point``'s gate threshold, reference distance and neighbour margin (see there)."""
    scored = [_GateView(policy, new)] + ([_GateView(policy, within)] if within is not None else [])
    grid = np.round(np.arange(0.05, 0.96, 0.05), 2)
    references: list[float | None] = [None]
    margins: list[float | None] = [None]
    first = scored[0]
    if first.distances is not None and (~first.is_gate).any():
        cattle = first.distances[~first.is_gate, 0]
        references += sorted({round(float(np.quantile(cattle, q)), 6) for q in REFERENCE_QUANTILES}, reverse=True)
        if first.distances.shape[1] > 1 and not np.isnan(first.distances[:, 1]).all():
            margins += sorted((float(m) for m in NEIGHBOUR_MARGINS), reverse=True)
    unlike = {  # per view, what the reference and the neighbour check turn away: the same for every gate threshold
        (reference, margin): [
            replace(policy, reference_distance=reference, neighbour_margin=margin).unlike_cattle(
                view.distances, len(view.gate_p)
            )
            for view in scored
        ]
        for reference, margin in itertools.product(references, margins)
    }
    best, best_key = None, None
    for threshold, reference, margin in itertools.product(grid, references, margins):
        shares, cattle_away = [], []
        for view, checked in zip(scored, unlike[reference, margin], strict=True):
            away = (view.gate_p >= threshold) | checked
            cattle_away.append(away[~view.is_gate].mean() if (~view.is_gate).any() else 0.0)
            if cattle_away[-1] > max_cattle_rejected or any(away[r].mean() > max_cattle_rejected for r in view.alerts):
                break
            shares.append(float(np.mean([away[rows].mean() for rows in view.not_cattle])) if view.not_cattle else 0.0)
        else:
            key = (float(np.mean(shares)), -cattle_away[0])
            if best_key is None or key > best_key:
                best, best_key = (threshold, reference, margin), key
    threshold, reference, margin = best if best is not None else (max(grid), None, None)
    return replace(policy, gate_threshold=float(threshold), reference_distance=reference, neighbour_margin=margin)


class _GateView:
    """One set of out-of-fold predictions as ``_choose_gate`` scores it: the gate's probabilities, which photos are
    not cattle (by source), which show a notifiable disease, and the reference's distances (photos × columns)."""

    def __init__(self, policy: triage.Policy, data: Predictions) -> None:
        self.gate_p = policy.gate_probability(data.logits)
        targets = np.asarray(data.targets)
        self.is_gate = targets == policy.labels.index(policy.gate_label)
        kinds = np.zeros(len(targets)) if data.sources is None else np.asarray(data.sources)
        self.not_cattle = [self.is_gate & (kinds == k) for k in np.unique(kinds[self.is_gate])]
        self.alerts = [rows for x in policy.alert_labels if (rows := targets == policy.labels.index(x)).any()]
        self.distances = None if data.distances is None else triage.distance_columns(data.distances)


# ---------------------------------------------------------------- metrics
def evaluate(
    policy: triage.Policy, logits: np.ndarray, targets: np.ndarray, distances: np.ndarray | None = None
) -> dict[str, object]:
    """Triage and gate metrics for photos with known targets (see the README's metrics table); ``distances``: their
    ``triage.reference_distance``, for a policy with a reference."""
    idx = {x: i for i, x in enumerate(policy.labels)}
    verdicts = np.array(policy.verdicts(logits, distances))
    tri = np.isin(targets, [idx[x] for x in policy.triage_labels])
    out: dict[str, object] = {}
    if tri.any():
        truth = np.array([policy.labels[t] for t in targets[tri]])
        probs = policy.triage_probabilities(logits[tri])
        raw = policy.triage_probabilities(logits[tri], temperature=1.0)
        y = np.array([policy.triage_labels.index(t) for t in truth])
        top1 = np.array(policy.triage_labels)[probs.argmax(axis=1)]
        recall = {x: float((top1[truth == x] == x).mean()) for x in policy.triage_labels if (truth == x).any()}
        v = verdicts[tri]
        answered = (v != triage.INCONCLUSIVE) & (v != triage.NOT_CATTLE)
        columns = [*policy.triage_labels, triage.INCONCLUSIVE, *([triage.NOT_CATTLE] if policy.gate_label else [])]
        out["triage_photos"] = int(tri.sum())
        out["accuracy"] = float((top1 == truth).mean())
        out["balanced_accuracy"] = float(np.mean(list(recall.values())))
        out["recall"] = recall
        out["confusion"] = {
            "rows_true": list(policy.triage_labels),
            "columns_verdict": columns,
            "counts": [[int(((truth == t) & (v == c)).sum()) for c in columns] for t in policy.triage_labels],
        }
        out["ece_before"] = triage.expected_calibration_error(raw, y)
        out["ece_after"] = triage.expected_calibration_error(probs, y)
        out["coverage"] = float(answered.mean())
        out["answered_accuracy"] = float((v[answered] == truth[answered]).mean()) if answered.any() else None
        for label in policy.alert_labels:  # a notifiable case answered as something else: missed
            alert = truth == label
            if alert.any():
                missed = float(((v[alert] != label) & (v[alert] != triage.INCONCLUSIVE)).mean())
                out["alert_missed" if label == policy.alert_labels[0] else f"{label}_missed"] = missed
            others = (truth != label) & (truth != triage.NOT_CATTLE)
            if others.any():  # a false alarm: other cattle called this notifiable disease
                out[f"called_{label}"] = float((v[others] == label).mean())
    if policy.gate_label:
        gated = verdicts == triage.NOT_CATTLE
        is_gate = targets == idx[policy.gate_label]
        if (~is_gate).any():
            out["cattle_rejected"] = float(gated[~is_gate].mean())
            out["cattle_photos"] = int((~is_gate).sum())
        if is_gate.any():
            out["not_cattle_rejected"] = float(gated[is_gate].mean())
            out["not_cattle_photos"] = int(is_gate.sum())
    return out


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


def _kind(path: Path, source: str) -> str:
    """A photo's kind for the per-kind table: its folder, and its collection where that is not the folder."""
    folder = Path(path).parent.name
    if source == folder or source.startswith(f"{folder} · "):  # a relabelled photo's source names its folder
        return source
    return f"{folder} · {source}"


def _per_group(
    policy: triage.Policy,
    logits: np.ndarray,
    targets: np.ndarray,
    keys: np.ndarray,
    method: np.ndarray,
    distances: np.ndarray | None = None,
) -> dict[str, dict[str, object]]:
    """Per source or kind: how its photos were predicted, their true label(s) and the verdicts they got."""
    verdicts = np.full(len(targets), "", dtype=object)
    scored = method != ""
    verdicts[scored] = policy.verdicts(logits[scored], None if distances is None else distances[scored])
    out = {}
    for key in sorted(set(keys[scored])):
        rows = scored & (keys == key)
        out[str(key)] = {
            "photos": int(rows.sum()),
            "labels": {policy.labels[t]: int((targets[rows] == t).sum()) for t in np.unique(targets[rows])},
            "method": " + ".join(sorted(set(method[rows]))),
            "verdicts": {str(v): int((verdicts[rows] == v).sum()) for v in sorted(set(verdicts[rows]))},
        }
    return out


# ---------------------------------------------------------------- main
def train(
    data: Dataset,
    out_dir: Path,
    config: TrainConfig = TrainConfig(),
    *,
    cattle_as: str | None = None,
    feature_cache: Path | None = None,
    predictions: Path | None = None,
) -> dict[str, object]:
    """Everything ``python -m models.train`` does, with the settings ``config``; returns what it writes to
    ``metrics.json``.

    Apart from the settings because they change no fit: ``cattle_as`` is recorded in ``metrics.json`` (``scan``
    applied it), ``feature_cache`` (development) reuses the trunk features of an earlier run with the same photos,
    views, seed and weights; ``predictions`` (development) saves the out-of-source logits and distances the policy
    was chosen on, with each photo's target, collection, kind and file, for ``bench/operating_points.py``.
    """
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    id2label = dict(enumerate(data.labels))
    triage_labels = [x for x in data.labels if x != data.gate_label]
    alerts = {x: 0.5 for x in triage.NOTIFIABLE if x in triage_labels}
    readout = config.tune == "head" and config.mid_features
    if readout and len(data.labels) > READOUT_CHANNELS:
        raise DataError(f"at most {READOUT_CHANNELS} labels with mid-level features; use --no-mid-features")
    base = build_lite(
        id2label, config.pretrained, image_size=config.image_size, readout=readout, variant=config.backbone
    )
    last = len(base.efficientnet.encoder.blocks)
    top = last if config.tune_from is None else config.tune_from
    upto = top if config.tune == "top" else last - 1 if readout else last
    key = [
        [str(p) for p in data.paths],
        config.views,
        config.seed,
        config.pretrained,
        config.phash_distance,
        upto,
        config.image_size,
        config.backbone,
    ]
    cached = torch.load(feature_cache) if feature_cache is not None and feature_cache.exists() else None
    if cached is not None and cached["key"] == key:  # development only: same photos, views, seed, weights
        feats, data.groups = cached["feats"], cached["groups"].numpy()
    else:
        feats, thumbs = cache_features(base, data.paths, config.views, upto, config.image_size, seed=config.seed)
        data.groups = phash_groups(thumbs, config.phash_distance)
        del thumbs
        if feature_cache is not None:
            torch.save({"key": key, "feats": feats, "groups": torch.as_tensor(data.groups)}, feature_cache)
    pooled_feats = pool_views(base, feats, upto)  # of the ImageNet top, where every fit starts
    if config.pretrained:  # random weights' features say nothing about what a photo shows
        data.groups = join_similar(data.groups, pooled_feats[:, 0])
    held = holdout_mask(data.groups, data.targets, config.holdout, seed=config.seed)
    fit = ~held
    slots: list[int] = []
    if readout:  # the final features of least variance give their places to the readout (labels unused)
        slots = sorted(pooled_feats[fit].flatten(0, 1).var(0).argsort()[: len(data.labels)].tolist())
        head_feats = torch.cat([pooled_feats, feats.float().mean(dim=(3, 4))], dim=-1)
    elif config.tune == "head":
        feats = pooled_feats
    initial = copy.deepcopy(base.state_dict())
    gate_index = data.labels.index(data.gate_label) if data.gate_label else None
    policy = triage.Policy.from_dict(
        data.labels,
        {
            "gate_label": data.gate_label,
            "triage_labels": triage_labels,
            "alerts": alerts,
            "mirror": config.views > 1,
            "reference_k": config.reference_k,
            "neighbour_k": config.neighbour_k,
        },
    )
    # the reference: the pooled features the saved classifier reads (its readout's slots aside), photo and mirror
    # averaged as inference does; a photo is scored against the cattle photos its fit saw
    use_reference = config.reference_k > 0 and config.tune == "head" and gate_index is not None
    columns = np.setdiff1d(np.arange(pooled_feats.shape[-1]), slots)
    in_reference = data.targets != gate_index
    reference_x = triage.reference_features(
        (pooled_feats[:, :2].mean(dim=1) if policy.mirror else pooled_feats[:, 0]).numpy(), columns
    )

    def distances_of(scored: np.ndarray, fitted: np.ndarray) -> np.ndarray:
        cattle, non_cattle = fitted[in_reference[fitted]], fitted[~in_reference[fitted]]
        others = reference_x[non_cattle] if config.neighbour_k > 0 else None
        return triage.reference_distances(policy, reference_x[scored], reference_x[cattle], others)

    sources = data.sources or [p.parent.name for p in data.paths]

    def fit_on(rows: np.ndarray, run_seed: int, desc: str) -> None:
        base.load_state_dict(initial)
        w = source_balance(data.targets[rows], [sources[i] for i in rows], config.source_power)
        if readout:
            readout_of = (feats[rows], slots)
            fit_head(
                base,
                head_feats[rows],
                data.targets[rows],
                gate_index,
                config.l2,
                config.l2_gate,
                readout_of,
                config.mid_l2_factor,
                w,
            )
        elif config.tune == "head":
            fit_head(base, feats[rows], data.targets[rows], gate_index, config.l2, config.l2_gate, photo_weights=w)
        else:
            train_top(
                base,
                feats[rows],
                pooled_feats[rows],
                data.targets[rows],
                gate_index,
                config.epochs,
                config.lr,
                l2=config.l2,
                l2_gate=config.l2_gate,
                l2sp=config.l2sp,
                start=upto,
                seed=run_seed,
                desc=desc,
                max_steps=config.max_steps,
            )

    def logits_of(rows: np.ndarray) -> np.ndarray:
        return predict_logits(base, feats[rows], upto, mirror=policy.mirror)

    # repeated grouped cross-validation on the fitting part: every photo is predicted once per repeat by a model
    # that saw neither it nor its near-duplicates; the pooled out-of-fold logits choose temperature and thresholds
    fit_idx = np.nonzero(fit)[0]
    oof_logits, oof_distances, repeat_bal, trained_on = [], [], [], []
    triage_indices = [data.labels.index(x) for x in triage_labels]
    for r in range(config.cv_repeats if config.folds > 1 else 0):
        fold_of = grouped_folds(data.groups[fit], data.targets[fit], config.folds, seed=config.seed + r)
        oof = np.zeros((len(fit_idx), len(data.labels)))
        oof_d = np.full((len(fit_idx), 2), np.nan)
        for k in range(config.folds):
            rows = subsample_groups(
                fit_idx[fold_of != k], data.groups, config.train_fraction, seed=config.seed + r * config.folds + k
            )
            trained_on.append(int(np.isin(data.targets[rows], triage_indices).sum()))
            fit_on(rows, config.seed + k, f"repeat {r + 1}/{config.cv_repeats} fold {k + 1}/{config.folds}")
            oof[fold_of == k] = logits_of(fit_idx[fold_of == k])
            if use_reference:
                oof_d[fold_of == k] = distances_of(fit_idx[fold_of == k], rows)
        oof_logits.append(oof)
        oof_distances.append(oof_d)
        repeat_bal.append(evaluate(policy, oof, data.targets[fit]).get("balanced_accuracy"))
    # leave-one-source-out: each collection is predicted by a model that saw none of it (except the labels only it
    # has: those photos keep their grouped-CV prediction). The policy is chosen on these predictions when there
    # are any, because a new user's photos come from a collection the model never saw.
    fit_targets = data.targets[fit]
    fit_sources = np.array([sources[i] for i in fit_idx], dtype=object)
    out_of_source = oof_logits[0].copy() if oof_logits else np.full((len(fit_idx), len(data.labels)), np.nan)
    out_of_source_d = oof_distances[0].copy() if oof_distances else np.full((len(fit_idx), 2), np.nan)
    method = np.full(len(fit_idx), "grouped CV" if oof_logits else "", dtype=object)
    left_out = sources_to_leave_out(fit_targets, fit_sources) if config.leave_source_out else {}
    for name, mask in tqdm(left_out.items(), desc="leave one source out", unit="source"):
        fit_on(fit_idx[~mask], config.seed, f"without {name}")
        out_of_source[mask] = logits_of(fit_idx[mask])
        if use_reference:
            out_of_source_d[mask] = distances_of(fit_idx[mask], fit_idx[~mask])
        method[mask] = "source left out"
    scored = method != ""
    out_of_source_d = out_of_source_d if use_reference else None
    cv: dict[str, object] = {}
    # every repeat's out-of-fold predictions pooled: the estimate for new photos of the collections trained on
    all_oof = np.concatenate(oof_logits) if oof_logits else np.zeros((0, len(data.labels)))
    all_targets = np.tile(data.targets[fit], len(oof_logits))
    all_d = np.concatenate(oof_distances) if use_reference and oof_logits else None
    if left_out:
        policy = choose_operating_point(
            policy,
            out_of_source[scored],
            fit_targets[scored],
            max_cattle_rejected=config.max_cattle_rejected,
            distances=None if out_of_source_d is None else out_of_source_d[scored],
            sources=fit_sources[scored],
            within=Predictions(all_oof, all_targets, all_d, np.tile(fit_sources, len(oof_logits)))
            if oof_logits
            else None,
        )
    if oof_logits:
        if not left_out:
            policy = choose_operating_point(
                policy, all_oof, all_targets, max_cattle_rejected=config.max_cattle_rejected, distances=all_d
            )
        cv = evaluate(policy, all_oof, all_targets, all_d) | {
            "repeats": config.cv_repeats,
            "balanced_accuracy_per_repeat": repeat_bal,
            "train_fraction": config.train_fraction,
            "triage_photos_per_fit": float(np.mean(trained_on)),
        }

    by_source: dict[str, object] = {}
    if left_out:
        kinds = np.array([_kind(data.paths[i], sources[i]) for i in fit_idx], dtype=object)
        scored_d = None if out_of_source_d is None else out_of_source_d[scored]
        by_source = evaluate(policy, out_of_source[scored], fit_targets[scored], scored_d) | {
            "sources_left_out": sorted(left_out),
            "per_source": _per_group(policy, out_of_source, fit_targets, fit_sources, method, out_of_source_d),
            "per_kind": _per_group(policy, out_of_source, fit_targets, kinds, method, out_of_source_d),
        }
        if predictions is not None:
            np.savez_compressed(
                predictions,
                labels=np.array(data.labels),
                logits=out_of_source[scored],
                distances=np.full((int(scored.sum()), 2), np.nan) if scored_d is None else scored_d,
                targets=fit_targets[scored],
                sources=fit_sources[scored].astype(str),
                kinds=kinds[scored].astype(str),
                method=method[scored].astype(str),
                files=np.array([str(data.paths[i]) for i in fit_idx[scored]]),
                cv_logits=all_oof,
                cv_targets=all_targets,
                cv_distances=np.full((len(all_targets), 2), np.nan) if all_d is None else all_d,
            )

    fit_on(fit_idx, config.seed, "final")
    held_idx = np.nonzero(held)[0]
    held_d = distances_of(held_idx, fit_idx) if use_reference else None
    held_metrics = evaluate(policy, logits_of(held_idx), data.targets[held], held_d) if held.any() else {}
    seconds = time.perf_counter() - started

    base.config.triage = policy.to_dict()
    out_dir.mkdir(parents=True, exist_ok=True)
    base.save_pretrained(out_dir)
    reference_file = out_dir / triage.REFERENCE_FILE
    reference_file.unlink(missing_ok=True)  # an earlier run's, into the same folder
    if policy.uses_reference:
        non_cattle = reference_x[fit_idx[~in_reference[fit_idx]]] if policy.neighbour_margin is not None else None
        triage.save_reference(out_dir, reference_x[fit_idx[in_reference[fit_idx]]], columns, non_cattle)
    processor = image_processor(config.image_size)
    processor.save_pretrained(out_dir)
    # transformers writes the backend-neutral name, which picks the torchvision backend where torchvision is
    # installed (a Space): name the PIL class we trained with, so every install preprocesses the same way.
    processor_file = out_dir / "preprocessor_config.json"
    processor_config = json.loads(processor_file.read_text())
    processor_config["image_processor_type"] = type(processor).__name__
    processor_file.write_text(json.dumps(processor_config, indent=2) + "\n")
    metrics = {
        "labels": data.labels,
        "policy": policy.to_dict(),
        "photos": {x: int((data.targets == i).sum()) for i, x in enumerate(data.labels)}
        | ({"cattle_only": int((data.targets == CATTLE_ONLY).sum())} if data.gate_label else {}),
        "cattle_as": cattle_as,
        "split": {
            "method": f"near-duplicate groups (phash ≤ {config.phash_distance} bits"
            + (f" or ImageNet-feature cosine ≥ {FEATURE_LINK_COSINE}" if config.pretrained else "")
            + ", chained) never straddle a split",
            "groups": len(np.unique(data.groups)),
            "holdout_fraction": config.holdout,
            "holdout_photos": int(held.sum()),
            "holdout_files": [f"{p.parent.name}/{p.name}" for p in np.array(data.paths, dtype=object)[held]],
            "cv_folds": config.folds,
            "cv_repeats": config.cv_repeats,
            "seed": config.seed,
        },
        "training": {
            "backbone": config.backbone,
            "tune": config.tune,
            "image_size": config.image_size,
            "views": config.views,
            "mirror_averaged": policy.mirror,
        }
        | (
            {"mid_features": {"input_of_block": last - 1, "slots": slots, "l2_factor": config.mid_l2_factor}}
            if readout
            else {}
        )
        | {"l2": config.l2, "l2_gate": config.l2_gate, "source_power": config.source_power}
        | {"reference_k": config.reference_k if use_reference else 0}
        | {"neighbour_k": config.neighbour_k if use_reference else 0}
        | (
            {}
            if config.tune == "head"
            else {"tuned_from_block": top, "epochs": config.epochs, "lr": config.lr, "l2sp": config.l2sp}
        )
        | {"seconds": round(seconds, 1), "torch_threads": torch.get_num_threads()},
        "leave_one_source_out": by_source,
        "cross_validation": cv,
        "holdout": held_metrics,
    }
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def _headline(metrics: dict[str, object]) -> dict[str, object]:
    loso = dict(metrics.get("leave_one_source_out") or {})
    return {k: v for k, v in loso.items() if k not in ("per_source", "per_kind", "confusion")}


def build_parser() -> argparse.ArgumentParser:
    """``main``'s options: the data, output and machine ones here, every training setting from ``TrainConfig``."""
    parser = argparse.ArgumentParser(prog="python -m models.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path, help="one sub-folder per triage class (breed_* = cattle, no label)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="model folder to write")
    parser.add_argument("--classes", nargs="+", help="triage class folders to use (default: all but breed_*)")
    parser.add_argument(
        "--not-cattle",
        type=Path,
        nargs="+",
        help="folders of photos that are not cattle: adds the not_cattle gate label",
    )
    parser.add_argument(
        "--sources",
        type=Path,
        help="provenance CSV (file, source_repo) naming each photo's collection; else its folder",
    )
    parser.add_argument("--extra-cattle", type=Path, nargs="*", default=[], help="more cattle photos, no triage label")
    parser.add_argument(
        "--cattle-as", help="triage class for breed_*/--extra-cattle photos (e.g. normal_skin); default: none"
    )
    parser.add_argument("--feature-cache", type=Path, help="development: reuse the trunk features of an earlier run")
    parser.add_argument(
        "--save-predictions",
        type=Path,
        help="development: the out-of-source predictions as .npz (bench/operating_points)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    add_settings(parser.add_argument_group("training settings (models.train.TrainConfig)"), TrainConfig)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI; a data or settings error is one ``error:`` line and exit 2 (a user's mistake, not a traceback)."""
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        config = from_args(TrainConfig, args)
        data = scan(args.data_dir, args.classes, args.not_cattle, args.extra_cattle, args.cattle_as, args.sources)
        metrics = train(
            data,
            args.output,
            config,
            cattle_as=args.cattle_as,
            feature_cache=args.feature_cache,
            predictions=args.save_predictions,
        )
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    shown = ("policy", "cross_validation", "holdout")
    print(json.dumps({k: metrics[k] for k in shown} | {"leave_one_source_out": _headline(metrics)}, indent=2))
    print(f"wrote {args.output} in {metrics['training']['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
