"""Fine-tune EfficientNet-Lite into a cattle triage model with a cattle gate, offline, in minutes on 2 CPU cores.

``python -m models.train DATA_DIR -o MODEL_DIR [--not-cattle DIR ...] [--classes a b] [--extra-cattle DIR ...]
[--cattle-as LABEL] [--sources CSV]``

DATA_DIR has one sub-folder per triage class; folders named ``breed_*`` are cattle photos without a triage
label (they teach the gate what cattle look like) unless ``--classes`` names them. With ``--not-cattle`` the
model gets one more label, ``not_cattle``, in the same softmax head: one backbone pass serves gate and triage,
and any transformers loader sees an ordinary classifier. Cattle photos without a triage label are trained to
"not not_cattle" (loss ``-log(1 - p_not_cattle)``).

Training's steps, one module each, in the order a run takes them (``run.train`` drives them):

- ``config``: ``TrainConfig``, every setting of a run (the CLI's options are built from its fields);
- ``data``: the class folders scanned into a ``Dataset``, each photo's collection, misfiled photos relabelled;
- ``features``: each photo, its mirror and a mild augmentation through the frozen ImageNet trunk once (cached);
- ``groups``: near-duplicate groups (perceptual hash, then ImageNet-feature cosine) and the splits that never cut
  one (grouped folds, the held-out share, the photos each leave-one-source-out fit leaves out);
- ``head``: the classifier's fit, a ridge-regularised logistic head on the pooled final and mid-level features
  (L-BFGS), or ``--tune top``'s fine-tuning of the head convolution from it;
- ``operating_point``: temperature, gate, reference and neighbour thresholds, triage thresholds, chosen on the
  out-of-source (and grouped-CV) predictions within the project's limits;
- ``evaluation``: the metrics of ``metrics.json``, per source and per kind;
- ``run``: grouped CV repeated, each collection left out, the policy chosen, the final fit on every photo, the
  model folder and ``metrics.json``;
- ``cli``: ``python -m models.train``.

What each default rests on, and the experiments behind them: ``docs/triage-model.md`` ("Why the training
defaults").
"""

from models.train.cli import build_parser, main
from models.train.config import (
    ALERT_ANSWERED_LIMIT,
    ALERT_MISSED_LIMIT,
    ANSWERED_RIGHT_LIMIT,
    COVERAGE_LIMIT,
    CV_FOLDS,
    FALSE_ALARM_LIMIT,
    FEATURE_LINK_COSINE,
    L2,
    L2_GATE,
    L2SP,
    MAX_CATTLE_REJECTED,
    MID_L2_FACTOR,
    NEIGHBOUR_K,
    NEW_SOURCE_ANSWERED_RIGHT_LIMIT,
    NEW_SOURCE_COVERAGE_LIMIT,
    NOISY_MISSED_LIMIT,
    REFERENCE_K,
    SEED,
    SOURCE_POWER,
    TRAINED_IMAGE_SIZE,
    DataError,
    TrainConfig,
)
from models.train.data import CATTLE_ONLY, LABEL_FIXES, Dataset, photo_sources, relabelled, scan
from models.train.evaluation import evaluate
from models.train.features import cache_features, pool_views, pooled, trunk
from models.train.groups import (
    grouped_folds,
    holdout_mask,
    join_similar,
    phash_groups,
    sources_to_leave_out,
    subsample_groups,
)
from models.train.head import class_weights, fit_head, predict_logits, source_balance, train_top
from models.train.operating_point import Predictions, choose_operating_point
from models.train.run import train

__all__ = [
    "ALERT_ANSWERED_LIMIT",
    "ALERT_MISSED_LIMIT",
    "ANSWERED_RIGHT_LIMIT",
    "CATTLE_ONLY",
    "COVERAGE_LIMIT",
    "CV_FOLDS",
    "FALSE_ALARM_LIMIT",
    "FEATURE_LINK_COSINE",
    "L2",
    "L2SP",
    "L2_GATE",
    "LABEL_FIXES",
    "MAX_CATTLE_REJECTED",
    "MID_L2_FACTOR",
    "NEIGHBOUR_K",
    "NEW_SOURCE_ANSWERED_RIGHT_LIMIT",
    "NEW_SOURCE_COVERAGE_LIMIT",
    "NOISY_MISSED_LIMIT",
    "REFERENCE_K",
    "SEED",
    "SOURCE_POWER",
    "TRAINED_IMAGE_SIZE",
    "DataError",
    "Dataset",
    "Predictions",
    "TrainConfig",
    "build_parser",
    "cache_features",
    "choose_operating_point",
    "class_weights",
    "evaluate",
    "fit_head",
    "grouped_folds",
    "holdout_mask",
    "join_similar",
    "main",
    "phash_groups",
    "photo_sources",
    "pool_views",
    "pooled",
    "predict_logits",
    "relabelled",
    "scan",
    "source_balance",
    "sources_to_leave_out",
    "subsample_groups",
    "train",
    "train_top",
    "trunk",
]
