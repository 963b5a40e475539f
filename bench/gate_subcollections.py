"""The gate on a new collection of a kind it was shown: each goat breed, horse breed, block of ImageNet classes and
kind of generated picture left out in turn, predicted by a head fitted on everything else with the training's own
recipe, scored at the model's gate threshold, and with the model's reference where its policy has one (distance to
the training cattle, which holds no non-cattle photo to leave out, and nearness to the training non-cattle photos,
those of the sub-collection left out taken out).

Why beside leave-one-source-out: leaving the one goat collection out leaves no goat at all, which measures an
animal never shown (sheep, camels). A user's goat photo is more like a goat breed the model never saw; ImageNet's
sample is one photo per class, and a block of 62 neighbouring classes (dogs, birds, objects) left out is a kind
of photo never seen. Reuses the trunk features that ``models.train --feature-cache`` saved.

    python bench/gate_subcollections.py DATA --feature-cache F --synthetic DIR [--model DIR] [--source-power P]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import types
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import train
from models.classifier import DEFAULT_MODEL_ID
from models.lite import build_lite
from models.triage import REFERENCE_FILE, Policy, load_reference, reference_distances, reference_features

IMAGENET_BLOCKS = 8


def subcollection(path: Path, source: str, source_path: str | None, imagenet_rank: int | None) -> str:
    """A not-cattle photo's sub-collection: its breed folder in its source, its ImageNet class block, its generator."""
    if source_path is not None and source_path.count("/") >= 2:
        return f"{source} · {source_path.split('/')[1]}"
    if imagenet_rank is not None:
        return f"ImageNet classes, block {imagenet_rank}"
    if source == "synthetic":
        return "synthetic · " + re.sub(r"_\d+$", "", path.stem)
    return source


def shipped_photos(d: Path, synthetic: Path, feature_cache: Path) -> tuple[train.Dataset, dict[Path, str], dict]:
    """The built-in model's photos as its model card's training command scans them, each one's ``source_path`` in
    the provenance CSV, and the trunk features ``models.train --feature-cache`` saved for them (exits if they were
    cached for other photos)."""
    data = train.scan(
        d / "cattle",
        ["lumpy_skin", "normal_skin", "fmd"],
        [d / "cattle_gate/not_cattle", d / "cattle_gate/not_cattle_farm", synthetic],
        [d / "cattle/healthy_closeup"],
        "normal_skin",
        d / "sources_extra.csv",
    )
    with open(d / "sources_extra.csv", newline="", encoding="utf-8") as f:
        where = {(d / row["file"]).resolve(): row["source_path"] for row in csv.DictReader(f)}
    cached = torch.load(feature_cache)
    if cached["key"][0] != [str(p) for p in data.paths]:
        sys.exit(f"{feature_cache}: cached for other photos (or another order): train with the same folders")
    return data, where, cached


