"""Fine-tune EfficientNet-Lite into a cattle triage model with a cattle gate, offline, in minutes on 2 CPU cores.

``python -m models.train DATA_DIR -o MODEL_DIR`` (``--help`` lists every option): the CLI over
``models.train.run.train``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from models.train.config import DataError, TrainConfig
from models.train.data import scan
from models.train.run import train
from pipeline.settings import add_settings, from_args


def _headline(metrics: dict[str, object]) -> dict[str, object]:
    loso = dict(metrics.get("leave_one_source_out") or {})
    return {k: v for k, v in loso.items() if k not in ("per_source", "per_kind", "confusion")}


def build_parser() -> argparse.ArgumentParser:
    """``main``'s options: the data, output and machine ones here, every training setting from ``TrainConfig``."""
    parser = argparse.ArgumentParser(prog="python -m models.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path, help="one sub-folder per triage class (breed_* = cattle, no label)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="model folder to write")
    parser.add_argument("--classes", nargs="+", help="triage class folders to use (default: all but breed_*)")
    parser.add_argument(
        "--not-cattle",
        type=Path,
        nargs="+",
        help="folders of photos that are not cattle: adds the not_cattle gate label",
    )
    parser.add_argument(
        "--sources",
        type=Path,
        help="provenance CSV (file, source_repo) naming each photo's collection; else its folder",
    )
    parser.add_argument("--extra-cattle", type=Path, nargs="*", default=[], help="more cattle photos, no triage label")
    parser.add_argument(
        "--cattle-as", help="triage class for breed_*/--extra-cattle photos (e.g. normal_skin); default: none"
    )
    parser.add_argument("--feature-cache", type=Path, help="development: reuse the trunk features of an earlier run")
    parser.add_argument(
        "--save-predictions",
        type=Path,
        help="development: the out-of-source predictions as .npz (bench/operating_points)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    add_settings(parser.add_argument_group("training settings (models.train.TrainConfig)"), TrainConfig)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI; a data or settings error is one ``error:`` line and exit 2 (a user's mistake, not a traceback)."""
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        config = from_args(TrainConfig, args)
        data = scan(args.data_dir, args.classes, args.not_cattle, args.extra_cattle, args.cattle_as, args.sources)
        metrics = train(
            data,
            args.output,
            config,
            cattle_as=args.cattle_as,
            feature_cache=args.feature_cache,
            predictions=args.save_predictions,
        )
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    shown = ("policy", "cross_validation", "holdout")
    print(json.dumps({k: metrics[k] for k in shown} | {"leave_one_source_out": _headline(metrics)}, indent=2))
    print(f"wrote {args.output} in {metrics['training']['seconds']} s", file=sys.stderr)
    return 0
