"""The cattle classifier's lifecycle: the only code that loads, runs and frees the model.

Two policies, chosen with ``MODEL_POLICY``:

* ``per_request`` (default): the ZeroGPU pattern of the seed article. Each request loads the model inside
  the GPU handler, runs it under ``torch.inference_mode()`` and offloads it
  (``model.cpu(); del model; gc.collect(); torch.cuda.empty_cache()``). Nothing stays in memory between
  requests, at the price of a load per request.
* ``resident``: Hugging Face's current ZeroGPU advice. Load once when the app is imported and place the
  model on ``cuda`` at module level (on ZeroGPU ``spaces`` makes that legal outside the handler and keeps
  the weights ready for the GPU worker); every request reuses it.

Everything returned is plain Python (``dict[str, float]``, or the plain dataclasses of :mod:`models.triage` for
verdicts), because on ZeroGPU results cross a process
boundary and CUDA tensors must not. Expected failures raise :class:`ModelError` subclasses whose message
is meant for the user; ``app.py`` turns them into ``gr.Error`` inside the GPU handler (only ``gr.Error``
keeps its message across the ZeroGPU boundary), so this package does not import gradio.
"""

from __future__ import annotations

import gc
import logging
import os
import re
import struct
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import torch
from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError
from pillow_heif import register_heif_opener
from transformers import (  # here, at import: a lazy first import from two request threads at once can fail
    MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING,
    AutoConfig,
    AutoImageProcessor,
    AutoModelForImageClassification,
)

from models import i18n
from models.triage import (
    REFERENCE_FILE,
    UNUSABLE,
    CaseVerdict,
    PhotoVerdict,
    Reference,
    case_verdict,
    load_reference,
    photo_verdicts,
    reference_distances,
    reference_features,
)
from models.triage import Policy as TriagePolicy

DEFAULT_MODEL_ID = str(Path(__file__).resolve().parent / "cattle-triage")
"""The triage model trained here and committed with the code (lumpy skin / normal skin + a cattle gate; see its
``README.md``): a fresh clone classifies offline. Any transformers image classifier works as ``MODEL_ID``."""

HUB_MODEL_ID = "SrimathiE21ALR044/Cattle_Skin_Disease"
"""The former default, a public Hub ViT with 5 other skin conditions (no healthy class, no gate; not evaluated)."""

MAX_IMAGES = 8
"""Photos per request: enough for "a few at once", small enough for a tight ZeroGPU ``duration``."""

MAX_PIXELS = 40_000_000
"""Refuse decompression bombs before PIL decodes them (a 40 MP photo is already far above any phone's)."""

READ_SIDE = 1024
"""Every photo is read with its long side at most this (the model looks at 320 px; the page's preview and the case
report at less): a 12 MP phone photo decoded whole is 36 MB, eight of them in a case were 3.2 GB of the server's
memory with the model's copies. JPEG is decoded at a reduced scale directly (``Image.draft``). The browser shrinks a
photo to the same size before it uploads it (``space/shrink.js``); training reads its photos this way too."""

Policy = Literal["per_request", "resident"]

register_heif_opener()  # PIL opens HEIC/HEIF (an iPhone's default photo format) like any other image
PHOTO_FORMATS = "JPEG, PNG, WebP or HEIC"

log = logging.getLogger(__name__)


class ModelError(Exception):
    """An expected failure whose message is written for the user (shown as ``gr.Error`` by the app)."""


class ModelLoadError(ModelError):
    """The model or its image processor could not be loaded from ``MODEL_ID``."""


class ImageInputError(ModelError):
    """No image, too many, or a file that is not a readable image."""


@dataclass
class LifecycleStats:
    """Counters that make the lifecycle observable (tests, logs, the benchmark).

    ``last_model`` is a weak reference: it lets a caller check that the model really was freed without
    itself keeping the model alive.
    """

    loads: int = 0
    offloads: int = 0
    last_load_ms: float = 0.0
    last_offload_ms: float = 0.0
    last_model: weakref.ReferenceType[torch.nn.Module] | None = field(default=None, repr=False)


STATS = LifecycleStats()


