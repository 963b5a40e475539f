"""The CUDA path of the per-request lifecycle, for a machine with a GPU: load → infer → offload, and GPU
memory back to its baseline afterwards. Prepared so that a session lent a GPU runs it in one go:

    python bench/cuda_lifecycle.py [--requests 3]

It saves a random-init ViT-base (86 M parameters, labels ``untrained-*``: the answers mean nothing) to a
temporary folder, then for each request records ``torch.cuda.memory_allocated()`` before, while loaded
and after, with load / inference / offload times. Exits 1 if memory is not back to the baseline, 2 if there
is no CUDA device.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import models


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure here (the CPU path is covered by the tests)")
        return 2
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    labels = {i: f"untrained-{i}" for i in range(5)}
    with tempfile.TemporaryDirectory() as folder:
        config = ViTConfig(num_labels=5, id2label=labels, label2id={v: k for k, v in labels.items()})
        ViTForImageClassification(config).save_pretrained(folder)
        ViTImageProcessor().save_pretrained(folder)
        photo = Image.new("RGB", (640, 480), (120, 90, 60))
        print(f"device: {torch.cuda.get_device_name(0)}")
        columns = ("request", "base MB", "loaded MB", "after MB", "load ms", "infer ms", "offload ms")
        print(" ".join(f"{name:>10}" for name in columns))
        leaked = False
        for request in range(1, args.requests + 1):
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            with models.loaded_model(folder) as loaded:
                assert loaded.device.type == "cuda", loaded.device
                loaded_bytes = torch.cuda.memory_allocated()
                start = time.perf_counter()
                result = loaded.predict([photo])
                torch.cuda.synchronize()
                infer_ms = (time.perf_counter() - start) * 1000
            torch.cuda.synchronize()
            after = torch.cuda.memory_allocated()
            leaked |= after != base
            stats = models.STATS
            values = (base / 2**20, loaded_bytes / 2**20, after / 2**20, stats.last_load_ms, infer_ms)
            print(f"{request:>10} " + " ".join(f"{v:10.1f}" for v in values) + f" {stats.last_offload_ms:10.1f}")
            assert isinstance(result[0], dict) and all(isinstance(v, float) for v in result[0].values())
        alive = models.STATS.last_model is not None and models.STATS.last_model() is not None
        print(f"model object still alive after offload: {alive}; memory back to baseline: {not leaked}")
        return 1 if leaked or alive else 0


if __name__ == "__main__":
    raise SystemExit(main())
