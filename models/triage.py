"""From a classifier's logits to a verdict: cattle gate, calibrated triage probabilities, inconclusive, case.

Pure numpy, so the trainer (choosing thresholds on cross-validated predictions), ``models.predict``, the app
and the bench all decide with the same code. The policy lives in the model's ``config.json`` under ``triage``
(written by ``models.train``)::

    "triage": {"gate_label": "not_cattle", "gate_threshold": 0.5,
               "triage_labels": ["lumpy_skin", "normal_skin", "fmd"], "temperature": 1.3,
               "alerts": {"lumpy_skin": 0.3, "fmd": 0.5}, "answer_threshold": 0.8, "mirror": true}

* gate: the model has one softmax head over triage labels + ``gate_label``; a photo whose gate probability
  reaches ``gate_threshold`` is ``not_cattle``. Any transformers loader still sees a plain classifier.
* reference (``reference_distance``, ``reference_k``): a photo whose pooled features lie farther than
  ``reference_distance`` from the ``reference_k`` most similar cattle photos of training (``REFERENCE_FILE`` beside
  the weights) is ``not_cattle`` too. Why beside the gate: the gate learned from the few kinds of non-cattle photo
  it was shown and lets most of a kind it never saw through (leave one source out, the whole ImageNet sample left
  out: 54 % turned away); distance to cattle needs no example of what is not cattle (gate and reference: 90 %).
* neighbours (``neighbour_margin``, ``neighbour_k``): a photo whose ``neighbour_k`` most similar non-cattle photos of
  training (the reference file's ``non_cattle``) are more similar, on average, than its ``reference_k`` most similar
  cattle photos, by more than ``neighbour_margin``, is ``not_cattle`` too. Why: the gate is one linear boundary, and a
  new goat photo of a breed it was shown can fall on the cattle side of it while lying among the goats it learned
  from (grouped CV, goats turned away 0.87 → 0.91, docs/triage-model.md).
* triage probabilities: softmax of the triage labels' logits divided by ``temperature`` (temperature scaling,
  fitted on validation predictions). They are reported for every photo, gated or not.
* mirror: when true, the logits are the mean of the photo's and its mirror image's (a cow facing left is the
  same case facing right); the thresholds were chosen on logits computed that way.
* verdict: an alert label (a notifiable disease: lumpy skin disease, foot-and-mouth disease) is answered as soon
  as its probability reaches its own threshold in ``alerts``, which may be below one half: a missed case costs
  more than a false alarm (of several alerts reached, the most probable). Any other label is answered only when
  it reaches ``answer_threshold``; otherwise ``inconclusive``. (An older config's single ``alert_label`` /
  ``alert_threshold`` reads as one alert.)

A model without a ``triage`` section (any Hub classifier) gets the plain policy: all labels, temperature 1, no
gate, the most probable label always answered.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from models.i18n import text

NOT_CATTLE = "not_cattle"
INCONCLUSIVE = "inconclusive"
NOTIFIABLE = ("lumpy_skin", "fmd")
"""Labels of notifiable diseases (lumpy skin disease, foot-and-mouth disease): the trainer makes them alerts."""
REFERENCE_FILE = "cattle_reference.safetensors"
"""The training cattle photos' :func:`reference_features` (``features``), the pooled columns they use (``columns``)
and, for a ``neighbour_margin``, the non-cattle photos' (``non_cattle``), beside a model whose policy uses them."""
UNUSABLE = "unusable_photo"
"""A photo no model should answer (too small, blank, one flat colour): ``models.classifier.unusable_reason``."""


