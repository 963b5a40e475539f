"""A training run, step by step: the network and its cached features, the near-duplicate groups and the held-out
split, repeated grouped cross-validation and leave-one-source-out fits, the operating point chosen on their
predictions, the final fit on every photo, then the model folder and ``metrics.json``."""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from models import triage
from models.lite import READOUT_CHANNELS, build_lite, image_processor
from models.train.config import FEATURE_LINK_COSINE, DataError, TrainConfig
from models.train.data import CATTLE_ONLY, Dataset
from models.train.evaluation import _kind, _per_group, evaluate
from models.train.features import cache_features, pool_views
from models.train.groups import (
    grouped_folds,
    holdout_mask,
    join_similar,
    phash_groups,
    sources_to_leave_out,
    subsample_groups,
)
from models.train.head import fit_head, predict_logits, source_balance, train_top
from models.train.operating_point import Predictions, choose_operating_point


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
    fits = _Fits.prepare(data, config, feature_cache)
    cv = _cross_validate(fits)
    loso = _leave_sources_out(fits, cv)
    policy, cv_metrics = _choose_policy(fits, cv, loso)
    by_source = _by_source(fits, policy, loso, predictions, cv)
    fits.fit_on(fits.fit_idx, config.seed, "final")
    held_idx = np.nonzero(fits.held)[0]
    held_d = fits.distances_of(held_idx, fits.fit_idx, policy) if fits.use_reference else None
    held_metrics = (
        evaluate(policy, fits.logits_of(held_idx), data.targets[fits.held], held_d) if fits.held.any() else {}
    )
    seconds = time.perf_counter() - started
    _save_model(fits, policy, out_dir)
    metrics = _metrics(fits, policy, cattle_as, seconds) | {
        "leave_one_source_out": by_source,
        "cross_validation": cv_metrics,
        "holdout": held_metrics,
    }
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


