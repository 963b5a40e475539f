"""Per-request vs resident model policy on the CPU, for a ViT-base-sized classifier.

Why: the per-request policy (load → infer → offload each call) frees memory between requests but pays a
load every time; the resident policy pays once and holds the memory. This measures both with the real
``models`` code on a random-init ``ViTConfig()`` (ViT-base, 86 M parameters, 5 labels, saved as
safetensors), each policy in a fresh subprocess so RSS is not polluted by the other.

    python bench/model_policy.py [--requests 5] [--rounds 2] [--threads 1]

Numbers are medians over the requests of the best round (the first load is also shown: cold caches).
The CPU is shared on CI-like machines: the load average at start is printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABELS = {i: f"untrained-{i}" for i in range(5)}
"""Five classes like the default model, deliberately not disease names: these weights are noise."""


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def save_vit_base(folder: Path) -> Path:
    """A random-init ViT-base classifier in transformers format (weights are noise: timing only)."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(0)
    config = ViTConfig(num_labels=len(LABELS), id2label=LABELS, label2id={v: k for k, v in LABELS.items()})
    ViTForImageClassification(config).save_pretrained(folder)
    ViTImageProcessor().save_pretrained(folder)
    return folder


def child(policy: str, model_dir: str, requests: int, threads: int) -> dict[str, object]:
    """Run ``requests`` classifications under one policy; return timings and memory."""
    import numpy as np
    import torch
    from PIL import Image

    torch.set_num_threads(threads)
    sys.path.insert(0, str(ROOT))
    import models

    rng = np.random.default_rng(0)
    photo = Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8))
    baseline = _rss_mb()
    loads, offloads, infers, rss_after = [], [], [], []
    resident = None
    if policy == "resident":
        resident = models.ResidentClassifier(model_dir)
        loads.append(models.STATS.last_load_ms)
    for _ in range(requests):
        if resident is None:
            with models.loaded_model(model_dir, device="cpu") as m:
                start = time.perf_counter()
                m.predict([photo])
                infers.append((time.perf_counter() - start) * 1000)
            loads.append(models.STATS.last_load_ms)
            offloads.append(models.STATS.last_offload_ms)
        else:
            start = time.perf_counter()
            resident.classify([photo])
            infers.append((time.perf_counter() - start) * 1000)
        rss_after.append(_rss_mb())
    return {
        "policy": policy,
        "requests": requests,
        "first_load_ms": loads[0],
        "load_ms": statistics.median(loads),
        "loads": len(loads),
        "offload_ms": statistics.median(offloads) if offloads else None,
        "infer_ms": statistics.median(infers),
        "rss_base_mb": baseline,
        "rss_between_mb": rss_after[-1],
        "peak_rss_mb": _peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs per policy; the best is shown")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1: stable on a shared CPU; a free Space has 2 vCPUs)"
    )
    parser.add_argument("--child", nargs=2, metavar=("POLICY", "MODEL_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.requests, args.threads)))
        return

    with tempfile.TemporaryDirectory(prefix="vit-base-") as tmp:
        model_dir = save_vit_base(Path(tmp))
        size_mb = sum(f.stat().st_size for f in model_dir.iterdir()) / 2**20
        load_before = os.getloadavg()[0]
        runs: dict[str, list[dict]] = {"per_request": [], "resident": []}
        for _ in range(args.rounds):  # alternate, so a burst of load from other processes hits both policies
            for policy in runs:
                cmd = [sys.executable, __file__, "--child", policy, str(model_dir)]
                cmd += ["--requests", str(args.requests), "--threads", str(args.threads)]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True)
                runs[policy].append(json.loads(out.stdout.strip().splitlines()[-1]))
        rows = [min(results, key=lambda r: r["infer_ms"] + r["load_ms"]) for results in runs.values()]

    print(
        f"ViT-base (random init, {size_mb:.0f} MB safetensors), CPU, {args.threads} threads, "
        f"{args.requests} requests x best of {args.rounds} rounds, load average at start {load_before:.1f}"
    )
    header = (
        "| policy | loads | first load ms | load ms (median) | offload ms | inference ms | RSS between requests MB "
        "| peak RSS MB |"
    )
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for r in rows:
        offload = "—" if r["offload_ms"] is None else f"{r['offload_ms']:.0f}"
        print(
            f"| {r['policy'].replace('_', '-')} | {r['loads']} | {r['first_load_ms']:.0f} | {r['load_ms']:.0f} "
            f"| {offload} | {r['infer_ms']:.0f} | {r['rss_between_mb']:.0f} | {r['peak_rss_mb']:.0f} |"
        )
    base = rows[0]["rss_base_mb"]
    print(f"(RSS of the process before any model: {base:.0f} MB; RSS and peak include torch + transformers)")


if __name__ == "__main__":
    main()
