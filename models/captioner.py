"""An image-to-text model that describes each written image for its caption's ``{caption}``: its lifecycle, the
classifier's (``models.classifier``): load → generate under ``torch.inference_mode()`` → offload
(``model.cpu(); del model; gc.collect(); torch.cuda.empty_cache()``), all in :func:`loaded_captioner`.

Any transformers model that ``AutoModelForImageTextToText`` loads and that captions an image without a chat
prompt: BLIP (``Salesforce/blip-image-captioning-large``), GIT, Florence-2 in its transformers form
(``florence-community/Florence-2-base``: the ``<DETAILED_CAPTION>`` task is asked), a ``VisionEncoderDecoder``
(``nlpconnect/vit-gpt2-image-captioning``). Remote code is never run. The pipeline only sees a callable from
encoded images to texts (:data:`pipeline.captions.Captioner`), so it never imports torch.

* The CLI (``--captioner MODEL``) loads the model once for the whole run and frees it at the end.
* The Space's ZeroGPU handler calls :func:`caption_jpegs` under ``@spaces.GPU``: load, caption, offload within one
  call, nothing kept between requests (the device is chosen inside the call, where CUDA is real).
"""

from __future__ import annotations

import io
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import (  # here, at import: a lazy first import from two request threads at once can fail
    MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING,
    AutoConfig,
    AutoImageProcessor,
    AutoModelForImageTextToText,
    AutoProcessor,
    AutoTokenizer,
    ProcessorMixin,
)

from models.classifier import LifecycleStats, ModelLoadError, offload

MAX_NEW_TOKENS = 40
"""Most tokens generated per caption: a sentence (a longer description is cut); SDXL's text encoders read 77 tokens
of the whole caption, trigger and words included, so more would mostly be lost in training."""

BATCH_SIZE = 8
"""Images per ``generate`` call: a page's pictures in one or two, small enough for any GPU or the CPU."""

PROMPTS = {"florence2": "<DETAILED_CAPTION>"}
"""The text a model type must be given with the image to caption it (Florence-2 does one task per prompt)."""

STATS = LifecycleStats()
"""Loads and offloads of the captioning model, and a weak reference to the last one (tests, logs)."""


@dataclass
class Captioner:
    """A loaded captioning model; calling it with encoded images gives one caption each (plain strings)."""

    model: torch.nn.Module
    inputs: Any
    """Makes the model's inputs from images (and the prompt): the model's processor, or its image processor."""
    tokenizer: Any
    device: torch.device
    model_id: str
    prompt: str = ""
    max_new_tokens: int = MAX_NEW_TOKENS
    batch_size: int = BATCH_SIZE

    def caption(self, images: Sequence[Image.Image]) -> list[str]:
        """One caption per image, in order: greedy (the same image always gets the same words), at most
        :attr:`max_new_tokens` tokens, white space collapsed."""
        texts: list[str] = []
        for start in range(0, len(images), self.batch_size):
            batch = images[start : start + self.batch_size]
            texts += self._generate([i if i.mode == "RGB" else i.convert("RGB") for i in batch])
        return texts

    def __call__(self, jpegs: Sequence[bytes]) -> list[str]:
        """Captions of encoded images (what the pipeline writes): the :data:`pipeline.captions.Captioner` call."""
        images = []
        for data in jpegs:
            with Image.open(io.BytesIO(data)) as image:
                images.append(image.convert("RGB"))
        return self.caption(images)

    def _generate(self, images: list[Image.Image]) -> list[str]:
        extra = {"text": [self.prompt] * len(images)} if self.prompt else {}
        inputs = self.inputs(images=images, return_tensors="pt", **extra).to(self.device)
        inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        with torch.inference_mode():
            ids = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        if "input_ids" in inputs and not self.model.config.is_encoder_decoder:
            ids = ids[:, inputs["input_ids"].shape[1] :]  # a decoder-only model repeats its prompt first
        return [" ".join(text.split()) for text in self.tokenizer.batch_decode(ids.cpu(), skip_special_tokens=True)]