@dataclass(frozen=True)
class Policy:
    """How logits become a verdict; see the module docstring."""

    labels: tuple[str, ...]
    triage_labels: tuple[str, ...]
    gate_label: str | None = None
    gate_threshold: float = 0.5
    temperature: float = 1.0
    alerts: tuple[tuple[str, float], ...] = ()
    """(label, threshold) of each notifiable label, answered from its threshold (module docstring)."""
    answer_threshold: float = 0.0
    mirror: bool = False
    """Average the logits of the photo and its mirror image (the trainer scored its thresholds that way)."""
    reference_distance: float | None = None
    """Turned away beyond this :func:`reference_distance` from the training cattle photos; ``None``: no such check."""
    reference_k: int = 5
    neighbour_margin: float | None = None
    """Turned away when more like the training non-cattle photos than the cattle ones by this much (cosine); ``None``:
    no such check."""
    neighbour_k: int = 10

    @classmethod
    def from_config(cls, config: Any) -> Policy:
        """The policy of a transformers config (``id2label`` plus the optional ``triage`` section)."""
        id2label = {int(k): str(v) for k, v in config.id2label.items()}
        labels = tuple(id2label[i] for i in sorted(id2label))
        section = getattr(config, "triage", None) or {}
        return cls.from_dict(labels, section)

    @classmethod
    def from_dict(cls, labels: Sequence[str], section: Mapping[str, Any]) -> Policy:
        labels = tuple(labels)
        gate = section.get("gate_label")
        triage = tuple(section.get("triage_labels") or [x for x in labels if x != gate])
        alerts = dict(section.get("alerts") or {})
        distance, margin = section.get("reference_distance"), section.get("neighbour_margin")
        if section.get("alert_label"):  # the single-alert form of earlier models
            alerts[section["alert_label"]] = section.get("alert_threshold", 0.5)
        missing = [x for x in (*triage, *alerts, *([gate] if gate else [])) if x not in labels]
        if missing:
            raise ValueError(f"triage config names labels the model does not have: {missing}")
        return cls(
            labels=labels,
            triage_labels=triage,
            gate_label=gate,
            gate_threshold=float(section.get("gate_threshold", 0.5)),
            temperature=float(section.get("temperature", 1.0)),
            alerts=tuple((x, float(alerts[x])) for x in sorted(alerts, key=_order(triage))),
            answer_threshold=float(section.get("answer_threshold", 0.0)),
            mirror=bool(section.get("mirror", False)),
            reference_distance=None if distance is None else float(distance),
            reference_k=int(section.get("reference_k", 5)),
            neighbour_margin=None if margin is None else float(margin),
            neighbour_k=int(section.get("neighbour_k", 10)),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``triage`` section for ``config.json`` (labels themselves live in ``id2label``)."""
        out = asdict(self)
        out.pop("labels")
        out["triage_labels"] = list(self.triage_labels)
        out["alerts"] = dict(self.alerts)
        return out

    @property
    def alert_labels(self) -> tuple[str, ...]:
        """The notifiable labels, answered from their own thresholds."""
        return tuple(label for label, _ in self.alerts)

    def with_alerts(self, thresholds: Sequence[float]) -> Policy:
        """The same policy with new alert thresholds, in ``alert_labels`` order (threshold search)."""
        return replace(self, alerts=tuple(zip(self.alert_labels, map(float, thresholds), strict=True)))

    # ---------------------------------------------------------------- arrays
    def gate_probability(self, logits: np.ndarray) -> np.ndarray:
        """P(gate label) from the full softmax (zeros without a gate); ``logits`` is (n, labels)."""
        if self.gate_label is None:
            return np.zeros(len(logits))
        return softmax(logits)[:, self.labels.index(self.gate_label)]

    def triage_probabilities(self, logits: np.ndarray, temperature: float | None = None) -> np.ndarray:
        """Calibrated probabilities over the triage labels, (n, triage labels)."""
        idx = [self.labels.index(x) for x in self.triage_labels]
        return softmax(np.asarray(logits, dtype=np.float64)[:, idx] / (temperature or self.temperature))

    @property
    def uses_reference(self) -> bool:
        """Whether verdicts need :func:`reference_distances` (the reference file beside the weights)."""
        return self.reference_distance is not None or self.neighbour_margin is not None

    def far_from_cattle(self, distances: np.ndarray | None, n: int) -> np.ndarray:
        """Per photo, whether it lies beyond ``reference_distance`` from the training cattle photos (all ``False``
        without the check or without ``distances``)."""
        if self.reference_distance is None or distances is None:
            return np.zeros(n, bool)
        return distance_columns(distances)[:, 0] > self.reference_distance

    def nearer_non_cattle(self, distances: np.ndarray | None, n: int) -> np.ndarray:
        """Per photo, whether it is nearer the training non-cattle photos than the cattle ones by more than
        ``neighbour_margin`` (all ``False`` without the check or without ``distances``)."""
        if self.neighbour_margin is None or distances is None:
            return np.zeros(n, bool)
        d = distance_columns(distances)
        if d.shape[1] < 2:
            raise ValueError("this policy compares with the non-cattle photos: distances need both columns")
        return d[:, 0] - d[:, 1] > self.neighbour_margin

    def unlike_cattle(self, distances: np.ndarray | None, n: int) -> np.ndarray:
        """Per photo, whether the reference turns it away: too far from the training cattle photos, or nearer the
        non-cattle ones (``distances``: :func:`reference_distances`)."""
        return self.far_from_cattle(distances, n) | self.nearer_non_cattle(distances, n)

    def gated(self, logits: np.ndarray) -> np.ndarray:
        """Per photo, whether the gate's probability reaches its threshold (all ``False`` without a gate)."""
        if self.gate_label is None:
            return np.zeros(len(logits), bool)
        return self.gate_probability(np.asarray(logits, dtype=np.float64)) >= self.gate_threshold

    def turned_away(self, logits: np.ndarray, distances: np.ndarray | None = None) -> np.ndarray:
        """Per photo, ``not_cattle`` or not: the gate's probability reached, or too unlike the training cattle."""
        return self.gated(logits) | self.unlike_cattle(distances, len(logits))

    def verdicts(self, logits: np.ndarray, distances: np.ndarray | None = None) -> list[str]:
        """One verdict per row of logits (and of :func:`reference_distance`, where the model has a reference)."""
        logits = np.asarray(logits, dtype=np.float64)
        gated = self.turned_away(logits, distances)
        answered = self.decide_indices(self.triage_probabilities(logits))
        names = [*self.triage_labels, INCONCLUSIVE]  # index -1: inconclusive
        return [NOT_CATTLE if g else names[i] for g, i in zip(gated, answered, strict=True)]

    def decide(self, probs: np.ndarray) -> str:
        """The verdict for one photo's (or one case's) triage probabilities."""
        choice = int(self.decide_indices(np.asarray(probs, dtype=np.float64)[None])[0])
        return INCONCLUSIVE if choice < 0 else self.triage_labels[choice]

    def decide_indices(self, probs: np.ndarray) -> np.ndarray:
        """Vectorised ``decide``: per row of (n, triage labels) probabilities, the index of the answered triage
        label, or -1 for inconclusive (the trainer scores thousands of thresholds on thousands of photos)."""
        probs = np.asarray(probs, dtype=np.float64)
        alert_idx = [self.triage_labels.index(x) for x in self.alert_labels]
        others = [i for i in range(len(self.triage_labels)) if i not in alert_idx]
        out = np.full(len(probs), -1)
        if others:
            top = np.asarray(others)[probs[:, others].argmax(axis=1)]
            out = np.where(probs[np.arange(len(probs)), top] >= self.answer_threshold, top, -1)
        if alert_idx:
            reached = probs[:, alert_idx] >= np.array([t for _, t in self.alerts])
            best = np.where(reached, probs[:, alert_idx], -1.0).argmax(axis=1)
            out = np.where(reached.any(axis=1), np.asarray(alert_idx)[best], out)
        return out


@dataclass(frozen=True)
class PhotoVerdict:
    """One photo's answer, plain Python (it crosses the ZeroGPU process boundary)."""

    verdict: str
    probabilities: dict[str, float]
    """Calibrated triage probabilities, always present (also for ``not_cattle`` and ``inconclusive``)."""
    gate: float | None = None
    """P(not cattle), or ``None`` for a model without a gate."""
    reason: str | None = None
    """Why an ``unusable_photo`` was not answered, or why a photo the gate let through is ``not_cattle`` (for the
    user)."""
    distance: float | None = None
    """:func:`reference_distance` from the training cattle photos, or ``None`` for a model without a reference."""


@dataclass(frozen=True)
class CaseVerdict:
    """Several photos of one animal: one verdict for the case plus each photo's."""

    verdict: str
    probabilities: dict[str, float]
    photos: list[PhotoVerdict] = field(default_factory=list)
    animal: str = "cattle"
    """The animal the visitor said the photos show (``models.animals``); only cattle are judged by the model."""


def photo_verdicts(policy: Policy, logits: np.ndarray, distances: np.ndarray | None = None) -> list[PhotoVerdict]:
    """Per-photo verdicts with rounded, plain-float probabilities; a photo the reference turned away (though the gate
    let it through) says why in its ``reason``: unlike the training cattle photos, or more like the non-cattle ones."""
    logits = np.asarray(logits, dtype=np.float64)
    probs = policy.triage_probabilities(logits)
    gates = policy.gate_probability(logits)
    far, nearer = policy.far_from_cattle(distances, len(logits)), policy.nearer_non_cattle(distances, len(logits))
    gated = policy.gated(logits)
    to_cattle = None if distances is None else distance_columns(distances)[:, 0]
    out = []
    for i, (verdict, row, gate) in enumerate(zip(policy.verdicts(logits, distances), probs, gates, strict=True)):
        scores = {label: round(float(p), 6) for label, p in zip(policy.triage_labels, row, strict=True)}
        out.append(
            PhotoVerdict(
                verdict,
                scores,
                round(float(gate), 6) if policy.gate_label else None,
                reason=_reason_turned_away(bool(gated[i]), bool(far[i]), bool(nearer[i])),
                distance=None if to_cattle is None else round(float(to_cattle[i]), 6),
            )
        )
    return out


def _reason_turned_away(gated: bool, far: bool, nearer: bool) -> str | None:
    """Why the reference turned a photo away, when the gate alone did not."""
    if gated:
        return None
    if far:
        return text("reason.unlike_cattle")
    return text("reason.like_non_cattle") if nearer else None


def reference_features(pooled: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
    """Pooled features (n, channels) as the reference compares them: the ``columns`` kept, square roots (the
    Hellinger map: a ReLU network's pooled activations are skewed; the reference alone, leave one source out, turned
    away 91 → 95 % of the ImageNet sample at 2 % of cattle), unit length (cosine similarity is then a dot product)."""
    x = np.asarray(pooled, dtype=np.float32)
    if columns is not None:
        x = x[:, columns]
    x = np.sqrt(np.clip(x, 0.0, None))
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def save_reference(
    folder: Path, features: np.ndarray, columns: np.ndarray, non_cattle: np.ndarray | None = None
) -> Path:
    """Write ``REFERENCE_FILE`` into a model ``folder``: the cattle photos' :func:`reference_features` (float16:
    2.7 MB for ~1,050 photos), the pooled ``columns`` they use and, for a policy with ``neighbour_margin``, the
    non-cattle photos' (``non_cattle``)."""
    from safetensors.numpy import save_file

    path = Path(folder) / REFERENCE_FILE
    tensors = {"features": np.asarray(features, np.float16), "columns": np.asarray(columns, np.int64)}
    if non_cattle is not None:
        tensors["non_cattle"] = np.asarray(non_cattle, np.float16)
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path))  # it writes a view's buffer
    return path


