"""The classifier's fit: a ridge-regularised logistic head on the pooled features (L-BFGS, class-balanced, photos of
a large collection weighed down), or ``--tune top``'s fine-tuning of the head convolution from it; logits as
inference computes them."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm

from models.lite import READOUT_OFFSET, install_readout
from models.train.config import L2, L2_GATE, L2SP, MID_L2_FACTOR, READOUT_HEADROOM, SEED, TOP_LR
from models.train.features import top


def class_weights(targets: np.ndarray, n_labels: int) -> torch.Tensor:
    """Inverse-frequency weights (balanced accuracy is the target), cattle-only photos counted apart."""
    counts = np.bincount(targets[targets >= 0], minlength=n_labels).astype(float)
    weights = len(targets[targets >= 0]) / (n_labels * np.maximum(counts, 1))
    return torch.tensor(weights, dtype=torch.float32)


def train_top(
    model: torch.nn.Module,
    feats: torch.Tensor,
    pooled_feats: torch.Tensor,
    targets: np.ndarray,
    gate_index: int | None,
    epochs: int,
    lr: float = TOP_LR,
    l2: float = L2,
    l2_gate: float = L2_GATE,
    l2sp: float = L2SP,
    *,
    start: int,
    batch: int = 32,
    seed: int = SEED,
    desc: str = "train",
    max_steps: int | None = None,
) -> None:
    """Fine-tune the top (blocks ``start`` onward, the head convolution) and the classifier from the ridge head.

    Why it starts from ``fit_head`` and is held back: a randomly started head on ~300 triage photos overfits the
    top before the classifier means anything. So the ridge head comes first, and Adam then moves every trained
    weight a little, one random cached view per photo per epoch, under the same ridge penalty on the classifier
    (in standardised units, as ``fit_head``) and an L2-SP penalty pulling the convolutions back to ImageNet's
    weights. BatchNorm statistics stay ImageNet's (eval mode): batches of 32 would only add noise.
    """
    std = fit_head(model, pooled_feats, targets, gate_index, l2, l2_gate)
    enc = model.efficientnet.encoder
    top_modules = [*enc.blocks[start:], enc.top_conv, enc.top_bn]
    anchor = [p.detach().clone() for m in top_modules for p in m.parameters()]
    top_params = [p for m in top_modules for p in m.parameters()]
    penalty = ridge_penalty(model.config.num_labels, gate_index, l2, l2_gate)
    opt = torch.optim.Adam([*top_params, *model.classifier.parameters()], lr=lr)
    weights = class_weights(targets, model.config.num_labels)
    y = torch.as_tensor(targets)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    steps = epochs * math.ceil(len(targets) / batch)
    if max_steps is not None:
        steps = min(steps, max_steps)
    model.eval()
    step = 0
    with tqdm(total=steps, desc=desc, unit="step") as bar:
        while step < steps:
            order = rng.permutation(len(targets))
            view = torch.as_tensor(rng.integers(0, feats.shape[1], len(targets)))
            for s in range(0, len(order), batch):
                if step >= steps:
                    break
                idx = torch.as_tensor(order[s : s + batch])
                loss = _loss(top(model, feats[idx, view[idx]].float(), start), y[idx], weights, gate_index)
                ridge = (penalty * (model.classifier.weight * std) ** 2).sum()
                drift = sum(((p - a) ** 2).sum() for p, a in zip(top_params, anchor, strict=True))
                opt.zero_grad()
                (loss + ridge + l2sp * drift).backward()
                opt.step()
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}")


def source_balance(targets: np.ndarray, sources: Sequence[str], power: float = 1.0) -> np.ndarray:
    """Per-photo weights: a photo of a source with n photos of its label weighs n^-``power``, scaled so that each
    label's mean weight is 1 (``power`` 1: every source of a label weighs the same; 0: all photos alike).

    Why: a label's photos mostly from one collection teach that collection's breed, place and framing as the label
    (``--source-power``, ``SOURCE_POWER``)."""
    weights = np.ones(len(targets))
    sources = np.asarray(sources, dtype=object)
    for t in np.unique(targets):
        of_label = targets == t
        for name in np.unique(sources[of_label]):
            rows = of_label & (sources == name)
            weights[rows] = float(rows.sum()) ** -power
        weights[of_label] *= of_label.sum() / weights[of_label].sum()
    return weights


def _loss(
    logits: torch.Tensor,
    y: torch.Tensor,
    weights: torch.Tensor,
    gate_index: int | None,
    sample_weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Weighted cross-entropy (class ``weights``, times ``sample_weights`` per sample when given); a cattle-only
    photo contributes ``-log(1 - p_not_cattle)``."""
    labelled = y >= 0
    total = logits.new_zeros(())
    count = logits.new_zeros(())
    if labelled.any():
        w = weights[y[labelled]]
        if sample_weights is not None:
            w = w * sample_weights[labelled]
        ce = torch.nn.functional.cross_entropy(logits[labelled], y[labelled], reduction="none")
        total = total + (w * ce).sum()
        count = count + w.sum()
    if gate_index is not None and (~labelled).any():
        logp = logits[~labelled].log_softmax(-1)
        not_gate = torch.cat([logp[:, :gate_index], logp[:, gate_index + 1 :]], dim=1).logsumexp(-1)
        total = total - not_gate.sum()
        count = count + (~labelled).sum()
    return total / count.clamp(min=1)


