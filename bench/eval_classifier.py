"""Cattle triage bench: accuracy, balanced accuracy, recall, confusion, ECE, coverage, gate rates, ms/photo.

``python bench/eval_classifier.py ../shared/data/cattle --not-cattle ../shared/data/cattle_gate/not_cattle``
(from the repository root) scores a model folder (default: the built-in one) on the photos its training held
out: the same scan, perceptual-hash groups and seed as ``models.train`` (read from the model's
``metrics.json``) give the same held-out split, so no held-out photo or near-duplicate of one was trained on.
``--split all`` scores every photo instead (optimistic: most were trained on). The built-in model is trained on
every photo (its estimate is cross-validation); score the held-out split of the same recipe trained with
``--holdout 0.2`` into another folder. Inference goes through
``models.loaded_model`` (as the app and ``models.predict``); ms/photo is one photo per call, torch threads as
given (default 1), on this machine's CPU, decoding and preprocessing included. The model's cross-validation
figures (grouped k-fold, out-of-fold predictions, from ``metrics.json``) are printed beside the held-out ones.

``--check-backbone`` checks the ImageNet weight mapping instead (``models/lite0.py``): top-1/top-5 of the
ImageNet-headed Lite0 on the ``not_cattle`` folder, whose files are named ``nXXXXXXXX_class`` and hold every
other ImageNet class in sorted-wnid order with classes 346 and 690 removed (``../shared/data/README.md``).
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
from models.classifier import DEFAULT_MODEL_ID, loaded_model, read_photo
from models.triage import Policy


def check_backbone(folder: Path) -> None:
    from models.lite0 import build_lite0, image_processor

    files = train.list_images(folder)
    model = build_lite0({i: str(i) for i in range(1000)}, keep_imagenet_head=True).eval()
    processor = image_processor()

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
    print(f"ImageNet check on {len(files)} photos: top-1 {top1 / len(files):.3f}, top-5 {top5 / len(files):.3f}")


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
        ("alert_missed", "lumpy → normal/not cattle"),
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--not-cattle", type=Path)
    parser.add_argument("--model", default=DEFAULT_MODEL_ID)
    parser.add_argument("--split", choices=("holdout", "all"), default="holdout")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--check-backbone", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.check_backbone:
        check_backbone(args.not_cattle or args.data_dir)
        return 0
    metrics = json.loads((Path(args.model) / "metrics.json").read_text())
    labels = metrics["labels"]
    classes = [x for x in labels if x != "not_cattle"]
    gate_dir = args.not_cattle if "not_cattle" in labels else None
    data = train.scan(args.data_dir, classes, gate_dir, cattle_as=metrics.get("cattle_as"))
    split = metrics["split"]
    if args.split == "holdout":
        if not split["holdout_fraction"]:
            raise SystemExit(
                f"error: {args.model} was trained on every photo (no held-out split); its estimate is the CV row of "
                "its metrics.json. Train the same recipe with --holdout 0.2 into another folder and score that."
            )
        held = set(split["holdout_files"])  # the groups came from features too: the split is not recomputed
        keep = np.array([f"{p.parent.name}/{p.name}" in held for p in data.paths])
        if keep.sum() != split["holdout_photos"]:
            raise SystemExit(f"error: {keep.sum()} of the {split['holdout_photos']} held-out photos found here")
    else:
        keep = np.ones(len(data.paths), dtype=bool)
    paths = [p for p, k in zip(data.paths, keep, strict=True) if k]
    targets = data.targets[keep]
    times, logits = [], []
    with loaded_model(args.model, device="cpu") as m:
        if list(m.model.config.id2label.values()) != labels:
            raise SystemExit("error: metrics.json does not belong to this model")
        policy: Policy = m.triage_policy
        for path in paths:
            start = time.perf_counter()
            logits.append(m.logits([read_photo(path)])[0])
            times.append((time.perf_counter() - start) * 1000)
    result = train.evaluate(policy, np.array(logits), targets)
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