def shipped_pooled(data: train.Dataset, cached: dict) -> tuple[torch.nn.Module, torch.Tensor]:
    """The shipped model's network (its head not fitted) and the pooled final features (photos, views, channels) of
    :func:`shipped_photos`'s cached trunk outputs, as its head reads them (the readout's last block run on them)."""
    base = build_lite(
        dict(enumerate(data.labels)), readout=True, image_size=train.TRAINED_IMAGE_SIZE, variant=cached["key"][-1]
    )
    return base, train.pool_views(base, cached["feats"], len(base.efficientnet.encoder.blocks) - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the data folder: cattle/, cattle_gate/, sources_extra.csv")
    parser.add_argument("--feature-cache", type=Path, required=True, help="as written by models.train")
    parser.add_argument("--synthetic", type=Path, required=True, help="python -m models.synthetic's folder")
    parser.add_argument("--model", default=DEFAULT_MODEL_ID, help="whose policy (gate threshold) scores it")
    parser.add_argument("--source-power", type=float, help="as models.train's (default: the model's)")
    args = parser.parse_args()
    data, where, cached = shipped_photos(args.data, args.synthetic, args.feature_cache)
    policy = Policy.from_dict(data.labels, json.loads(Path(args.model, "config.json").read_text())["triage"])
    trained = json.loads(Path(args.model, "metrics.json").read_text()).get("training", {})  # the model's own recipe
    penalties = {k: trained[k] for k in ("l2", "l2_gate") if k in trained}
    source_power = trained.get("source_power", train.SOURCE_POWER) if args.source_power is None else args.source_power
    config = train.TrainConfig(source_power=source_power, backbone=cached["key"][-1], **penalties)  # cache's backbone
    feats = cached["feats"]
    base, pooled = shipped_pooled(data, cached)
    x = torch.cat([pooled, feats.float().mean(dim=(3, 4))], dim=-1)
    gate = data.labels.index(data.gate_label)
    reference = load_reference(Path(args.model, REFERENCE_FILE)) if policy.uses_reference else None
    if reference is not None:
        mean = pooled[:, :2].mean(dim=1) if policy.mirror else pooled[:, 0]
        features = reference_features(mean.numpy(), reference.columns)

    def unlike(left: np.ndarray) -> np.ndarray:
        """The reference's verdict on the ``left`` photos, compared with the non-cattle photos of everything else (the
        shipped file holds them all) and the shipped cattle photos (none is left out)."""
        if reference is None:
            return np.zeros(int(left.sum()), bool)
        others = features[~left & (data.targets == gate)] if policy.neighbour_margin is not None else None
        distances = reference_distances(policy, features[left], reference.cattle, others)
        return policy.unlike_cattle(distances, len(distances))

    imagenet = sorted(i for i, s in enumerate(data.sources) if s == "not_cattle")
    rank = {i: r * IMAGENET_BLOCKS // len(imagenet) for r, i in enumerate(imagenet)}
    sub = np.array(
        [
            subcollection(p, s, where.get(Path(p).resolve()), rank.get(i)) if t == gate else ""
            for i, (p, s, t) in enumerate(zip(data.paths, data.sources, data.targets, strict=True))
        ],
        dtype=object,
    )
    head = types.SimpleNamespace(config=base.config, classifier=torch.nn.Linear(x.shape[-1], len(data.labels)))
    turned, by_gate = {}, {}
    for name in sorted(set(sub) - {""}):
        left = sub == name
        rows = np.nonzero(~left)[0]
        weights = train.source_balance(data.targets[rows], [data.sources[i] for i in rows], config.source_power)
        train.fit_head(head, x[rows], data.targets[rows], gate, config.l2, config.l2_gate, photo_weights=weights)
        with torch.no_grad():
            logits = head.classifier(x[left][:, :2]).mean(1).double().numpy()
        by_gate[name] = policy.gate_probability(logits) >= policy.gate_threshold
        turned[name] = by_gate[name] | unlike(left)
    print(f"gate threshold {policy.gate_threshold} ({args.model}); each sub-collection left out in turn")
    print("| sub-collection left out | photos | turned away | by the gate alone |\n|---|---|---|---|")
    for name, hit in turned.items():
        print(f"| {name} | {len(hit)} | {hit.mean():.0%} | {by_gate[name].mean():.0%} |")
    kinds = {
        "goat breeds": "ShahAbdulMunim",
        "horse breeds": "sambit",
        "ImageNet blocks": "ImageNet",
        "synthetic": "synthetic",
    }
    for kind, key in kinds.items():
        hits = np.concatenate([h for n, h in turned.items() if key in n])
        gate = np.concatenate([h for n, h in by_gate.items() if key in n])
        print(f"{kind}: {hits.mean():.3f} of {len(hits)} (the gate alone {gate.mean():.3f})")
    every, gate = np.concatenate(list(turned.values())), np.concatenate(list(by_gate.values()))
    print(f"all: {every.mean():.3f} of {len(every)} (the gate alone {gate.mean():.3f})")


if __name__ == "__main__":
    main()
