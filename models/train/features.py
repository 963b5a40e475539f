"""The frozen backbone's part: each photo, its mirror and mild augmentations through the trunk once (the feature
cache), pooled features for the head, and the trained top's forward pass."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageOps
from tqdm import tqdm

from models.classifier import read_photo
from models.lite import image_processor
from models.train.config import SEED


def augment(im: Image.Image, rng: np.random.Generator) -> Image.Image:
    """A random view: crop 80-100 % of the area, flip, rotate ±10°, brightness/contrast/colour ±20 %.

    Mild on purpose: a lumpy-skin photo cropped to half its area may have lost its nodules and still be trained as
    lumpy skin (stronger views cost lumpy-skin recall: docs/triage-model.md)."""
    w, h = im.size
    area = w * h * rng.uniform(0.8, 1.0)
    ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
    cw, ch = min(w, round(math.sqrt(area * ratio))), min(h, round(math.sqrt(area / ratio)))
    x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    im = im.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        im = ImageOps.mirror(im)
    im = im.rotate(float(rng.uniform(-10, 10)), resample=Image.Resampling.BILINEAR, fillcolor=(124, 116, 104))
    for enhance in (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color):
        im = enhance(im).enhance(float(rng.uniform(0.8, 1.2)))
    return im


def trunk(model: torch.nn.Module, pixel_values: torch.Tensor, upto: int) -> torch.Tensor:
    """The frozen part: stem and blocks ``[0, upto)``."""
    h = model.efficientnet.embeddings(pixel_values)
    for block in model.efficientnet.encoder.blocks[:upto]:
        h = block(h)
    return h


def pooled(model: torch.nn.Module, hidden: torch.Tensor, start: int) -> torch.Tensor:
    """Blocks ``[start, 16)``, head convolution and global pooling: the 1280 features the classifier reads."""
    enc = model.efficientnet.encoder
    for block in enc.blocks[start:]:
        hidden = block(hidden)
    return enc.top_activation(enc.top_bn(enc.top_conv(hidden))).mean(dim=(2, 3))


def top(model: torch.nn.Module, hidden: torch.Tensor, start: int) -> torch.Tensor:
    """The trained part → logits; ``hidden`` is a trunk output, or already pooled features (head-only tuning)."""
    features = hidden if hidden.dim() == 2 else pooled(model, hidden, start)
    return model.classifier(model.dropout(features))


def pool_views(model: torch.nn.Module, feats: torch.Tensor, start: int, batch: int = 256) -> torch.Tensor:
    """Pooled features of every cached view, for head-only tuning (the rest of the network stays frozen)."""
    model.eval()
    flat = feats.reshape(-1, *feats.shape[2:])
    with torch.inference_mode():
        out = torch.cat([pooled(model, flat[s : s + batch].float(), start) for s in range(0, len(flat), batch)])
    return out.reshape(feats.shape[0], feats.shape[1], -1)


def cache_features(
    model: torch.nn.Module,
    paths: Sequence[Path],
    views: int,
    upto: int,
    image_size: int,
    seed: int = SEED,
    batch: int = 32,
) -> tuple[torch.Tensor, list[Image.Image]]:
    """Trunk outputs, (photos, views, C, H, W) in float16: view 0 is the photo as inference sees it, view 1 its
    mirror image (the second view inference averages), the rest random augmentations."""
    processor = image_processor(image_size)
    rng = np.random.default_rng(seed)
    out: list[torch.Tensor] = []
    thumbs: list[Image.Image] = []
    model.eval()
    with torch.inference_mode(), tqdm(total=len(paths), desc="features", unit="photo") as bar:
        for start in range(0, len(paths), batch):
            images = []
            for path in paths[start : start + batch]:
                im = read_photo(path)
                thumbs.append(im.copy())
                images += [im, ImageOps.mirror(im), *(augment(im, rng) for _ in range(views - 2))][:views]
            pixels = processor(images=images, return_tensors="pt")["pixel_values"]
            feats = trunk(model, pixels, upto).half()
            out.append(feats.reshape(-1, views, *feats.shape[1:]))
            bar.update(len(images) // views)
    return torch.cat(out), thumbs