def predict_logits(
    model: torch.nn.Module, feats: torch.Tensor, start: int, mirror: bool = True, batch: int = 128
) -> np.ndarray:
    """Logits as inference computes them: of view 0 (the photo), averaged with view 1 (its mirror) if ``mirror``."""
    model.eval()
    views = [0, 1] if mirror and feats.shape[1] > 1 else [0]
    with torch.inference_mode():
        return np.mean(
            [
                np.concatenate(
                    [top(model, feats[s : s + batch, v].float(), start).numpy() for s in range(0, len(feats), batch)]
                )
                for v in views
            ],
            axis=0,
        ).astype(np.float64)


def fit_head(
    model: torch.nn.Module,
    feats: torch.Tensor,
    targets: np.ndarray,
    gate_index: int | None,
    l2: float,
    l2_gate: float,
    readout: tuple[torch.Tensor, list[int]] | None = None,
    mid_l2_factor: float = MID_L2_FACTOR,
    photo_weights: np.ndarray | None = None,
) -> torch.Tensor:
    """Set the classifier to an L2-regularised multinomial logistic regression on pooled features (photos, views, D).

    Why not SGD on the head: with ~300 triage photos and 1280 features the head overfits unless it is held back
    hard, and a strong ridge penalty on standardised features is the direct way to do that; full-batch L-BFGS
    finds its one optimum in seconds, deterministically. Every view of a photo is a sample. The gate row gets its
    own, weaker penalty (``l2_gate``): "is this cattle" has ~900 photos behind it, triage ~300. The
    standardisation is folded into the weights, so the saved model is a plain transformers classifier. Returns the
    features' scale (std), in which the penalty is measured.

    ``readout = (maps, slots)``: ``feats`` are the 1280 final features followed by the pooled last-block inputs
    ``maps`` (photos, views, C, H, W); the final features ``slots`` (one per label) leave the fit and carry the
    fitted weights of the last-block inputs instead (``models.lite.install_readout``). Feature columns past the
    network's own (``config.hidden_dim``) are mid-level ones, penalised at ``mid_l2_factor`` of their row's penalty.
    ``photo_weights`` multiply each photo's class weight (``source_balance``).
    """
    columns = torch.arange(feats.shape[-1])
    if readout is not None:
        columns = columns[~torch.isin(columns, torch.as_tensor(readout[1]))]
    x = feats.reshape(-1, feats.shape[-1])[:, columns].float()
    y = torch.as_tensor(np.repeat(targets, feats.shape[1]))
    mean, std = x.mean(dim=0), x.std(dim=0) + 1e-6
    z = (x - mean) / std
    n_labels = model.config.num_labels
    torch.manual_seed(SEED)
    linear = torch.nn.Linear(z.shape[1], n_labels)
    mid = columns >= model.config.hidden_dim
    penalty = ridge_penalty(n_labels, gate_index, l2, l2_gate) * torch.where(mid, mid_l2_factor, 1.0)
    weights = class_weights(targets, n_labels)
    per_sample = None
    if photo_weights is not None:
        per_sample = torch.as_tensor(np.repeat(photo_weights, feats.shape[1]), dtype=torch.float32)
    opt = torch.optim.LBFGS(linear.parameters(), max_iter=500, tolerance_grad=1e-6, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = _loss(linear(z), y, weights, gate_index, per_sample) + (penalty * linear.weight**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        weight = linear.weight / std
        bias = linear.bias - weight @ mean
        if readout is None:
            model.classifier.weight.copy_(weight)
            model.classifier.bias.copy_(bias)
            return std
        maps, slots = readout
        final = columns[~mid]
        scale = (largest_readout(weight[:, mid], maps) / READOUT_HEADROOM).clamp(min=1e-6)
        install_readout(model, weight[:, mid], scale, slots)
        model.classifier.weight.zero_()
        model.classifier.weight[:, final] = weight[:, ~mid]
        model.classifier.weight[range(len(slots)), slots] = scale
        model.classifier.bias.copy_(bias - READOUT_OFFSET * scale)
    return std


def largest_readout(weight: torch.Tensor, maps: torch.Tensor, batch: int = 64) -> torch.Tensor:
    """Per readout row, the largest ``|weight · x|`` over every pixel of ``maps`` (photos, views, C, H, W), a batch
    of photos at a time (the float16 cache is not copied to float32 whole)."""
    parts = [
        torch.einsum("kc,nvchw->knvhw", weight, maps[s : s + batch].float()).abs().flatten(1).amax(1)
        for s in range(0, len(maps), batch)
    ]
    return torch.stack(parts).amax(0)


def ridge_penalty(n_labels: int, gate_index: int | None, l2: float, l2_gate: float) -> torch.Tensor:
    """The classifier rows' penalties, (labels, 1): ``l2`` for triage rows, the weaker ``l2_gate`` for the gate row."""
    penalty = torch.full((n_labels, 1), float(l2))
    if gate_index is not None:
        penalty[gate_index] = l2_gate
    return penalty
