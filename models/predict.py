"""Batch verdicts from a terminal: ``python -m models.predict PHOTO_OR_DIR... [--model DIR] [--json]``.

For vets with a folder of photos, and for evaluations: the same load → infer → offload lifecycle as the app
(:func:`models.loaded_model`), one load for all photos. ``--json`` prints one object per photo::

    {"file": "cow.jpg", "verdict": "lumpy_skin" | "fmd" | "normal_skin" | "not_cattle" | "inconclusive"
     | "unusable_photo", "probabilities": {"lumpy_skin": 0.91, "normal_skin": 0.07, "fmd": 0.02}, "gate": 0.01,
     "reason": null, "distance": 0.21}

``probabilities`` are the calibrated triage probabilities, present whatever the verdict; ``gate`` is P(not cattle)
(``null`` for a model without a gate); ``reason`` says why an ``unusable_photo`` (too small, blank) got no answer,
or why a ``not_cattle`` photo the gate let through was turned away (unlike every training cattle photo, or more
like the training non-cattle photos);
``distance`` is how unlike them it is (``models.triage.reference_distance``; ``null`` without a reference).
Without ``--json``: a table (file, verdict, probabilities, and the reason of a picture refused with one), then
with ``--case`` one verdict for all the photos as one animal. A file that
cannot be read (not an image, too large, damaged) is skipped and said in one sentence: an ``"error"`` object with
``--json``, else one ``error: could not read photo X: …`` line on stderr, so the table stays a table; the other
photos are still classified, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import torch

from models.classifier import (
    IMAGE_EXTENSIONS,
    ImageInputError,
    ModelError,
    list_images,
    loaded_model,
    model_id_from_env,
    read_photo,
)
from models.triage import case_verdict


def expand(inputs: Sequence[str | Path]) -> list[Path]:
    """Files as given, folders searched recursively for images, in a stable order."""
    out: list[Path] = []
    for item in map(Path, inputs):
        out += list_images(item) if item.is_dir() else [item]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.predict", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="photos or folders of photos")
    parser.add_argument("--model", help="model folder or Hub id (default: MODEL_ID or the built-in model)")
    parser.add_argument("--json", action="store_true", help="one JSON object per photo")
    parser.add_argument("--case", action="store_true", help="also one verdict for all photos as one animal")
    parser.add_argument("--batch-size", type=_positive, default=16, help="photos per forward pass (default 16)")
    parser.add_argument("--threads", type=_positive, default=2, help="torch threads on the CPU (default 2)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    files = expand(args.inputs)
    if not files:
        print(f"error: no images in {' '.join(args.inputs)} ({', '.join(sorted(IMAGE_EXTENSIONS))})", file=sys.stderr)
        return 2
    try:
        return _predict(files, args)
    except ModelError as exc:  # a model that cannot be loaded: its sentence, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (--batch-size -1 classified nothing, and exited 0)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _predict(files: list[Path], args: argparse.Namespace) -> int:
    """Classify ``files`` batch by batch, a line (or a JSON object) per photo as it is done; the exit code."""
    failed = 0
    verdicts = []
    with loaded_model(args.model or model_id_from_env()) as m:
        policy = m.triage_policy
        for start in range(0, len(files), args.batch_size):
            rows: list[dict[str, object]] = []  # in input order, errors included
            images = []
            for path in files[start : start + args.batch_size]:
                try:
                    images.append(read_photo(path))
                    rows.append({"file": str(path)})
                except ImageInputError as exc:
                    failed += 1
                    rows.append({"file": str(path), "error": str(exc)})
            found = iter(m.photo_verdicts(images) if images else [])
            for row in rows:
                if "error" not in row:
                    verdict = next(found)
                    verdicts.append(verdict)
                    row.update(asdict(verdict))
                _emit(args.json, row)
    if args.case and verdicts:
        case = case_verdict(policy, verdicts)
        _emit(args.json, {"case": case.verdict, "probabilities": case.probabilities, "photos": len(verdicts)})
    return 1 if failed else 0


def _emit(as_json: bool, row: dict[str, object]) -> None:
    if as_json:
        print(json.dumps(row), flush=True)
    elif "error" in row:
        print(f"error: {row['error']}", file=sys.stderr, flush=True)  # the message names the file
    else:
        probs = " ".join(f"{k}={v:.3f}" for k, v in row["probabilities"].items())  # type: ignore[union-attr]
        why = f"\t{row['reason']}" if row.get("reason") else ""  # an unusable or unlike picture says why
        print(f"{row.get('file', 'case')}\t{row.get('verdict', row.get('case'))}\t{probs}{why}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
