"""Cattle triage bench: leave-one-source-out per source and kind of photo, held-out split, ms/photo.

``python bench/eval_classifier.py --split sources`` prints the built-in model's leave-one-source-out tables (from its
``metrics.json``: ``models.train`` fits one model per collection left out on its cached features, so the
figures are computed there, not here): overall, per kind of photo (folder · collection) and per source. It is the
estimate to trust, because a new user's photos come from a collection the model never saw; grouped CV beside it
shares collections between training and scoring.

``python bench/eval_classifier.py D/cattle --classes lumpy_skin normal_skin fmd --extra-cattle D/cattle/healthy_closeup
--not-cattle D/cattle_gate/not_cattle D/cattle_gate/not_cattle_farm --sources D/sources_extra.csv --model M``
(the arguments ``models.train`` was given) scores a model trained with ``--holdout 0.2`` on the photos it held out:
the split's files are read from its ``metrics.json``. ``--split all`` scores every photo instead (optimistic: most
were trained on). Inference goes through ``models.loaded_model`` (as the app and ``models.predict``); ms/photo is
one photo per call, torch threads as given (default 1), on this machine's CPU, decoding and preprocessing included.

``--check-backbone [lite0|lite2]`` checks the ImageNet weight mapping instead (``models/lite.py``): top-1/top-5
of the ImageNet-headed Lite network, at its ImageNet input size, on the ``not_cattle`` folder, whose files are
named ``nXXXXXXXX_class`` and hold every other ImageNet class in sorted-wnid order with classes 346 and 690 removed
(``../shared/data/README.md``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import train
from models.classifier import DEFAULT_MODEL_ID, list_images, loaded_model, read_photo
from models.triage import Policy


def check_backbone(folder: Path, variant: str) -> None:
    from models.lite import VARIANTS, build_lite, image_processor

    files = list_images(folder)
    model = build_lite({i: str(i) for i in range(1000)}, keep_imagenet_head=True, variant=variant).eval()
    processor = image_processor(VARIANTS[variant].imagenet_size)

    def imagenet_index(i: int) -> int:
        c = 2 * i
        return c + 2 * (c >= 346) + 2 * (c + 2 * (c >= 346) >= 690)

    top1 = top5 = 0
    for start in range(0, len(files), 32):
        images = [read_photo(f) for f in files[start : start + 32]]
        with torch.inference_mode():
            logits = model(pixel_values=processor(images=images, return_tensors="pt")["pixel_values"]).logits
        for j, row in enumerate(logits):
            truth = imagenet_index(start + j)
            top1 += int(row.argmax()) == truth
            top5 += truth in row.topk(5).indices.tolist()
    n = len(files)
    print(f"{variant} ImageNet check on {n} photos: top-1 {top1 / n:.3f}, top-5 {top5 / n:.3f}")


def table(rows: list[tuple[str, dict]]) -> str:
    def f(v: object) -> str:
        return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    keys = [
        ("balanced_accuracy", "balanced acc."),
        ("accuracy", "accuracy"),
        ("recall_lumpy", "recall lumpy"),
        ("recall_normal", "recall normal"),
        ("ece_before", "ECE before"),
        ("ece_after", "ECE after"),
        ("coverage", "coverage"),
        ("answered_accuracy", "acc. answered"),
        ("alert_missed", "lumpy → other answer"),
        ("fmd_missed", "FMD → other answer"),
        ("called_fmd", "other cattle → FMD"),
        ("called_lumpy_skin", "other cattle → lumpy"),
        ("cattle_rejected", "cattle → not_cattle"),
        ("not_cattle_rejected", "not cattle → not_cattle"),
    ]
    out = ["| split | " + " | ".join(k[1] for k in keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name, m in rows:
        m = dict(m)
        for x in m.get("recall", {}):
            m[f"recall_{x.split('_')[0]}"] = m["recall"][x]
        out.append(f"| {name} | " + " | ".join(f(m.get(k[0])) for k in keys) + " |")
    return "\n".join(out)


def merge_breeds(groups: dict[str, dict]) -> dict[str, dict]:
    """The ``breed_*`` folders (one collection, a breed each) as one row beside the others."""
    breeds = {k: g for k, g in groups.items() if k.startswith("breed_")}
    if len(breeds) < 2:
        return groups
    merged: dict[str, object] = {"photos": 0, "labels": {}, "verdicts": {}}
    for g in breeds.values():
        merged["photos"] += g["photos"]
        for part in ("labels", "verdicts"):
            for k, v in g[part].items():
                merged[part][k] = merged[part].get(k, 0) + v
    merged["method"] = " + ".join(sorted({g["method"] for g in breeds.values()}))
    rest = {k: g for k, g in groups.items() if k not in breeds}
    return {f"breed_* ({len(breeds)} breeds)": merged, **rest}


def loso_table(groups: dict[str, dict]) -> str:
    """Per source or kind of photo (``metrics.json``'s ``leave_one_source_out``): its verdicts as shares, and how
    often an answered photo was right (the photos' own label answered; a non-cattle photo's right answer is to be
    turned away)."""
    verdicts = ["lumpy_skin", "fmd", "normal_skin", "inconclusive", "not_cattle", "unusable_photo"]
    seen = [v for v in verdicts if any(v in g["verdicts"] for g in groups.values())]
    head = "| photos of | n | label | predicted by | " + " | ".join(seen) + " | answered right |"
    out = [head, "|---" * (head.count("|") - 1) + "|"]
    for key, g in groups.items():
        n = g["photos"]
        shares = " | ".join(f"{g['verdicts'].get(v, 0) / n:.0%}" for v in seen)
        answered = {v: c for v, c in g["verdicts"].items() if v not in ("inconclusive", "unusable_photo")}
        right = sum(c for v, c in answered.items() if v in g["labels"])
        total = sum(answered.values())
        label = ", ".join(g["labels"])
        out.append(f"| {key} | {n} | {label} | {g['method']} | {shares} | {right}/{total} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path, nargs="?")
    parser.add_argument("--not-cattle", type=Path, nargs="+")
    parser.add_argument("--classes", nargs="+", help="as given to models.train (default: the model's triage labels)")
    parser.add_argument("--extra-cattle", type=Path, nargs="*", default=[])
    parser.add_argument("--sources", type=Path, help="as given to models.train")
    parser.add_argument("--model", default=DEFAULT_MODEL_ID)
    parser.add_argument("--split", choices=("holdout", "all", "sources"), default="holdout")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--check-backbone", nargs="?", const="lite0", choices=("lite0", "lite2"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.check_backbone:
        check_backbone((args.not_cattle or [args.data_dir])[0], args.check_backbone)
        return 0
    metrics = json.loads((Path(args.model) / "metrics.json").read_text())
    if args.split == "sources":  # computed by models.train, which holds the features: printed, not recomputed
        loso = metrics.get("leave_one_source_out")
        if not loso:
            raise SystemExit(f"error: {args.model} was trained without leave-one-source-out")
        rows = [("leave one source out", loso), ("grouped CV", metrics["cross_validation"])]
        print(f"model {args.model}: policy {json.dumps(metrics['policy'])}")
        print(table(rows))
        extra = {k: round(v, 3) for k, v in loso.items() if k.startswith("called_") or k.endswith("_missed")}
        print(f"\n{extra}; recall {json.dumps({k: round(v, 3) for k, v in loso['recall'].items()})}")
        print("\nper kind of photo (folder · collection):\n" + loso_table(merge_breeds(loso["per_kind"])))
        print("\nper source:\n" + loso_table(loso["per_source"]))
        return 0
    if args.data_dir is None:
        raise SystemExit("error: give the data folder (as given to models.train)")
    labels = metrics["labels"]
    classes = args.classes or [x for x in labels if x != "not_cattle"]
    gate_dir = args.not_cattle if "not_cattle" in labels else None
    data = train.scan(args.data_dir, classes, gate_dir, args.extra_cattle, metrics.get("cattle_as"), args.sources)
    split = metrics["split"]
    if args.split == "holdout":
        if not split["holdout_fraction"]:
            raise SystemExit(
                f"error: {args.model} was trained on every photo (no held-out split); its estimates are the "
                "leave-one-source-out and CV rows of its metrics.json (--split sources). Train the same recipe with "
                "--holdout 0.2 into another folder and score that."
            )
        held = set(split["holdout_files"])  # the groups came from features too: the split is not recomputed
        keep = np.array([f"{p.parent.name}/{p.name}" in held for p in data.paths])
        if keep.sum() != split["holdout_photos"]:
            raise SystemExit(f"error: {keep.sum()} of the {split['holdout_photos']} held-out photos found here")
    else:
        keep = np.ones(len(data.paths), dtype=bool)
    paths = [p for p, k in zip(data.paths, keep, strict=True) if k]
    targets = data.targets[keep]
    times, logits, distances = [], [], []
    with loaded_model(args.model, device="cpu") as m:
        if list(m.model.config.id2label.values()) != labels:
            raise SystemExit("error: metrics.json does not belong to this model")
        policy: Policy = m.triage_policy
        for path in paths:
            start = time.perf_counter()
            photo_logits, photo_distances = m.scores([read_photo(path)])  # as the app decides: gate and reference
            times.append((time.perf_counter() - start) * 1000)
            logits.append(photo_logits[0])
            distances.append(np.full(2, np.nan) if photo_distances is None else photo_distances[0])
    reference = np.array(distances) if policy.uses_reference else None
    result = train.evaluate(policy, np.array(logits), targets, reference)
    print(f"model {args.model}: {len(paths)} photos ({args.split}), policy {json.dumps(policy.to_dict())}")
    print(table([(f"{args.split} ({len(paths)} photos)", result), ("CV out-of-fold", metrics["cross_validation"])]))
    conf = result.get("confusion")
    if conf:
        print("\nconfusion (rows: true, columns: verdict):", " | ".join(conf["columns_verdict"]))
        for name, row in zip(conf["rows_true"], conf["counts"], strict=True):
            print(f"  {name}: {row}")
    print(f"\nms per photo (1 photo per call, {args.threads} thread(s), CPU): median {statistics.median(times):.1f}, "
          f"mean {statistics.mean(times):.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