@dataclass
class _Fits:
    """What every fit of a run shares: the network (its ImageNet start kept in ``initial``), the cached features,
    the photos fitted on (``fit``) and held out, the untuned policy, the reference's features; ``fit_on`` fits the
    network's trained part on some photos, ``logits_of`` and ``distances_of`` predict others."""

    data: Dataset
    config: TrainConfig
    base: torch.nn.Module
    readout: bool
    last: int
    top: int
    upto: int
    feats: torch.Tensor
    pooled_feats: torch.Tensor
    held: np.ndarray
    slots: list[int] = field(default_factory=list)
    head_feats: torch.Tensor | None = None
    initial: dict = field(default_factory=dict)
    gate_index: int | None = None
    policy: triage.Policy | None = None
    use_reference: bool = False
    columns: np.ndarray | None = None
    in_reference: np.ndarray | None = None
    reference_x: np.ndarray | None = None
    sources: list[str] = field(default_factory=list)

    @property
    def fit(self) -> np.ndarray:
        return ~self.held

    @property
    def fit_idx(self) -> np.ndarray:
        return np.nonzero(self.fit)[0]

    @classmethod
    def prepare(cls, data: Dataset, config: TrainConfig, feature_cache: Path | None) -> _Fits:
        """The network, its trunk features (``data.groups`` set from them) and the held-out split."""
        readout = config.tune == "head" and config.mid_features
        if readout and len(data.labels) > READOUT_CHANNELS:
            raise DataError(f"at most {READOUT_CHANNELS} labels with mid-level features; use --no-mid-features")
        base = build_lite(
            dict(enumerate(data.labels)),
            config.pretrained,
            image_size=config.image_size,
            readout=readout,
            variant=config.backbone,
        )
        last = len(base.efficientnet.encoder.blocks)
        top = last if config.tune_from is None else config.tune_from
        upto = top if config.tune == "top" else last - 1 if readout else last
        feats = _trunk_features(base, data, config, upto, feature_cache)
        pooled_feats = pool_views(base, feats, upto)  # of the ImageNet top, where every fit starts
        if config.pretrained:  # random weights' features say nothing about what a photo shows
            data.groups = join_similar(data.groups, pooled_feats[:, 0])
        held = holdout_mask(data.groups, data.targets, config.holdout, seed=config.seed)
        fits = cls(data, config, base, readout, last, top, upto, feats, pooled_feats, held)
        fits._start()
        return fits

    def _start(self) -> None:
        """The readout's slots, the features the head reads, the untuned policy and the reference's features."""
        data, config, pooled_feats = self.data, self.config, self.pooled_feats
        if self.readout:  # the final features of least variance give their places to the readout (labels unused)
            self.slots = sorted(pooled_feats[self.fit].flatten(0, 1).var(0).argsort()[: len(data.labels)].tolist())
            self.head_feats = torch.cat([pooled_feats, self.feats.float().mean(dim=(3, 4))], dim=-1)
        elif config.tune == "head":
            self.feats = pooled_feats
        self.initial = copy.deepcopy(self.base.state_dict())
        self.gate_index = data.labels.index(data.gate_label) if data.gate_label else None
        triage_labels = [x for x in data.labels if x != data.gate_label]
        self.policy = triage.Policy.from_dict(
            data.labels,
            {
                "gate_label": data.gate_label,
                "triage_labels": triage_labels,
                "alerts": {x: 0.5 for x in triage.NOTIFIABLE if x in triage_labels},
                "mirror": config.views > 1,
                "reference_k": config.reference_k,
                "neighbour_k": config.neighbour_k,
            },
        )
        # the reference: the pooled features the saved classifier reads (its readout's slots aside), photo and
        # mirror averaged as inference does; a photo is scored against the cattle photos its fit saw
        self.use_reference = config.reference_k > 0 and config.tune == "head" and self.gate_index is not None
        self.columns = np.setdiff1d(np.arange(pooled_feats.shape[-1]), self.slots)
        self.in_reference = data.targets != self.gate_index
        mirrored = pooled_feats[:, :2].mean(dim=1) if self.policy.mirror else pooled_feats[:, 0]
        self.reference_x = triage.reference_features(mirrored.numpy(), self.columns)
        self.sources = data.sources or [p.parent.name for p in data.paths]

    def distances_of(self, scored: np.ndarray, fitted: np.ndarray, policy: triage.Policy) -> np.ndarray:
        """``triage.reference_distances`` of photos ``scored`` to the photos ``fitted`` (cattle; and non-cattle)."""
        cattle, non_cattle = fitted[self.in_reference[fitted]], fitted[~self.in_reference[fitted]]
        others = self.reference_x[non_cattle] if self.config.neighbour_k > 0 else None
        return triage.reference_distances(policy, self.reference_x[scored], self.reference_x[cattle], others)

    def fit_on(self, rows: np.ndarray, run_seed: int, desc: str) -> None:
        """The network's trained part fitted on photos ``rows``, from ImageNet's start."""
        config, targets = self.config, self.data.targets[rows]
        self.base.load_state_dict(self.initial)
        w = source_balance(targets, [self.sources[i] for i in rows], config.source_power)
        if self.readout:
            readout_of = (self.feats[rows], self.slots)
            fit_head(
                self.base,
                self.head_feats[rows],
                targets,
                self.gate_index,
                config.l2,
                config.l2_gate,
                readout_of,
                config.mid_l2_factor,
                w,
            )
        elif config.tune == "head":
            fit_head(self.base, self.feats[rows], targets, self.gate_index, config.l2, config.l2_gate, photo_weights=w)
        else:
            train_top(
                self.base,
                self.feats[rows],
                self.pooled_feats[rows],
                targets,
                self.gate_index,
                config.epochs,
                config.lr,
                l2=config.l2,
                l2_gate=config.l2_gate,
                l2sp=config.l2sp,
                start=self.upto,
                seed=run_seed,
                desc=desc,
                max_steps=config.max_steps,
            )

    def logits_of(self, rows: np.ndarray) -> np.ndarray:
        return predict_logits(self.base, self.feats[rows], self.upto, mirror=self.policy.mirror)


