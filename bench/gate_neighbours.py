"""Would a nearest-neighbour rule beside the gate turn away more non-cattle photos? Measured, not shipped.

The rule: a photo is turned away when its ``k`` most similar non-cattle training photos are more similar, on average,
than its ``k`` most similar cattle ones (less ``margin``), on the reference's features (square roots of the pooled
features, cosine). It is ORed with the shipped model's own verdicts, the gate and reference included, out of fold
(the training's grouped CV: new photos of known collections) and out of source (a collection left out; lumpy skin and
FMD, one collection each, keep their CV verdicts and are not ruled on there). Reuses the trunk features and the
out-of-fold predictions that ``models.train --feature-cache F --save-predictions P`` saved for the shipped model.

    python bench/gate_neighbours.py DATA --feature-cache F --predictions P --synthetic DIR [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gate_subcollections import shipped_photos, shipped_pooled

from models import train, triage
from models.classifier import DEFAULT_MODEL_ID

KINDS = {
    "goats": "not_cattle_farm · ShahAbdulMunim/Farm-animal-breed-detection-FYP2-",
    "horses": "not_cattle_farm · sambit-0007/Horse-Breed-Classification-deployed-in-Android",
    "ImageNet": "not_cattle",
}


def closer_to_non_cattle(
    x: np.ndarray, scored: np.ndarray, fitted: np.ndarray, is_gate: np.ndarray, k: int
) -> np.ndarray:
    """Mean cosine of the ``k`` nearest non-cattle photos of ``fitted`` less that of the ``k`` nearest cattle ones."""

    def nearest(rows: np.ndarray) -> np.ndarray:
        similarity = x[scored] @ x[rows].T
        return np.sort(similarity, axis=1)[:, -min(k, len(rows)) :].mean(axis=1)

    return nearest(fitted[is_gate[fitted]]) - nearest(fitted[~is_gate[fitted]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the data folder: cattle/, cattle_gate/, sources_extra.csv")
    parser.add_argument("--feature-cache", type=Path, required=True, help="as written by models.train")
    parser.add_argument("--predictions", type=Path, required=True, help="models.train --save-predictions's file")
    parser.add_argument("--synthetic", type=Path, required=True, help="python -m models.synthetic's folder")
    parser.add_argument("--model", type=Path, default=Path(DEFAULT_MODEL_ID), help="the model those predictions are of")
    parser.add_argument("--k", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--margin", type=float, nargs="+", default=[-0.01, 0.0, 0.005, 0.01])
    args = parser.parse_args()
    data, _, cached = shipped_photos(args.data, args.synthetic, args.feature_cache)
    saved = np.load(args.predictions)
    targets = np.asarray(data.targets)
    if not np.array_equal(saved["targets"], targets):
        sys.exit(f"{args.predictions}: predictions of other photos")
    policy = triage.Policy.from_dict(data.labels, json.loads((args.model / "config.json").read_text())["triage"])
    _, pooled = shipped_pooled(data, cached)
    _, columns = triage.load_reference(args.model / triage.REFERENCE_FILE)
    x = triage.reference_features(pooled[:, :2].mean(dim=1).numpy(), columns)
    groups = train.join_similar(cached["groups"].numpy(), pooled[:, 0])
    is_gate = targets == data.labels.index(data.gate_label)
    repeats = len(saved["cv_targets"]) // len(targets)
    cv = np.array(policy.verdicts(saved["cv_logits"], saved["cv_distances"])).reshape(repeats, -1)
    out_of_source = np.array(policy.verdicts(saved["logits"], saved["distances"]))
    kinds = saved["kinds"]

    def row(name: str, verdicts: np.ndarray, ruled: np.ndarray) -> str:
        away = (verdicts == triage.NOT_CATTLE) | ruled
        cells = [f"{away[..., is_gate].mean():.3f}", f"{100 * away[..., ~is_gate].mean():.2f} %"]
        cells += [f"{away[..., kinds == kind].mean():.3f}" for kind in KINDS.values()]
        for label in ("lumpy_skin", "fmd"):
            cells.append(f"{100 * away[..., targets == data.labels.index(label)].mean():.1f} %")
        return f"| {name} | " + " | ".join(cells) + " |"

    print("| rule | non-cattle turned away | cattle turned away | " + " | ".join(KINDS) + " | lumpy skin | FMD |")
    print("|" + " --- |" * (5 + len(KINDS)))
    nothing = np.zeros(len(targets), bool)
    print(row("shipped, grouped CV", cv, nothing[None]))
    print(row("shipped, source left out", out_of_source, nothing))
    for k in args.k:
        in_fold = np.zeros((repeats, len(targets)))
        for r in range(repeats):  # the training's own folds (models.train: seed + repeat)
            fold_of = train.grouped_folds(groups, targets, 20, seed=train.SEED + r)
            for fold in np.unique(fold_of):
                scored = np.nonzero(fold_of == fold)[0]
                in_fold[r, scored] = closer_to_non_cattle(x, scored, np.nonzero(fold_of != fold)[0], is_gate, k)
        left_out = np.full(len(targets), -np.inf)
        for mask in train.sources_to_leave_out(targets, np.asarray(saved["sources"])).values():
            left_out[mask] = closer_to_non_cattle(x, np.nonzero(mask)[0], np.nonzero(~mask)[0], is_gate, k)
        for margin in args.margin:
            print(row(f"k {k}, margin {margin}, grouped CV", cv, in_fold > margin))
            print(row(f"k {k}, margin {margin}, source left out", out_of_source, left_out > margin))


if __name__ == "__main__":
    main()