def model_id_from_env() -> str:
    """``MODEL_ID`` (a Hub id or a local folder), or the documented default."""
    return os.environ.get("MODEL_ID", "").strip() or DEFAULT_MODEL_ID


def policy_from_env() -> Policy:
    """``MODEL_POLICY``: ``per_request`` (default) or ``resident``; anything else is a configuration bug."""
    value = os.environ.get("MODEL_POLICY", "per_request").strip().lower().replace("-", "_")
    if value not in ("per_request", "resident"):
        raise ValueError(f"MODEL_POLICY must be 'per_request' or 'resident', not {value!r}")
    return value  # type: ignore[return-value]


def open_images(paths: Sequence[str | os.PathLike[str] | None]) -> list[Image.Image]:
    """Open uploaded files as upright RGB images, with a user-facing message for each way this can fail."""
    real = [Path(p) for p in paths if p]
    if not real:
        raise ImageInputError(i18n.text("error.no_image", formats=PHOTO_FORMATS))
    if len(real) > MAX_IMAGES:
        raise ImageInputError(i18n.text("error.too_many", count=len(real), max=MAX_IMAGES))
    return [read_photo(path) for path in real]


IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff", ".heic", ".heif"}


def list_images(folder: str | os.PathLike[str]) -> list[Path]:
    """Image files under ``folder`` (recursive) that :func:`read_photo` opens, sorted, so runs are reproducible."""
    return sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file())