def _trunk_features(
    base: torch.nn.Module, data: Dataset, config: TrainConfig, upto: int, feature_cache: Path | None
) -> torch.Tensor:
    """The trunk outputs of every photo's views, and ``data.groups`` by perceptual hash; from ``feature_cache``
    when it holds those of the same photos, views, seed and weights (development), else computed (and saved
    there)."""
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
        data.groups = cached["groups"].numpy()
        return cached["feats"]
    feats, thumbs = cache_features(base, data.paths, config.views, upto, config.image_size, seed=config.seed)
    data.groups = phash_groups(thumbs, config.phash_distance)
    del thumbs
    if feature_cache is not None:
        torch.save({"key": key, "feats": feats, "groups": torch.as_tensor(data.groups)}, feature_cache)
    return feats


@dataclass
class _CrossValidation:
    """Repeated grouped CV's out-of-fold logits and distances (one array per repeat), the balanced accuracy of each
    repeat and the triage photos each fit trained on."""

    logits: list[np.ndarray] = field(default_factory=list)
    distances: list[np.ndarray] = field(default_factory=list)
    balanced: list[object] = field(default_factory=list)
    trained_on: list[int] = field(default_factory=list)


def _cross_validate(fits: _Fits) -> _CrossValidation:
    """Repeated grouped cross-validation on the fitting part: every photo is predicted once per repeat by a model
    that saw neither it nor its near-duplicates; the pooled out-of-fold logits choose temperature and thresholds."""
    data, config, fit_idx = fits.data, fits.config, fits.fit_idx
    cv = _CrossValidation()
    triage_indices = [data.labels.index(x) for x in fits.policy.triage_labels]
    for r in range(config.cv_repeats if config.folds > 1 else 0):
        fold_of = grouped_folds(data.groups[fits.fit], data.targets[fits.fit], config.folds, seed=config.seed + r)
        oof = np.zeros((len(fit_idx), len(data.labels)))
        oof_d = np.full((len(fit_idx), 2), np.nan)
        for k in range(config.folds):
            rows = subsample_groups(
                fit_idx[fold_of != k], data.groups, config.train_fraction, seed=config.seed + r * config.folds + k
            )
            cv.trained_on.append(int(np.isin(data.targets[rows], triage_indices).sum()))
            fits.fit_on(rows, config.seed + k, f"repeat {r + 1}/{config.cv_repeats} fold {k + 1}/{config.folds}")
            oof[fold_of == k] = fits.logits_of(fit_idx[fold_of == k])
            if fits.use_reference:
                oof_d[fold_of == k] = fits.distances_of(fit_idx[fold_of == k], rows, fits.policy)
        cv.logits.append(oof)
        cv.distances.append(oof_d)
        cv.balanced.append(evaluate(fits.policy, oof, data.targets[fits.fit]).get("balanced_accuracy"))
    return cv


@dataclass
class _SourcesLeftOut:
    """Leave-one-source-out: each photo's logits and distances from a model that did not see its collection (or,
    for a label only its collection has, its first CV repeat's), how it was predicted (``method``), the masks of
    the photos each collection's fit left out."""

    logits: np.ndarray
    distances: np.ndarray | None
    method: np.ndarray
    left_out: dict[str, np.ndarray]
    sources: np.ndarray
    targets: np.ndarray

    @property
    def scored(self) -> np.ndarray:
        return self.method != ""