@dataclass(frozen=True)
class Reference:
    """:func:`save_reference`'s arrays: the training cattle photos' features, the pooled columns they use, and the
    non-cattle photos' features (``None`` in a file without them)."""

    cattle: np.ndarray
    columns: np.ndarray
    non_cattle: np.ndarray | None = None


def load_reference(path: Path) -> Reference:
    """:func:`save_reference`'s features (as float32) and columns."""
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    non_cattle = tensors.get("non_cattle")
    return Reference(
        tensors["features"].astype(np.float32),
        tensors["columns"],
        None if non_cattle is None else non_cattle.astype(np.float32),
    )


def reference_distance(features: np.ndarray, reference: np.ndarray, k: int = 5) -> np.ndarray:
    """1 − the mean cosine similarity of each row of ``features`` to its ``k`` most similar rows of ``reference``
    (both :func:`reference_features`): the k-nearest-neighbour distance of Sun et al. (2022), "Out-of-distribution
    detection with deep nearest neighbors"."""
    sims = np.asarray(features, dtype=np.float32) @ np.asarray(reference, dtype=np.float32).T
    k = min(k, sims.shape[1])
    return 1.0 - np.partition(sims, -k, axis=1)[:, -k:].mean(axis=1, dtype=np.float64)


def reference_distances(
    policy: Policy, features: np.ndarray, cattle: np.ndarray, non_cattle: np.ndarray | None = None
) -> np.ndarray:
    """Per row of ``features`` (:func:`reference_features`), its :func:`reference_distance` to the ``cattle`` photos
    (``policy.reference_k`` most similar) and, where ``non_cattle`` are given, to them (``policy.neighbour_k``) or
    NaN: (n, 2), what :meth:`Policy.unlike_cattle` reads."""
    n = len(features)
    out = np.full((n, 2), np.nan)
    out[:, 0] = reference_distance(features, cattle, policy.reference_k)
    if non_cattle is not None and len(non_cattle):
        out[:, 1] = reference_distance(features, non_cattle, policy.neighbour_k)
    return out