def _load(model_id: str) -> tuple[torch.nn.Module, Any, Any]:
    """Model, input maker and tokenizer on the CPU; every failure becomes one :class:`ModelLoadError` sentence."""
    _image_to_text_config(model_id)
    try:
        processor = AutoProcessor.from_pretrained(model_id)
        if isinstance(processor, ProcessorMixin):  # images and prompt together (BLIP, GIT, Florence-2)
            inputs, tokenizer = processor, processor.tokenizer
        else:  # a VisionEncoderDecoder's folder: an image processor and a tokenizer, saved side by side
            inputs, tokenizer = AutoImageProcessor.from_pretrained(model_id), AutoTokenizer.from_pretrained(model_id)
        model = AutoModelForImageTextToText.from_pretrained(model_id)
    except Exception as exc:  # missing processor or weights, a class that needs remote code, ...
        raise ModelLoadError(
            f"The captioning model could not be loaded: {model_id} lacks what captioning needs (an image "
            f"processor, a tokenizer and weights) ({_why(exc)})"
        ) from exc
    model.eval()
    return model, inputs, tokenizer


def _image_to_text_config(model_id: str) -> Any:
    """The model's config, read before any weight: refused when it is not an image-to-text model."""
    try:
        config = AutoConfig.from_pretrained(model_id)
    except Exception as exc:  # OSError (no folder, no config.json, offline), ValueError (unknown model type)
        raise ModelLoadError(f"The captioning model could not be loaded: {_where(model_id)} ({_why(exc)})") from exc
    if type(config) not in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING:
        raise ModelLoadError(
            f"The captioning model could not be loaded: {model_id} is a {config.model_type!r} model, not an "
            "image-to-text one (such as BLIP, GIT or Florence-2)."
        )
    return config


def _where(model_id: str) -> str:
    local = Path(model_id).expanduser()
    if local.is_dir():
        return f"the folder {local} has no loadable model (config.json and weights)"
    return (
        f"{model_id!r} is neither a local folder nor a Hub model that can be reached (offline, download it once "
        "with `hf download MODEL --local-dir DIR` and name DIR)"
    )


def _why(exc: Exception) -> str:
    reason = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {reason[:200]}" if reason else type(exc).__name__


@contextmanager
def loaded_captioner(
    model_id: str,
    device: str | torch.device | None = None,
    max_new_tokens: int = MAX_NEW_TOKENS,
    batch_size: int = BATCH_SIZE,
) -> Iterator[Captioner]:
    """Load → yield → offload: the one place the captioning model lives (a run's length, or one request's).

    ``device=None`` picks CUDA when it is available, else the CPU; call it inside the ``@spaces.GPU`` handler on
    ZeroGPU, where that answer is true. Raises :class:`ModelLoadError` (one sentence) when it cannot load.
    """
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    start = time.perf_counter()
    model, inputs, tokenizer = _load(model_id)
    model.to(dev)
    STATS.loads += 1
    STATS.last_load_ms = (time.perf_counter() - start) * 1000
    STATS.last_model = weakref.ref(model)
    prompt = PROMPTS.get(model.config.model_type, "")
    holder = Captioner(model, inputs, tokenizer, dev, model_id, prompt, max(1, max_new_tokens), max(1, batch_size))
    del model
    try:
        yield holder
    finally:
        offload(holder, STATS)


@contextmanager
def pipeline_captioner(model_id: str) -> Iterator[Captioner]:
    """:func:`loaded_captioner` as ``pipeline`` asks for one (:data:`pipeline.captions.CaptionerLoader`, the CLI's
    default ``--captioner-loader``): on CUDA when there is one, a model that cannot be loaded a ``ValueError`` of
    :class:`ModelLoadError`'s one sentence."""
    with ExitStack() as held:
        try:
            captioner = held.enter_context(loaded_captioner(model_id))
        except ModelLoadError as exc:
            raise ValueError(str(exc)) from None
        yield captioner


def caption_jpegs(jpegs: Sequence[bytes], model_id: str, device: str | torch.device | None = None) -> list[str]:
    """Captions of encoded images with the model loaded for this call alone and freed before it returns: the
    per-request pattern, for a ZeroGPU handler to wrap in ``@spaces.GPU`` (plain strings cross its process
    boundary; CUDA tensors must not)."""
    if not jpegs:
        return []
    with loaded_captioner(model_id, device) as captioner:
        return captioner(jpegs)


def check_captioner(model_id: str) -> None:
    """Fail now, with :func:`loaded_captioner`'s sentence, if ``model_id`` is not an image-to-text model, without
    loading its weights; and import its model and processor classes in the calling thread (the Space's, at start:
    two requests' threads importing them at once can fail, as the classifier's did)."""
    _ = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING[type(_image_to_text_config(model_id))]
    try:
        AutoProcessor.from_pretrained(model_id)
    except Exception as exc:
        raise ModelLoadError(
            f"The captioning model could not be loaded: {model_id} lacks what captioning needs (an image "
            f"processor, a tokenizer and weights) ({_why(exc)})"
        ) from exc