def _leave_sources_out(fits: _Fits, cv: _CrossValidation) -> _SourcesLeftOut:
    """Each collection predicted by a model that saw none of it (except the labels only it has: those photos keep
    their grouped-CV prediction). The policy is chosen on these predictions when there are any, because a new
    user's photos come from a collection the model never saw."""
    data, config, fit_idx = fits.data, fits.config, fits.fit_idx
    fit_targets = data.targets[fits.fit]
    fit_sources = np.array([fits.sources[i] for i in fit_idx], dtype=object)
    out_of_source = cv.logits[0].copy() if cv.logits else np.full((len(fit_idx), len(data.labels)), np.nan)
    out_of_source_d = cv.distances[0].copy() if cv.distances else np.full((len(fit_idx), 2), np.nan)
    method = np.full(len(fit_idx), "grouped CV" if cv.logits else "", dtype=object)
    left_out = sources_to_leave_out(fit_targets, fit_sources) if config.leave_source_out else {}
    for name, mask in tqdm(left_out.items(), desc="leave one source out", unit="source"):
        fits.fit_on(fit_idx[~mask], config.seed, f"without {name}")
        out_of_source[mask] = fits.logits_of(fit_idx[mask])
        if fits.use_reference:
            out_of_source_d[mask] = fits.distances_of(fit_idx[mask], fit_idx[~mask], fits.policy)
        method[mask] = "source left out"
    distances = out_of_source_d if fits.use_reference else None
    return _SourcesLeftOut(out_of_source, distances, method, left_out, fit_sources, fit_targets)


def _choose_policy(fits: _Fits, cv: _CrossValidation, loso: _SourcesLeftOut) -> tuple[triage.Policy, dict[str, object]]:
    """The operating point, on the out-of-source predictions (with the pooled grouped CV beside them) where there
    are any, else on the grouped CV's; and the grouped CV's metrics at that point."""
    config, policy = fits.config, fits.policy
    # every repeat's out-of-fold predictions pooled: the estimate for new photos of the collections trained on
    all_oof, all_targets, all_d = _pooled(fits, cv)
    scored = loso.scored
    if loso.left_out:
        policy = choose_operating_point(
            policy,
            loso.logits[scored],
            loso.targets[scored],
            max_cattle_rejected=config.max_cattle_rejected,
            distances=None if loso.distances is None else loso.distances[scored],
            sources=loso.sources[scored],
            within=Predictions(all_oof, all_targets, all_d, np.tile(loso.sources, len(cv.logits)))
            if cv.logits
            else None,
        )
    cv_metrics: dict[str, object] = {}
    if cv.logits:
        if not loso.left_out:
            policy = choose_operating_point(
                policy, all_oof, all_targets, max_cattle_rejected=config.max_cattle_rejected, distances=all_d
            )
        cv_metrics = evaluate(policy, all_oof, all_targets, all_d) | {
            "repeats": config.cv_repeats,
            "balanced_accuracy_per_repeat": cv.balanced,
            "train_fraction": config.train_fraction,
            "triage_photos_per_fit": float(np.mean(cv.trained_on)),
        }
    return policy, cv_metrics


def _pooled(fits: _Fits, cv: _CrossValidation) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Every CV repeat's out-of-fold logits, targets and distances, one after another."""
    all_oof = np.concatenate(cv.logits) if cv.logits else np.zeros((0, len(fits.data.labels)))
    all_targets = np.tile(fits.data.targets[fits.fit], len(cv.logits))
    all_d = np.concatenate(cv.distances) if fits.use_reference and cv.logits else None
    return all_oof, all_targets, all_d