def read_photo(path: str | os.PathLike[str]) -> Image.Image:
    """One photo as upright RGB, the same way for the Space, ``models.predict`` and training.

    Phones store many photos sideways with an EXIF orientation saying how to turn them: the model must see the
    animal as a person would. Raises :class:`ImageInputError`, one sentence naming the file, for every way a file
    can fail: too large (as PIL or a HEIC's own boxes declare it: libheif decodes the declared size, whatever PIL
    reports after cropping), not an image at all, or one its decoder gives up on (``could not read photo X: …``,
    libheif's ``RuntimeError`` included: it must not reach the user as a traceback)."""
    name = Path(path).name
    try:
        with Image.open(path) as im:
            width, height = max((im.size, *_heif_declared_sizes(path, im)), key=lambda size: size[0] * size[1])
            if width * height > MAX_PIXELS:
                raise ImageInputError(
                    i18n.text("error.too_large", name=name, size=f"{width}x{height}", mp=MAX_PIXELS // 1_000_000)
                )
            im.draft(None, _fitted(im.size, READ_SIDE))  # JPEG: decoded at 1/2, 1/4 or 1/8 scale, never below
            photo = _eight_bit(ImageOps.exif_transpose(im)).convert("RGB")
            photo.thumbnail((READ_SIDE, READ_SIDE), Image.Resampling.LANCZOS)
            return photo
    except Image.DecompressionBombError:
        raise ImageInputError(i18n.text("error.bomb", name=name, mp=MAX_PIXELS // 1_000_000)) from None
    except UnidentifiedImageError:
        raise ImageInputError(i18n.text("error.not_image", name=name, formats=PHOTO_FORMATS)) from None
    except ImageInputError:
        raise
    except MemoryError:
        raise ImageInputError(i18n.text("error.memory", name=name)) from None
    except Exception as exc:  # noqa: BLE001 - truncated data, bad chunks, libheif's RuntimeError, EOFError…
        reason = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
        raise ImageInputError(i18n.text("error.damaged", name=name, reason=reason)) from None


def _fitted(size: tuple[int, int], longest: int) -> tuple[int, int]:
    """``size`` shrunk (aspect kept) until its long side is at most ``longest``: the size asked of ``draft``, which
    decodes at the smallest scale still at least this large both ways."""
    scale = min(1.0, longest / max(size))
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _eight_bit(im: Image.Image) -> Image.Image:
    """A 16-bit, 32-bit or float grey picture (a thermal camera's or a scanner's export) brought to 8 bits by its
    range; other modes as they are. PIL's own conversion clips every value above 255 to white: such a photo was
    refused as "almost one flat colour"."""
    if im.mode not in ("I", "F") and not im.mode.startswith("I;16"):
        return im
    values = np.asarray(im, dtype=np.float64)
    low, high = float(values.min()), float(values.max())
    if im.mode != "F" and low >= 0 and high <= 65535:
        low, high = 0.0, 65535.0  # integer samples: their type's range, as a viewer shows them
    elif im.mode == "F" and low >= 0 and high <= 1:
        low, high = 0.0, 1.0
    scaled = (values - low) * (255 / max(high - low, 1e-12)) + 0.5
    return Image.fromarray(np.clip(scaled, 0, 255).astype(np.uint8), "L")


_HEIF_META_LIMIT = 1 << 20
"""Bytes of a HEIF's ``meta`` box read for its declared sizes (a phone's is a few KB)."""


def _heif_declared_sizes(path: str | os.PathLike[str], image: Image.Image) -> list[tuple[int, int]]:
    """Each ``ispe`` (image spatial extent) a HEIF's ``meta`` box declares: libheif allocates these, up to 1 GP,
    before it finds that the data does not match. Empty for other formats."""
    if image.format not in ("HEIF", "AVIF"):
        return []
    try:
        return _ispe_boxes(path)
    except (OSError, struct.error):  # a box cut short: the decoder says what is wrong
        return []


def _ispe_boxes(path: str | os.PathLike[str]) -> list[tuple[int, int]]:
    """The ``ispe`` boxes (always 20 bytes: header, version, width, height) among the top-level ``meta`` box's."""
    with open(path, "rb") as handle:
        for _ in range(64):  # ftyp and meta come first; never walk a file of tiny boxes to its end
            header = handle.read(8)
            if len(header) < 8:
                return []
            size, kind = struct.unpack(">I4s", header)
            header_size = 8
            if size == 1:  # a 64-bit size follows
                size, header_size = struct.unpack(">Q", handle.read(8))[0], 16
            elif size == 0:  # the box runs to the end of the file
                size = header_size + _HEIF_META_LIMIT
            if size < header_size:
                return []
            if kind == b"meta":
                meta = handle.read(min(size - header_size, _HEIF_META_LIMIT))
                starts = (m.start() for m in re.finditer(b"\x00\x00\x00\x14ispe", meta))
                return [struct.unpack(">II", meta[at + 12 : at + 20]) for at in starts if at + 20 <= len(meta)]
            handle.seek(size - header_size, os.SEEK_CUR)
    return []


def photo_preview(path: str | os.PathLike[str] | None, longest: int = 1024) -> Image.Image | None:
    """The uploaded photo as the model will see it (upright, RGB), shrunk for the page, or None if it cannot be read.

    The page shows this rather than the file itself: browsers cannot show HEIC, and a 12 MP photo is slow on a
    phone. An unreadable file gets no preview; Classify says what is wrong with it."""
    if not path:
        return None
    try:
        image = read_photo(path)
    except ImageInputError:
        return None
    image.thumbnail((longest, longest), Image.Resampling.LANCZOS)
    return image


MIN_SIDE = 64
"""Photos smaller than this on their short side show too little to judge (the smallest of 1,700 real training photos
is 97 px)."""
MIN_CONTRAST = 8.0
"""A grey standard deviation below this is one flat colour (real photos: 18 and more)."""
MIN_DETAIL = 1.0
"""Mean absolute difference from a blurred copy below this is a picture without texture: a blank, a smooth
gradient (real photos: 2.4 and more, at 128 px)."""


def unusable_reason(image: Image.Image) -> str | None:
    """Why no model should answer this picture (too small, one flat colour, no texture), or ``None``.

    A classifier asked about a 1×1 image or a blank picture still returns probabilities, and a notifiable-first
    policy may turn them into an alarm; such pictures carry no evidence, so they are refused before the model."""
    if min(image.size) < MIN_SIDE:
        return i18n.text("reason.too_small", size=f"{image.width}×{image.height}")
    grey = ImageOps.grayscale(image)
    grey.thumbnail((128, 128))
    pixels = np.asarray(grey, dtype=np.float32)
    if pixels.std() < MIN_CONTRAST:
        return i18n.text("reason.flat")
    blurred = np.asarray(grey.filter(ImageFilter.GaussianBlur(2)), dtype=np.float32)
    if np.abs(pixels - blurred).mean() < MIN_DETAIL:
        return i18n.text("reason.no_detail")
    return None


def _load(model_id: str) -> tuple[torch.nn.Module, Any]:
    """Load model and processor on the CPU; every failure becomes a :class:`ModelLoadError`."""
    try:
        processor = AutoImageProcessor.from_pretrained(model_id)
        # low_cpu_mem_usage: accelerate's meta-device loading (weights are materialised once, no random
        # init first). transformers 5 always does this and ignores the flag; it matters on 4.x.
        # use_safetensors=None: safetensors when the repo has them, else the PyTorch checkpoint.
        model = AutoModelForImageClassification.from_pretrained(model_id, low_cpu_mem_usage=True)
    except Exception as exc:  # OSError (not found/offline), ValueError (wrong architecture), ...
        local = Path(model_id).expanduser()
        if local.exists():
            hint = f"the folder {local} has no loadable image-classification model (config.json + weights)."
        else:
            hint = (
                f"{model_id!r} is neither a local folder nor a reachable Hub model. "
                "Offline, download the model once (e.g. `hf download " + HUB_MODEL_ID + " --local-dir "
                "./model`) and start the app with MODEL_ID=./model, or leave MODEL_ID unset for the built-in model."
            )
        raise ModelLoadError(f"The classifier could not be loaded: {hint} ({type(exc).__name__})") from exc
    model.eval()
    return model, processor


def _load_reference(model_id: str, policy: TriagePolicy) -> Reference | None:
    """The training photos' features and their columns (``models.triage.REFERENCE_FILE``) for a model whose policy
    compares photos with them, else ``None``; a policy that asks for a missing file, or for non-cattle features the
    file does not hold, is a load error."""
    if not policy.uses_reference:
        return None
    try:
        local = Path(model_id).expanduser()
        if local.exists():
            path = local / REFERENCE_FILE
        else:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(model_id, REFERENCE_FILE))
        reference = load_reference(path)
        if policy.neighbour_margin is not None and reference.non_cattle is None:
            raise ValueError("it holds no non-cattle features, which the policy's neighbour_margin compares with")
        return reference
    except Exception as exc:  # missing, offline or damaged: the model cannot decide without it
        raise ModelLoadError(
            f"The classifier could not be loaded: its policy needs {REFERENCE_FILE} beside its weights "
            f"({type(exc).__name__}: {exc})"
        ) from exc


@dataclass
class LoadedModel:
    """A model ready to run, with the processor and device it belongs to."""

    model: torch.nn.Module
    processor: Any
    device: torch.device
    model_id: str
    reference: Reference | None = None
    """The training photos' features and the pooled columns they use (``_load_reference``), or ``None``."""

    def logits(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Raw logits, (images, labels), on the CPU as float64 numpy; averaged with the mirror images' where the
        model's policy says it was trained and calibrated that way (``mirror``)."""
        return self.scores(images)[0]

    def scores(self, images: Sequence[Image.Image]) -> tuple[np.ndarray, np.ndarray | None]:
        """The logits (as :meth:`logits`) and, for a model with a reference, each photo's distances from the training
        cattle and non-cattle photos (``models.triage.reference_distances``, of the pooled features the classifier
        reads, averaged with the mirror image's like the logits), else ``None``. One forward pass gives both."""
        policy = self.triage_policy  # built from the config: once per call
        inputs = self.processor(images=list(images), return_tensors="pt")
        pixel_values = inputs["pixel_values"].to(self.device)
        if policy.mirror:
            pixel_values = torch.cat([pixel_values, pixel_values.flip(dims=[3])])
        pooled: list[torch.Tensor] = []
        hook = None
        if self.reference is not None:  # the classifier's input is the pooled feature vector
            hook = self.model.classifier.register_forward_pre_hook(lambda _, args: pooled.append(args[0]))
        try:
            with torch.inference_mode():
                logits = self.model(pixel_values=pixel_values).logits.double().cpu().numpy()
        finally:
            if hook is not None:
                hook.remove()
        logits = logits.reshape(-1, len(images), logits.shape[-1]).mean(axis=0)
        if self.reference is None:
            return logits, None
        features = pooled[0].float().cpu().numpy()
        features = features.reshape(-1, len(images), features.shape[-1]).mean(axis=0)
        ref = self.reference
        mine = reference_features(features, ref.columns)
        non_cattle = ref.non_cattle if policy.neighbour_margin is not None else None
        return logits, reference_distances(policy, mine, ref.cattle, non_cattle)

    def predict(self, images: Sequence[Image.Image], top_k: int = 5) -> list[dict[str, float]]:
        """Top-``top_k`` ``label -> probability`` per image (uncalibrated softmax over every label), plain floats."""
        probs = torch.from_numpy(self.logits(images)).softmax(dim=-1).float()
        id2label = self.model.config.id2label
        k = min(top_k, probs.shape[-1])
        results = []
        for row in probs:
            values, indices = row.topk(k)
            results.append({str(id2label[int(i)]): round(float(v), 6) for v, i in zip(values, indices, strict=True)})
        return results

    @property
    def triage_policy(self) -> TriagePolicy:
        """The model's verdict policy (gate, temperature, thresholds), or the plain one for any other classifier."""
        return TriagePolicy.from_config(self.model.config)

    def photo_verdicts(self, images: Sequence[Image.Image]) -> list[PhotoVerdict]:
        """Per photo: verdict, calibrated triage probabilities, gate probability, distance from the training cattle
        (see :mod:`models.triage`); a picture with nothing to judge (``unusable_reason``) is ``unusable_photo`` with
        its reason instead."""
        answers = photo_verdicts(self.triage_policy, *self.scores(images))
        return [
            answer if (reason := unusable_reason(image)) is None else replace(answer, verdict=UNUSABLE, reason=reason)
            for image, answer in zip(images, answers, strict=True)
        ]

    def assess(self, images: Sequence[Image.Image]) -> CaseVerdict:
        """Several photos of one animal: each photo's verdict and one for the case."""
        return case_verdict(self.triage_policy, self.photo_verdicts(images))


def _load_to(model_id: str, device: torch.device) -> LoadedModel:
    """Load and place the model on ``device``, counting the load in :data:`STATS` (both policies use it)."""
    start = time.perf_counter()
    model, processor = _load(model_id)
    reference = _load_reference(model_id, TriagePolicy.from_config(model.config))
    model.to(device)
    STATS.loads += 1
    STATS.last_load_ms = (time.perf_counter() - start) * 1000
    STATS.last_model = weakref.ref(model)
    return LoadedModel(model=model, processor=processor, device=device, model_id=model_id, reference=reference)


def _free_cuda() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@contextmanager
def loaded_model(model_id: str | None = None, device: str | torch.device | None = None) -> Iterator[LoadedModel]:
    """Load → yield → offload. The one place the per-request lifecycle lives.

    Call it inside the ``@spaces.GPU`` handler with ``device=None``: the device is decided here, where
    ``torch.cuda.is_available()`` tells the truth on ZeroGPU (outside the handler it does not).
    """
    model_id = model_id or model_id_from_env()
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    holder = _load_to(model_id, dev)
    try:
        yield holder
    finally:
        offload(holder, STATS)


def offload(holder: Any, stats: LifecycleStats) -> None:
    """The offload of every model lifecycle here (classifier, captioner): ``model.cpu()``, the holder's reference
    dropped, ``gc.collect()`` and ``torch.cuda.empty_cache()``, counted in ``stats``."""
    start = time.perf_counter()
    holder.model.cpu()
    del holder.model
    _free_cuda()
    stats.offloads += 1
    stats.last_offload_ms = (time.perf_counter() - start) * 1000


class Classifier(Protocol):
    """What the app needs: a name to show and a classify call returning plain values."""

    model_id: str
    policy: Policy

    def classify(self, images: Sequence[Image.Image], top_k: int = 5) -> list[dict[str, float]]: ...

    def assess(self, images: Sequence[Image.Image]) -> CaseVerdict: ...


def prefetch(model_id: str) -> str | None:
    """Download a Hub model's files to the disk cache now, without loading them into memory.

    Per-request loading happens inside the ZeroGPU handler, whose ``duration`` is charged to visitors; a
    first request that also had to download ~350 MB would overrun it. Returns the local folder, or ``None``
    for a local ``MODEL_ID`` or when the Hub cannot be reached (the request then reports the load error).
    """
    if Path(model_id).expanduser().exists():
        return None
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(model_id, allow_patterns=["*.json", "*.safetensors"])
        if not any(Path(folder).glob("*.safetensors")):  # an older repo with a PyTorch checkpoint only
            folder = snapshot_download(model_id, allow_patterns=["*.json", "*.bin"])
    except Exception as exc:  # noqa: BLE001 - offline or unknown id: the request will say so, clearly
        log.warning("could not prefetch %s: %s", model_id, exc)
        return None
    return folder


@dataclass
class PerRequestClassifier:
    """Loads the model for each call and frees it afterwards (the seed article's ZeroGPU pattern)."""

    model_id: str = field(default_factory=model_id_from_env)
    policy: Policy = "per_request"

    def classify(self, images: Sequence[Image.Image], top_k: int = 5) -> list[dict[str, float]]:
        """Classify inside a fresh load; call from the GPU handler so the device choice is truthful."""
        with loaded_model(self.model_id) as m:
            return m.predict(images, top_k=top_k)

    def assess(self, images: Sequence[Image.Image]) -> CaseVerdict:
        """Verdicts inside a fresh load (one load for all the case's photos)."""
        with loaded_model(self.model_id) as m:
            return m.assess(images)


class ResidentClassifier:
    """Loads once at construction (module level in ``app.py``) and keeps the model for every request.

    On ZeroGPU (``SPACES_ZERO_GPU``) the model is placed on ``cuda`` right away, as Hugging Face advises;
    elsewhere on ``cuda`` when there is one, else the CPU. A failed load is remembered and retried on
    the next request, so a transient Hub outage at start-up does not need a restart.
    """

    policy: Policy = "resident"

    def __init__(self, model_id: str | None = None) -> None:
        self.model_id = model_id or model_id_from_env()
        on_zero = os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")
        self.device = torch.device("cuda" if on_zero or torch.cuda.is_available() else "cpu")
        self._loaded: LoadedModel | None = None
        self.load_error: ModelLoadError | None = None
        try:
            self._ensure()
        except ModelLoadError as exc:
            self.load_error = exc

    def _ensure(self) -> LoadedModel:
        if self._loaded is None:
            self._loaded = _load_to(self.model_id, self.device)
            self.load_error = None
        return self._loaded

    def classify(self, images: Sequence[Image.Image], top_k: int = 5) -> list[dict[str, float]]:
        """Classify with the resident model (loading it now only if the start-up load failed)."""
        return self._ensure().predict(images, top_k=top_k)

    def assess(self, images: Sequence[Image.Image]) -> CaseVerdict:
        """Verdicts with the resident model."""
        return self._ensure().assess(images)


def import_classes(model_id: str) -> None:
    """Import the model's own processor and model classes now, in the calling thread (the app's, at import).

    transformers imports each class the first time it is named (``_LazyModule``), and two requests doing that at
    once in their threads can fail with ``ImportError`` (a Space's first two classifications did). Reading the
    processor's config and resolving the model class imports both without loading any weights. A model that cannot
    be read is left to the request, which says why (:class:`ModelLoadError`)."""
    try:
        AutoImageProcessor.from_pretrained(model_id)
        _ = MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING[type(AutoConfig.from_pretrained(model_id))]
    except Exception as exc:  # noqa: BLE001 - not found, offline, not an image classifier: the request reports it
        log.warning("could not import the classes of %s now: %s", model_id, exc)


def make_classifier(policy: Policy | None = None, model_id: str | None = None) -> Classifier:
    """Build the classifier for ``MODEL_POLICY`` / ``MODEL_ID`` (arguments override the environment).

    Per-request: the Hub files are prefetched to disk here (at app import), so requests only load them, and the
    model's classes are imported here (:func:`import_classes`), so concurrent first requests cannot race for them.
    """
    policy = policy or policy_from_env()
    if policy == "resident":
        return ResidentClassifier(model_id)
    classifier = PerRequestClassifier(model_id or model_id_from_env())
    prefetch(classifier.model_id)
    import_classes(classifier.model_id)
    return classifier
