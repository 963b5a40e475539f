"""Every setting of a training run: ``TrainConfig``, the one settings object (``train``'s recipe and the CLI's
options, built from its fields), and the constants its defaults and the policy's limits are made of. The
measurements behind each default: ``docs/triage-model.md`` ("Why the training defaults")."""

from __future__ import annotations

import typing
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np

from models.lite import VARIANTS
from pipeline.settings import flag, setting

SEED = 0
L2 = 0.5
"""Ridge penalty of the classifier's triage rows on standardised features (both ``--tune`` modes)."""
L2_GATE = 0.01
"""The gate row's penalty: weaker, because the gate has three times the photos behind it."""
MID_L2_FACTOR = 0.25
"""The mid-level features' weights are penalised at this fraction of their row's penalty: held back as hard as the
1280 final features, the 192 mid-level ones were under-used."""
TOP_EPOCHS = 5
TOP_LR = 1e-4
L2SP = 0.01
"""``--tune top``: epochs, Adam's learning rate and the L2-SP penalty."""
READOUT_HEADROOM = 2.0
"""A readout row is scaled so that its largest value on the training photos' pixels travels at ±2, inside
ReLU6's ±3 linear range (``models.lite.install_readout``): a photo may exceed the training range by half."""
CV_FOLDS = 20
"""Grouped CV folds: each fold's model sees 95 % of the photos, so the out-of-fold predictions that choose the
temperature and thresholds, and the estimate, come from models close to the shipped one, fitted on all of them."""
FEATURE_LINK_COSINE = 0.6
"""Near-duplicates a perceptual hash misses (zoomed, rotated and stretched copies) are joined from this cosine of
their centred ImageNet features: the lowest before chaining runs away."""
SOURCE_POWER = 0.5
"""Within a label, a source of n photos weighs n^-0.5 per photo (normalised to the label's mean weight): one large
web collection otherwise teaches its breed, place and framing as the label."""
MAX_CATTLE_REJECTED = 0.02
"""The gate turns away at most 2 % of the cattle photos of collections left out (the project allows 3 %)."""
REFERENCE_K = 5
"""A photo's distance to the training cattle is to its 5 most similar (``models.triage.reference_distance``): one
look-alike photo should not vouch alone."""
NEIGHBOUR_K = 10
"""A photo's similarity to the training non-cattle photos is to its 10 most similar (``models.triage``'s neighbour
check)."""
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
"""Cases missed that ``choose_operating_point`` accepts to answer the coverage asked: label noise (photos filed
under lumpy skin that show no lesion), which a perfect model misses too."""
TRAINED_IMAGE_SIZE = 320
"""Photos are resized to this square, not ImageNet's 224: most training photos are 256 px, and the nodules of
lumpy skin then span more of the frozen backbone's 10×10 final map."""


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