def _by_source(
    fits: _Fits, policy: triage.Policy, loso: _SourcesLeftOut, predictions: Path | None, cv: _CrossValidation
) -> dict[str, object]:
    """The leave-one-source-out metrics, per source and per kind of photo; the predictions saved where asked."""
    if not loso.left_out:
        return {}
    data, fit_idx, scored = fits.data, fits.fit_idx, loso.scored
    kinds = np.array([_kind(data.paths[i], fits.sources[i]) for i in fit_idx], dtype=object)
    scored_d = None if loso.distances is None else loso.distances[scored]
    by_source = evaluate(policy, loso.logits[scored], loso.targets[scored], scored_d) | {
        "sources_left_out": sorted(loso.left_out),
        "per_source": _per_group(policy, loso.logits, loso.targets, loso.sources, loso.method, loso.distances),
        "per_kind": _per_group(policy, loso.logits, loso.targets, kinds, loso.method, loso.distances),
    }
    if predictions is not None:
        all_oof, all_targets, all_d = _pooled(fits, cv)
        np.savez_compressed(
            predictions,
            labels=np.array(data.labels),
            logits=loso.logits[scored],
            distances=np.full((int(scored.sum()), 2), np.nan) if scored_d is None else scored_d,
            targets=loso.targets[scored],
            sources=loso.sources[scored].astype(str),
            kinds=kinds[scored].astype(str),
            method=loso.method[scored].astype(str),
            files=np.array([str(data.paths[i]) for i in fit_idx[scored]]),
            cv_logits=all_oof,
            cv_targets=all_targets,
            cv_distances=np.full((len(all_targets), 2), np.nan) if all_d is None else all_d,
        )
    return by_source


def _save_model(fits: _Fits, policy: triage.Policy, out_dir: Path) -> None:
    """The model folder: the network with its policy, the reference, the image processor."""
    fits.base.config.triage = policy.to_dict()
    out_dir.mkdir(parents=True, exist_ok=True)
    fits.base.save_pretrained(out_dir)
    reference_file = out_dir / triage.REFERENCE_FILE
    reference_file.unlink(missing_ok=True)  # an earlier run's, into the same folder
    if policy.uses_reference:
        fit_idx, in_reference, reference_x = fits.fit_idx, fits.in_reference, fits.reference_x
        non_cattle = reference_x[fit_idx[~in_reference[fit_idx]]] if policy.neighbour_margin is not None else None
        triage.save_reference(out_dir, reference_x[fit_idx[in_reference[fit_idx]]], fits.columns, non_cattle)
    processor = image_processor(fits.config.image_size)
    processor.save_pretrained(out_dir)
    # transformers writes the backend-neutral name, which picks the torchvision backend where torchvision is
    # installed (a Space): name the PIL class we trained with, so every install preprocesses the same way.
    processor_file = out_dir / "preprocessor_config.json"
    processor_config = json.loads(processor_file.read_text())
    processor_config["image_processor_type"] = type(processor).__name__
    processor_file.write_text(json.dumps(processor_config, indent=2) + "\n")


def _metrics(fits: _Fits, policy: triage.Policy, cattle_as: str | None, seconds: float) -> dict[str, object]:
    """``metrics.json`` but the three estimates: labels, policy, photos, the split and the training's settings."""
    data, config, held = fits.data, fits.config, fits.held
    return {
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
        "training": _training(fits, policy) | {"seconds": round(seconds, 1), "torch_threads": torch.get_num_threads()},
    }


def _training(fits: _Fits, policy: triage.Policy) -> dict[str, object]:
    """``metrics.json``'s ``training``: how the model was fitted."""
    config = fits.config
    return (
        {
            "backbone": config.backbone,
            "tune": config.tune,
            "image_size": config.image_size,
            "views": config.views,
            "mirror_averaged": policy.mirror,
        }
        | (
            {"mid_features": {"input_of_block": fits.last - 1, "slots": fits.slots, "l2_factor": config.mid_l2_factor}}
            if fits.readout
            else {}
        )
        | {"l2": config.l2, "l2_gate": config.l2_gate, "source_power": config.source_power}
        | {"reference_k": config.reference_k if fits.use_reference else 0}
        | {"neighbour_k": config.neighbour_k if fits.use_reference else 0}
        | (
            {}
            if config.tune == "head"
            else {"tuned_from_block": fits.top, "epochs": config.epochs, "lr": config.lr, "l2sp": config.l2sp}
        )
    )
