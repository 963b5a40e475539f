"""What each notifiable disease's threshold costs, on the out-of-source predictions a training chose it on.

A lower lumpy-skin threshold misses fewer cases and calls more healthy cattle lumpy; the pooled false-alarm share
hides that the alarms gather in a few collections (healthy cattle of a kind absent from training). This prints,
per threshold, the cases missed, the false alarms pooled, averaged over the other cattle collections and in the
worst one, the coverage and the answers right: the table the training's choice is read against.

    python -m models.train ... --save-predictions /tmp/pred.npz -o MODEL
    python bench/operating_points.py /tmp/pred.npz --model MODEL [--label lumpy_skin] [--answer 0.77]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import triage


def table(pred: dict[str, np.ndarray], policy: triage.Policy, label: str, thresholds: np.ndarray) -> list[dict]:
    """One row per threshold of ``label`` (the other thresholds as ``policy`` has them)."""
    labels = list(pred["labels"])
    truth = np.array([labels[t] for t in pred["targets"]])
    distances = None if np.isnan(pred["distances"]).all() else pred["distances"]
    sources = pred["sources"]
    cattle = truth != triage.NOT_CATTLE
    alert, others = truth == label, cattle & (truth != label)
    other_sources = sorted(set(sources[others]))
    index = policy.alert_labels.index(label)
    rows = []
    for t in thresholds:
        alerts = [float(t) if i == index else v for i, (_, v) in enumerate(policy.alerts)]
        p = policy.with_alerts(alerts)
        v = np.array(p.verdicts(pred["logits"], distances))
        answered = cattle & (v != triage.INCONCLUSIVE) & (v != triage.NOT_CATTLE)
        called = {s: float((v[others & (sources == s)] == label).mean()) for s in other_sources}
        worst = max(called, key=called.get)
        rows.append(
            {
                "threshold": round(float(t), 3),
                "missed": float(((v[alert] != label) & (v[alert] != triage.INCONCLUSIVE)).mean()),
                "answered_as_it": float((v[alert] == label).mean()),
                "called_pooled": float((v[others] == label).mean()),
                "called_mean_of_sources": float(np.mean(list(called.values()))),
                "called_worst": called[worst],
                "worst_source": worst,
                "coverage": float(answered[cattle].mean()),
                "answered_right": float((v[answered] == truth[answered]).mean()),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("predictions", type=Path, help="models.train --save-predictions file")
    parser.add_argument("--model", type=Path, required=True, help="the model folder that training wrote")
    parser.add_argument("--label", default="lumpy_skin")
    parser.add_argument("--answer", type=float, help="the answer threshold to use (default: the model's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pred = dict(np.load(args.predictions))
    config = json.loads((args.model / "config.json").read_text())
    labels = [config["id2label"][str(i)] for i in range(len(config["id2label"]))]
    policy = triage.Policy.from_dict(labels, config["triage"])
    if args.answer is not None:
        from dataclasses import replace

        policy = replace(policy, answer_threshold=args.answer)
    rows = table(pred, policy, args.label, np.round(np.arange(0.4, 0.951, 0.025), 3))
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{args.label}, answer threshold {policy.answer_threshold}, gate and reference as the model has them")
    head = "threshold missed as_it called:pooled mean worst coverage right worst_source"
    print(head)
    for r in rows:
        print(
            f"{r['threshold']:.3f} {r['missed']:.3f} {r['answered_as_it']:.3f} {r['called_pooled']:.3f} "
            f"{r['called_mean_of_sources']:.3f} {r['called_worst']:.3f} {r['coverage']:.3f} "
            f"{r['answered_right']:.3f} {r['worst_source']}"
        )


if __name__ == "__main__":
    main()