def distance_columns(distances: np.ndarray) -> np.ndarray:
    """``distances`` as (n, columns): an older caller's one distance per photo is its first column."""
    d = np.asarray(distances, dtype=np.float64)
    return d[:, None] if d.ndim == 1 else d


def case_verdict(policy: Policy, photos: Sequence[PhotoVerdict]) -> CaseVerdict:
    """One verdict for several photos of the same animal.

    Photos judged not to show cattle (or unusable) are left out; if none is left the case is ``not_cattle`` (or
    ``unusable_photo``). One photo answered with an alert label makes the case that label (one photo showing
    lesions is enough to call the vet);
    otherwise the mean of the cattle photos' probabilities is decided like one photo.
    """
    cattle = [p for p in photos if p.verdict not in (NOT_CATTLE, UNUSABLE)]
    if not cattle:
        mean = _mean_probs(policy, photos)
        refused = NOT_CATTLE if any(p.verdict == NOT_CATTLE for p in photos) else UNUSABLE
        return CaseVerdict(refused, mean, list(photos))
    mean = _mean_probs(policy, cattle)
    alerted = [p for p in cattle if p.verdict in policy.alert_labels]
    if alerted:  # the most probable of the alerts answered, over the photos that answered it
        label = max({p.verdict for p in alerted}, key=lambda x: max(p.probabilities[x] for p in alerted))
        return CaseVerdict(label, mean, list(photos))
    verdict = policy.decide(np.array([mean[x] for x in policy.triage_labels]))
    return CaseVerdict(verdict, mean, list(photos))


