"""Would more photos help? Cross-validated triage balanced accuracy against the number of training photos.

``python bench/learning_curve.py ../shared/data/cattle --not-cattle ../shared/data/cattle_gate/not_cattle
--feature-cache /tmp/lite0.pt`` (from the repository root) runs ``models.train``'s recipe (defaults) once per
``--fractions`` value: each cross-validation fold trains on that share of its near-duplicate groups
(``--train-fraction``) and is scored on its whole held-out fold, so every point is scored on the same photos. A
power law through the error rates, ``1 - balanced accuracy = a · n^-b``, extrapolates to a model trained on every
photo, which is what ships (here each fold's model trains on at most 4/5 of them, ``--folds 5``; the shipped
model's own cross-validation uses 20 folds, 19/20): an estimate that assumes the curve keeps its shape, printed as
such. The backbone features are computed once
(``--feature-cache``; about 8 minutes on 2 cores), then each point takes about a minute.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import train


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--not-cattle", type=Path)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.4, 0.55, 0.7, 0.85, 1.0])
    parser.add_argument("--folds", type=int, default=5, help="grouped CV folds (5: points from 40 %% to 80 %% of all)")
    parser.add_argument("--cv-repeats", type=int, default=train.TrainConfig.cv_repeats)
    parser.add_argument("--feature-cache", type=Path, help="reuse (or write) the backbone features")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = train.scan(args.data_dir, not_cattle=args.not_cattle)
    curve = []  # (share of each fold's groups, cross-validation metrics)
    with tempfile.TemporaryDirectory() as out:
        for fraction in args.fractions:
            config = train.TrainConfig(folds=args.folds, cv_repeats=args.cv_repeats, train_fraction=fraction)
            metrics = train.train(data, Path(out), config, feature_cache=args.feature_cache)
            curve.append((fraction, metrics["cross_validation"]))
    every = curve[0][1]["triage_photos"] // args.cv_repeats
    print(
        "| share of each fold's groups | triage photos per fit | balanced acc. (mean of repeats) | sd | acc. answered |"
    )
    print("|---|---|---|---|---|")
    for fraction, cv in curve:
        per_repeat = cv["balanced_accuracy_per_repeat"]
        sd = statistics.stdev(per_repeat) if len(per_repeat) > 1 else 0.0
        print(
            f"| {fraction:.2f} | {cv['triage_photos_per_fit']:.0f} | {np.mean(per_repeat):.3f} | {sd:.3f} "
            f"| {cv['answered_accuracy']:.3f} |"
        )
    n = np.array([cv["triage_photos_per_fit"] for _, cv in curve])
    error = np.array([1 - np.mean(cv["balanced_accuracy_per_repeat"]) for _, cv in curve])
    if len(curve) >= 3 and (error > 0).all():
        slope, intercept = np.polyfit(np.log(n), np.log(error), 1)
        predicted = 1 - np.exp(intercept) * every**slope
        print(
            f"\npower law 1 - bal = {np.exp(intercept):.3g} · n^{slope:.3f}: at all {every} triage photos "
            f"(the shipped model) balanced accuracy ≈ {predicted:.3f} (an extrapolation, not a measurement)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
