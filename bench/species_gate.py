"""Per species: what the cattle gate does with each animal, leave one source out and in grouped CV.

``python bench/species_gate.py PREDICTIONS.npz [--model M]`` reads the out-of-source and grouped-CV predictions a
training run saved (``python -m models.train ... --save-predictions PREDICTIONS.npz``) and decides them with the
model's policy (``config.json``), as the app does. A photo's species comes from its folder (``dog/``, ``horse/``,
the goat and horse collections of ``not_cattle_farm``) or, in the ImageNet sample, from its class (ImageNet's dog
classes are n02085620-n02113978): the Space's visitor meets goats, horses and dogs beside the cattle. Printed per
species: turned away (*not cattle*), *inconclusive*, and given a cattle verdict (lumpy skin, FMD or no sign); for the
cattle: turned away, lumpy skin missed and coverage. Leave one source out is the estimate for a collection never
seen; a species with one collection takes all of its kind with it when that collection is left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.classifier import DEFAULT_MODEL_ID
from models.triage import INCONCLUSIVE, NOT_CATTLE, Policy

CATTLE_VERDICTS = ("lumpy_skin", "fmd", "normal_skin")


def species(file: str, kind: str) -> str:
    """The animal a training photo shows, for the table (``other`` for the rest of the non-cattle pictures)."""
    folder = Path(file).parent.name
    if folder == "dog" or (folder == "not_cattle" and "n02085620" <= Path(file).name[:9] <= "n02113978"):
        return "dog"
    if folder == "horse" or "Horse" in kind:
        return "horse"
    if "goat" in kind.lower() or ("ShahAbdulMunim" in kind and folder == "not_cattle_farm"):
        return "goat"
    return "other"


def rows(policy: Policy, logits: np.ndarray, distances: np.ndarray, targets: np.ndarray, kinds: list[str]) -> list:
    """One table row per species (non-cattle) and one for the cattle, from these predictions."""
    verdicts = np.array(policy.verdicts(logits, distances))
    gate = policy.labels.index(NOT_CATTLE)
    out = []
    for name in ("goat", "horse", "dog", "other"):
        mask = np.array([k == name for k in kinds]) & (targets == gate)
        v = verdicts[mask]
        if len(v):
            cattle_verdict = np.isin(v, CATTLE_VERDICTS).mean()
            out.append([name, len(v), (v == NOT_CATTLE).mean(), (v == INCONCLUSIVE).mean(), cattle_verdict, None, None])
    cattle = targets != gate
    v, t = verdicts[cattle], targets[cattle]
    lumpy = t == policy.labels.index("lumpy_skin")
    missed = ((v[lumpy] != "lumpy_skin") & (v[lumpy] != INCONCLUSIVE)).mean()
    answered = np.isin(v[t >= 0], CATTLE_VERDICTS).mean()
    out.append(
        ["cattle", int(cattle.sum()), (v == NOT_CATTLE).mean(), (v == INCONCLUSIVE).mean(), None, missed, answered]
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predictions", type=Path)
    parser.add_argument("--model", type=Path, default=Path(DEFAULT_MODEL_ID))
    args = parser.parse_args()
    data = np.load(args.predictions, allow_pickle=True)
    config = json.loads((args.model / "config.json").read_text())
    labels = [config["id2label"][str(i)] for i in range(len(config["id2label"]))]
    policy = Policy.from_dict(labels, config["triage"])
    kinds = [species(f, k) for f, k in zip(data["files"], data["kinds"], strict=True)]
    draws = len(data["cv_targets"]) // len(data["targets"])
    estimates = {
        "leave one source out": (data["logits"], data["distances"], data["targets"], kinds),
        f"grouped CV ({draws} draws pooled)": (
            data["cv_logits"],
            data["cv_distances"],
            data["cv_targets"],
            kinds * draws,
        ),
    }
    cell = lambda x: "—" if x is None else f"{x:.1%}"  # noqa: E731
    print("| estimate | photos of | n | turned away | inconclusive | a cattle verdict | lumpy missed | coverage |")
    print("|---|---|---|---|---|---|---|---|")
    for estimate, (logits, distances, targets, photo_kinds) in estimates.items():
        for name, n, away, unsure, verdict, missed, answered in rows(policy, logits, distances, targets, photo_kinds):
            shown = " | ".join(cell(x) for x in (away, unsure, verdict, missed, answered))
            print(f"| {estimate} | {name} | {n} | {shown} |")


if __name__ == "__main__":
    main()
