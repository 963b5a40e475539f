"""The operating point: temperature, the gate's threshold with the reference's distance and the neighbour margin, and
the triage thresholds, chosen on out-of-fold (out-of-source) predictions within the project's limits."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from models import triage
from models.train.config import (
    ALERT_ANSWERED_LIMIT,
    ALERT_MISSED_LIMIT,
    ANSWERED_RIGHT_LIMIT,
    COVERAGE_LIMIT,
    FALSE_ALARM_LIMIT,
    MAX_CATTLE_REJECTED,
    NEIGHBOUR_MARGINS,
    NEW_SOURCE_ANSWERED_RIGHT_LIMIT,
    NEW_SOURCE_COVERAGE_LIMIT,
    NOISY_MISSED_LIMIT,
    REFERENCE_QUANTILES,
)


def choose_operating_point(
    policy: triage.Policy,
    logits: np.ndarray,
    targets: np.ndarray,
    max_alert_missed: float = 0.02,
    min_coverage: float = 0.82,
    max_cattle_rejected: float = MAX_CATTLE_REJECTED,
    distances: np.ndarray | None = None,
    sources: np.ndarray | None = None,
    within: Predictions | None = None,
) -> triage.Policy:
    """Temperature, gate threshold and verdict thresholds from validation (out-of-fold) predictions.

    Gate: the threshold that turns away the most non-cattle photos (on a tie, the fewest cattle photos, then the
    lowest threshold) while turning away at most ``max_cattle_rejected`` of the cattle photos: a cattle photo turned
    away is a case never triaged, so 2 in 100 may be, inside the 3 % the project allows. With ``distances`` (each
    photo's out-of-fold ``triage.reference_distances``) the reference's threshold is chosen with it, among
    ``REFERENCE_QUANTILES`` of the cattle photos' distances or none, and where they hold distances to the non-cattle
    photos too, the neighbour check's margin, among ``NEIGHBOUR_MARGINS`` or none: the combination that turns away
    the most non-cattle photos within that share (then the fewest cattle photos, then the larger distance and
    margin). None may turn away more than that share of a notifiable disease's photos either: such a photo turned
    away is a case missed. "The most non-cattle photos" is their share averaged over their ``sources`` when given:
    the 498 ImageNet photos would otherwise outvote 116 goats. With ``within``, the limits hold for both sets of
    predictions and the share is the mean of both (each by source): the project asks for non-cattle turned away on
    new collections and on new photos of the collections it has, and the out-of-source share alone barely tells
    margins apart (a collection left out takes all of its kind with it: the whole goat collection left out leaves
    no goat to be near).

    Triage thresholds are scored as the app answers: a photo the gate or the reference turns away is not answered,
    and is a case missed when it shows a notifiable disease. Among thresholds that miss at most
    ``max_alert_missed`` of each alert class and answer at least ``min_coverage`` of the photos (the project asks
    for 80 %; 2 points of margin), the most accurate on answered photos; if none does, the same within the
    project's own limits (``ALERT_MISSED_LIMIT``, ``COVERAGE_LIMIT``). These tiers also call at most
    ``FALSE_ALARM_LIMIT`` of the other cattle photos a notifiable disease and answer ``ANSWERED_RIGHT_LIMIT`` of
    the photos right (else a missed case is avoided by calling many healthy animals sick). Where no threshold
    misses that few within the false-alarm limit (lumpy skin's label noise: photos without visible nodules), the
    limit on missed cases is the fewest that the false-alarm limit allows. Where that few are missed only below
    the coverage asked, the fewest missed at the coverage asked (margin first), up to ``NOISY_MISSED_LIMIT``. Else
    the most photos answered within the limits (missed cases, false alarms, answers right: with the same margin
    first, since the most answered sit on the limit); else within the first two alone; else the fewest missed.
    Never "the most accurate whatever it misses": a disease that spreads comes first, a false alarm (a movement
    stop, an authority's call) second, a wrong answer third; beyond label noise coverage gives way, because an
    unsure photo is *inconclusive — see a veterinarian*.

    ``within``: predictions for new photos of the collections trained on (pooled grouped CV), when ``logits`` are
    for collections left out. The coverage tiers then hold for ``within``, as the project asks them of the sources
    it has, and every limit on missed cases and false alarms for both; on the collections left out at least
    ``NEW_SOURCE_COVERAGE_LIMIT`` (with the same margin) must be answered, ``NEW_SOURCE_ANSWERED_RIGHT_LIMIT`` of
    them right, and their accuracy is what is maximised: a user's photos come from a collection the model never
    saw."""
    idx = {x: i for i, x in enumerate(policy.labels)}
    tri = np.isin(targets, [idx[x] for x in policy.triage_labels])
    tri_y = np.array([policy.triage_labels.index(policy.labels[t]) for t in targets[tri]])
    temperature = triage.fit_temperature(logits[tri][:, [idx[x] for x in policy.triage_labels]], tri_y)
    policy = replace(policy, temperature=temperature)
    if policy.gate_label is not None:
        policy = _choose_gate(policy, Predictions(logits, targets, distances, sources), max_cattle_rejected, within)
    candidates = _candidates(policy)
    new = _triage_scores(policy, candidates, Predictions(logits, targets, distances))
    known = new if within is None else _triage_scores(policy, candidates, within)
    return candidates[_pick(new, known, within is not None, max_alert_missed, min_coverage)]


def _candidates(policy: triage.Policy) -> list[triage.Policy]:
    """``policy`` with every pair of alert thresholds and answer threshold ``choose_operating_point`` tries: the
    first alert (lumpy skin) finely, the others coarsely (the grid is their product)."""
    grids = [np.arange(0.05, 0.951, 0.025 if i == 0 else 0.05) for i in range(len(policy.alert_labels))]
    return [
        replace(policy.with_alerts([round(float(a), 3) for a in alerts]), answer_threshold=round(float(b), 3))
        for alerts in itertools.product(*grids)
        for b in np.arange(0.5, 0.991, 0.01)
    ]


def _pick(new: np.ndarray, known: np.ndarray, two: bool, max_alert_missed: float, min_coverage: float) -> int:
    """The candidate ``choose_operating_point`` picks (its tiers, in order), by its ``_triage_scores`` on the
    collections left out (``new``) and on new photos of the known ones (``known``; the same as ``new`` unless
    ``two``)."""
    alarms_ok = (new[:, 3] <= FALSE_ALARM_LIMIT) & (known[:, 3] <= FALSE_ALARM_LIMIT)
    answered_as_itself = (new[:, 4] >= ALERT_ANSWERED_LIMIT) & (known[:, 4] >= ALERT_ANSWERED_LIMIT)
    # the fewest cases each estimate can miss within the false-alarm limit
    floors = [s[alarms_ok, 2].min() if alarms_ok.any() else 1.0 for s in (new, known)]

    def missed_within(limit: float) -> np.ndarray:
        return (new[:, 2] <= max(limit, floors[0]) + 1e-9) & (known[:, 2] <= max(limit, floors[1]) + 1e-9)

    margin = min_coverage - COVERAGE_LIMIT

    def right(extra: float) -> np.ndarray:
        ok = known[:, 1] >= ANSWERED_RIGHT_LIMIT + extra
        return ok & (new[:, 1] >= NEW_SOURCE_ANSWERED_RIGHT_LIMIT + extra) if two else ok

    for missed_limit, coverage_at_least in ((max_alert_missed, min_coverage), (ALERT_MISSED_LIMIT, COVERAGE_LIMIT)):
        ok = alarms_ok & answered_as_itself & right(0.0) & missed_within(missed_limit)
        ok &= known[:, 0] >= coverage_at_least
        if two:
            ok &= new[:, 0] >= NEW_SOURCE_COVERAGE_LIMIT + (margin if missed_limit == max_alert_missed else 0.0)
        if ok.any():
            return int(max(np.nonzero(ok)[0], key=lambda i: (round(new[i, 1], 4), new[i, 0])))
    # that few missed cases only below the coverage asked: at the coverage asked, with the answers right, the fewest
    # missed cases, up to NOISY_MISSED_LIMIT (label noise: photos filed under lumpy skin that show no lesion)
    worst_missed = np.maximum(new[:, 2], known[:, 2])
    for extra in (margin, 0.0):
        ok = (
            alarms_ok
            & right(0.0)
            & (worst_missed <= NOISY_MISSED_LIMIT + 1e-9)
            & (known[:, 0] >= COVERAGE_LIMIT + extra)
        )
        if two:
            ok &= new[:, 0] >= NEW_SOURCE_COVERAGE_LIMIT + extra
        if ok.any():
            return int(min(np.nonzero(ok)[0], key=lambda i: (round(worst_missed[i], 4), -round(new[i, 1], 4))))
    # the answers not right enough at that coverage: within the limits on missed cases, false alarms and answers
    # right, the most photos answered (the rest are "inconclusive — see a veterinarian"); else without the answers'
    # limit; else the fewest missed cases. Coverage gives way here: an unsure answer is safe, a wrong one is not.
    within_limits = alarms_ok & missed_within(ALERT_MISSED_LIMIT)
    # answers right with the coverage tiers' margin first: the most answered sit on the limit
    for ok in (within_limits & right(margin), within_limits & right(0.0), within_limits):
        if ok.any():
            return int(max(np.nonzero(ok)[0], key=lambda i: (round(new[i, 0], 3), round(new[i, 1], 4))))
    return int(min(range(len(new)), key=lambda i: (round(new[i, 2], 4), round(new[i, 3], 4), -new[i, 1])))


@dataclass(frozen=True)
class Predictions:
    """Out-of-fold predictions of photos with known targets: logits, targets and (for a model with a reference)
    ``triage.reference_distances``."""

    logits: np.ndarray
    targets: np.ndarray
    distances: np.ndarray | None = None
    sources: np.ndarray | None = None
    """Each photo's collection: the gate is chosen on the share of non-cattle photos it turns away per collection."""


def _triage_scores(policy: triage.Policy, candidates: Sequence[triage.Policy], data: Predictions) -> np.ndarray:
    """Per candidate (``policy``'s gate, its own thresholds), over the cattle photos: coverage, accuracy of the
    answered, the largest share of an alert class missed, the largest share of other cattle photos called an
    alert, the smallest share of an alert class answered as itself. A photo the gate or reference turns away counts
    as unanswered, and as missed for an alert class."""
    idx = {x: i for i, x in enumerate(policy.labels)}
    tri = np.isin(data.targets, [idx[x] for x in policy.triage_labels])
    y = np.array([policy.triage_labels.index(policy.labels[t]) for t in data.targets[tri]])
    away = policy.turned_away(data.logits[tri], None if data.distances is None else data.distances[tri])
    probs = policy.triage_probabilities(data.logits[tri])
    alerts = [(i, y == i) for i in (policy.triage_labels.index(x) for x in policy.alert_labels) if (y == i).any()]
    out = np.zeros((len(candidates), 5))
    for n, p in enumerate(candidates):
        answer = np.where(away, -2, p.decide_indices(probs))  # -1 inconclusive, -2 turned away
        answered, correct = answer >= 0, answer == y
        out[n, 0] = answered.mean()
        out[n, 1] = correct[answered].mean() if answered.any() else 0.0
        out[n, 2] = max([((answer[a] != -1) & ~correct[a]).mean() for _, a in alerts], default=0.0)
        out[n, 3] = max([(answer[~a] == i).mean() for i, a in alerts if (~a).any()], default=0.0)
        out[n, 4] = min([(answer[a] == i).mean() for i, a in alerts], default=1.0)
    return out


def _choose_gate(
    policy: triage.Policy, new: Predictions, max_cattle_rejected: float, within: Predictions | None = None
) -> triage.Policy:
    """``choose_operating_point``'s gate threshold, reference distance and neighbour margin (see there)."""
    scored = [_GateView(policy, new)] + ([_GateView(policy, within)] if within is not None else [])
    grid = np.round(np.arange(0.05, 0.96, 0.05), 2)
    references: list[float | None] = [None]
    margins: list[float | None] = [None]
    first = scored[0]
    if first.distances is not None and (~first.is_gate).any():
        cattle = first.distances[~first.is_gate, 0]
        references += sorted({round(float(np.quantile(cattle, q)), 6) for q in REFERENCE_QUANTILES}, reverse=True)
        if first.distances.shape[1] > 1 and not np.isnan(first.distances[:, 1]).all():
            margins += sorted((float(m) for m in NEIGHBOUR_MARGINS), reverse=True)
    unlike = {  # per view, what the reference and the neighbour check turn away: the same for every gate threshold
        (reference, margin): [
            replace(policy, reference_distance=reference, neighbour_margin=margin).unlike_cattle(
                view.distances, len(view.gate_p)
            )
            for view in scored
        ]
        for reference, margin in itertools.product(references, margins)
    }
    best, best_key = None, None
    for threshold, reference, margin in itertools.product(grid, references, margins):
        shares, cattle_away = [], []
        for view, checked in zip(scored, unlike[reference, margin], strict=True):
            away = (view.gate_p >= threshold) | checked
            cattle_away.append(away[~view.is_gate].mean() if (~view.is_gate).any() else 0.0)
            if cattle_away[-1] > max_cattle_rejected or any(away[r].mean() > max_cattle_rejected for r in view.alerts):
                break
            shares.append(float(np.mean([away[rows].mean() for rows in view.not_cattle])) if view.not_cattle else 0.0)
        else:
            key = (float(np.mean(shares)), -cattle_away[0])
            if best_key is None or key > best_key:
                best, best_key = (threshold, reference, margin), key
    threshold, reference, margin = best if best is not None else (max(grid), None, None)
    return replace(policy, gate_threshold=float(threshold), reference_distance=reference, neighbour_margin=margin)


class _GateView:
    """One set of out-of-fold predictions as ``_choose_gate`` scores it: the gate's probabilities, which photos are
    not cattle (by source), which show a notifiable disease, and the reference's distances (photos × columns)."""

    def __init__(self, policy: triage.Policy, data: Predictions) -> None:
        self.gate_p = policy.gate_probability(data.logits)
        targets = np.asarray(data.targets)
        self.is_gate = targets == policy.labels.index(policy.gate_label)
        kinds = np.zeros(len(targets)) if data.sources is None else np.asarray(data.sources)
        self.not_cattle = [self.is_gate & (kinds == k) for k in np.unique(kinds[self.is_gate])]
        self.alerts = [rows for x in policy.alert_labels if (rows := targets == policy.labels.index(x)).any()]
        self.distances = None if data.distances is None else triage.distance_columns(data.distances)