def _mean_probs(policy: Policy, photos: Sequence[PhotoVerdict]) -> dict[str, float]:
    if not photos:
        return {x: 0.0 for x in policy.triage_labels}
    return {x: round(float(np.mean([p.probabilities[x] for p in photos])), 6) for x in policy.triage_labels}


def _order(triage_labels: Sequence[str]) -> Any:
    """Sort key: alerts in the order of the triage labels (a saved config's JSON may sort its keys)."""
    return lambda x: triage_labels.index(x) if x in triage_labels else len(triage_labels)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    """ECE of the top probability: |accuracy - confidence| per equal-width confidence bin, weighted by count."""
    probs = np.asarray(probs)
    conf = probs.max(axis=1)
    correct = probs.argmax(axis=1) == np.asarray(labels)
    edges = np.linspace(0, 1, bins + 1)
    ece = 0.0
    for lo, hi in itertools.pairwise(edges):
        inside = (conf > lo) & (conf <= hi)
        if inside.any():
            ece += inside.mean() * abs(correct[inside].mean() - conf[inside].mean())
    return float(ece)


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature minimising the negative log-likelihood (golden-section search on log T in [0.05, 20])."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)

    def nll(log_t: float) -> float:
        p = softmax(logits / np.exp(log_t))
        return float(-np.log(np.clip(p[np.arange(len(labels)), labels], 1e-12, None)).mean())

    lo, hi = np.log(0.05), np.log(20.0)
    g = (np.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    for _ in range(60):
        if nll(a) < nll(b):
            hi, b = b, a
            a = hi - g * (hi - lo)
        else:
            lo, a = a, b
            b = lo + g * (hi - lo)
    return float(np.exp((lo + hi) / 2))
