"""What a model's predictions score: triage and gate metrics (``metrics.json``'s tables), per source and per kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from models import triage


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
