"""The optional captioning model (``--captioner``, ``{caption}``) on a tiny image-to-text model saved here.

The model is a ``VisionEncoderDecoder`` (1-layer ViT encoder, 1-layer GPT-2 decoder) with a word-level tokenizer of
17 words made from scratch: random weights, so its captions are meaningless, but greedy decoding makes them the
same for the same image, and different for different pictures: only the plumbing is under test.
"""

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from factories import engraving, mixed_page, pdf_from_images, text_page, woodcut
from PIL import Image
from test_models import save_tiny_vit
from tokenizers import Tokenizer, decoders, pre_tokenizers
from tokenizers.models import WordLevel
from transformers import (
    GPT2Config,
    PreTrainedTokenizerFast,
    VisionEncoderDecoderConfig,
    VisionEncoderDecoderModel,
    ViTConfig,
    ViTImageProcessor,
)

from models import captioner as captioning
from models.captioner import ModelLoadError, caption_jpegs, loaded_captioner
from pipeline import Execution, Options, run
from pipeline.captions import CaptionTemplate, captioner_note
from pipeline.cli import main
from pipeline.writer import read_manifest

ROOT = Path(__file__).resolve().parents[1]
WORDS = (
    "a", "an", "engraving", "of", "cow", "hat", "man", "woman", "tree", "house", "horse", "dog", "ship", "river",
    "field", "church", "woodcut",
)  # fmt: skip
PAD, BOS, EOS, UNK = 0, 1, 2, 3
CLI = ["--no-ocr", "--min-side", "1", "--crop", "always", "--workers", "1"]
QUICK = {"ocr": False, "min_side": 1, "crop": "always"}
"""Quick runs: no OCR, every picture written however small, as a region; one process."""


def save_tiny_captioner(folder: Path) -> Path:
    """A tiny image-to-text model, its image processor and tokenizer, saved as ``from_pretrained`` reads them.

    Weights drawn wider than transformers' default (0.2, not 0.02) so that the image, not the decoder alone,
    decides the words; special tokens other than the end are never generated, nor the end first (no empty
    caption)."""
    vocab = {"[PAD]": PAD, "[BOS]": BOS, "[EOS]": EOS, "[UNK]": UNK} | {w: i + 4 for i, w in enumerate(WORDS)}
    words = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.decoder = decoders.WordPiece(prefix="##")  # words joined by spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=words, bos_token="[BOS]", eos_token="[EOS]", pad_token="[PAD]", unk_token="[UNK]"
    )
    torch.manual_seed(0)
    encoder = ViTConfig(
        image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=37, initializer_range=0.2,
    )  # fmt: skip
    decoder = GPT2Config(
        vocab_size=len(vocab), n_positions=64, n_embd=32, n_layer=1, n_head=2, bos_token_id=BOS, eos_token_id=EOS,
        pad_token_id=PAD, initializer_range=0.2, tie_word_embeddings=False,
    )  # fmt: skip
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id, config.pad_token_id, config.eos_token_id = BOS, PAD, EOS
    config.tie_word_embeddings = False
    model = VisionEncoderDecoderModel(config=config)
    generation = model.generation_config
    generation.decoder_start_token_id, generation.pad_token_id, generation.eos_token_id = BOS, PAD, EOS
    generation.suppress_tokens, generation.begin_suppress_tokens = [PAD, BOS, UNK], [EOS]
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_captioner(tmp_path_factory.mktemp("tiny-captioner"))


def _jpeg(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).convert("RGB").save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two pages among text columns: an engraving and a woodcut on the first, an engraving on the second; three
    pictures written (regions: ``crop="always"``), none a duplicate, two of them captioned in one call."""
    first = text_page(800, 1100, seed=1)
    first[90:400, 100:700] = engraving(600, 310, seed=1)
    first[650:980, 150:650] = woodcut(500, 330, seed=2)
    return pdf_from_images(tmp_path_factory.mktemp("pdf") / "issue.pdf", [first, mixed_page(seed=2)])


def _written(folder: Path) -> dict[str, dict]:
    """Each written image: its bytes, its ``.txt`` and its ``metadata.jsonl`` line."""
    lines = [json.loads(line) for line in (folder / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    return {
        line["file_name"]: {
            "jpeg": (folder / line["file_name"]).read_bytes(),
            "txt": (folder / line["file_name"]).with_suffix(".txt").read_text(encoding="utf-8"),
            "text": line["text"],
        }
        for line in lines
    }


def test_load_caption_offload_leaves_no_model_behind(tiny: Path) -> None:
    """Load → plain, repeatable captions (several batches) → offload: the model is gone after the block."""
    jpegs = [_jpeg(engraving(200, 160, seed=1)), _jpeg(woodcut(180, 220, seed=2)), _jpeg(engraving(90, 90, seed=3))]
    loads, offloads = captioning.STATS.loads, captioning.STATS.offloads
    with loaded_captioner(str(tiny), batch_size=2) as captioner:
        assert captioning.STATS.loads == loads + 1 and captioning.STATS.offloads == offloads
        assert captioner.device == torch.device("cuda" if torch.cuda.is_available() else "cpu")
        texts = captioner(jpegs)
        assert captioner(jpegs[::-1]) == texts[::-1], "greedy: the same image, the same words, in any batch"
        assert captioner.caption([Image.open(io.BytesIO(jpegs[0]))]) == texts[:1]
    assert all(type(text) is str and text.strip() == text and text for text in texts)
    assert set(" ".join(texts).split()) <= set(WORDS)
    assert len(set(texts)) > 1, "the tiny model must tell pictures apart, or the tests below prove nothing"
    assert captioning.STATS.offloads == offloads + 1
    gc.collect()
    assert captioning.STATS.last_model is not None and captioning.STATS.last_model() is None, (
        "the model outlives its block while the caller still holds the captioner"
    )


def test_caption_jpegs_loads_and_frees_within_one_call(tiny: Path) -> None:
    """The Space's per-request function: a load and an offload per call, the same captions as a held model."""
    jpegs = [_jpeg(engraving(200, 160, seed=1)), _jpeg(woodcut(180, 220, seed=2))]
    with loaded_captioner(str(tiny)) as captioner:
        expected = captioner(jpegs)
    loads, offloads = captioning.STATS.loads, captioning.STATS.offloads
    assert caption_jpegs(jpegs, str(tiny)) == expected
    assert (captioning.STATS.loads, captioning.STATS.offloads) == (loads + 1, offloads + 1)
    gc.collect()
    assert captioning.STATS.last_model() is None
    assert caption_jpegs([], str(tiny)) == [] and captioning.STATS.loads == loads + 1, "nothing to caption: no load"


def test_the_models_text_reaches_each_images_txt_and_metadata(tiny: Path, pdf: Path, tmp_path: Path) -> None:
    """A real run: each written image's ``.txt`` and ``metadata.jsonl`` text hold what the model says of that very
    image (its written JPEG, read back); with the default template, first, before the kind."""
    with loaded_captioner(str(tiny)) as captioner:
        own_options = Options(caption="{caption}", captioner=str(tiny), **QUICK)
        run([pdf], tmp_path / "own/", own_options, Execution(), captioner=captioner)
        run([pdf], tmp_path / "default/", Options(captioner=str(tiny), **QUICK), captioner=captioner)
        own, default = _written(tmp_path / "own"), _written(tmp_path / "default")
        described = {name: captioner([image["jpeg"]])[0] for name, image in own.items()}
    assert len(own) == 3 and len(set(described.values())) == 3, described
    for name, image in own.items():
        assert image["txt"] == image["text"] == described[name]
    for name, image in default.items():
        assert image["txt"] == image["text"]
        assert image["text"].startswith(described[name] + ", monochrome "), image["text"]
    assert all(not row["warning"] for row in read_manifest(tmp_path / "own"))


def test_one_image_the_model_fails_on_is_a_warning_not_the_end_of_the_run(pdf: Path, tmp_path: Path) -> None:
    """A captioner that fails on one image: that image's caption loses its ``{caption}`` piece, its page's
    ``warning`` names it, and every other image keeps its own."""
    bad: list[bytes] = []

    def captioner(jpegs: list[bytes]) -> list[str]:
        if not bad:
            bad.append(jpegs[0])  # the first image it is shown
        if bad[0] in jpegs:
            raise RuntimeError("CUDA out of\n memory")
        return [f"picture {len(jpeg)}" for jpeg in jpegs]

    options = Options(caption="{caption}, {kind}", captioner="fake", **QUICK)
    summary = run([pdf], tmp_path / "out/", options, captioner=captioner)
    assert summary.images == 3
    images = _written(tmp_path / "out")
    failed = [name for name, image in images.items() if image["jpeg"] == bad[0]]
    assert len(failed) == 1
    for name, image in images.items():
        described = "" if name in failed else f"picture {len(image['jpeg'])}, "
        assert image["txt"] == image["text"] and image["text"].startswith(described + "monochrome "), image["text"]
    warnings = [row["warning"] for row in read_manifest(tmp_path / "out")]
    assert warnings == [f"captioner failed on {failed[0]}: CUDA out of memory", ""], "the first page's first image"


def test_the_cli_captions_with_a_model_folder_and_frees_it(tiny: Path, pdf: Path, tmp_path: Path) -> None:
    offloads = captioning.STATS.offloads
    assert main([str(pdf), "-o", str(tmp_path / "out/"), "--captioner", str(tiny), "--caption", "{caption}", *CLI]) == 0
    assert captioning.STATS.offloads == offloads + 1, "the model is freed when the run ends"
    images = _written(tmp_path / "out")
    with loaded_captioner(str(tiny)) as captioner:
        described = {name: captioner([image["jpeg"]])[0] for name, image in images.items()}
    assert len(images) == 3 and all(described.values())
    for name, image in images.items():
        assert image["txt"] == image["text"] == described[name]


def test_a_folder_that_is_no_captioning_model_is_one_clear_sentence(
    tiny: Path, tmp_path: Path, pdf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    message = rf"^The captioning model could not be loaded: the folder {empty} has no loadable model"
    with pytest.raises(ModelLoadError, match=message), loaded_captioner(str(empty)):
        pass
    classifier = save_tiny_vit(tmp_path / "vit")
    with pytest.raises(ModelLoadError, match=r"is a 'vit' model, not an image-to-text one"):
        caption_jpegs([b"x"], str(classifier))
    with pytest.raises(ModelLoadError, match=r"neither a local folder nor a Hub model"):
        captioning.check_captioner(str(tmp_path / "missing"))
    captioning.check_captioner(str(tiny))
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    for name in ("config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"):
        (no_weights / name).write_bytes((tiny / name).read_bytes())
    with pytest.raises(ModelLoadError, match=r"lacks what captioning needs"):
        caption_jpegs([b"x"], str(no_weights))

    capsys.readouterr()
    assert main([str(pdf), "-o", str(tmp_path / "out/"), "--captioner", str(classifier), *CLI]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("error: The captioning model could not be loaded: ")
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_the_cli_says_when_torch_or_transformers_are_missing(
    pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "models.captioner", None)  # import models.captioner raises ImportError
    assert main([str(pdf), "-o", str(tmp_path / "out/"), "--captioner", "any/model", *CLI]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: --captioner needs torch and transformers") and "pip install" in last


FAKE_LOADER = """
from contextlib import contextmanager

EVENTS = []


@contextmanager
def load(model_id):
    if model_id == "missing":
        raise ValueError("no such captioning model: missing")
    EVENTS.append(("load", model_id))
    try:
        yield _Fake(model_id)
    finally:
        EVENTS.append(("free", model_id))


class _Fake:
    device = "nowhere"

    def __init__(self, model_id):
        self.model_id = model_id

    def __call__(self, jpegs):
        return [f"{self.model_id} saw {len(j) > 0}" for j in jpegs]
"""


def test_the_cli_loads_a_captioner_through_the_loader_it_is_given(
    pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pipeline`` defines the loader (``pipeline.captions.CaptionerLoader``) and imports none: ``--captioner-loader
    MODULE:FUNCTION`` names it (default ``models.captioner``'s), and the run gets what it loads, freed at the end."""
    (tmp_path / "fake_loader_i57.py").write_text(FAKE_LOADER)
    monkeypatch.syspath_prepend(str(tmp_path))
    args = [str(pdf), "--caption", "{caption}", "--captioner-loader", "fake_loader_i57:load", *CLI]
    assert main([*args, "-o", str(tmp_path / "out/"), "--captioner", "pretend/model"]) == 0
    events = sys.modules["fake_loader_i57"].EVENTS
    assert events == [("load", "pretend/model"), ("free", "pretend/model")]
    images = _written(tmp_path / "out")
    assert images and all(image["txt"] == "pretend/model saw True" for image in images.values())
    assert "captioning with pretend/model on nowhere" in capsys.readouterr().err
    assert main([*args, "-o", str(tmp_path / "no/"), "--captioner", "missing"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: no such captioning model: missing"
    for bad, says in (("fake_loader_i57:nothing", "not MODULE:FUNCTION"), ("no_such_module_i57:load", "cannot import")):
        argv = [str(pdf), "-o", str(tmp_path / "bad/"), "--captioner", "m", "--caption", "{caption}", *CLI]
        assert main([*argv, "--captioner-loader", bad]) == 2
        assert says in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "no").exists() and not (tmp_path / "bad").exists()


def test_the_pipeline_imports_no_torch_without_a_captioner() -> None:
    """``pipeline`` runs where torch and transformers are not installed; only ``--captioner`` needs them."""
    code = (
        "import sys; sys.modules['torch'] = sys.modules['transformers'] = None; "
        "import pipeline.cli, pipeline.orchestrator, pipeline.options; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_model_and_its_caption_placeholder_go_together(pdf: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"fills \{caption\}, which the caption template '\{trigger\}, \{kind\}'"):
        Options(caption="{trigger}, {kind}", captioner="some/model")
    assert Options(captioner="  ").captioner is None, "a blank field names no model"
    with pytest.raises(ValueError, match="none was given to run"):
        run([pdf], tmp_path / "a/", Options(captioner="some/model"))
    with pytest.raises(ValueError, match="the options name no model"):
        run([pdf], tmp_path / "b/", Options(), captioner=lambda jpegs: ["x"] * len(jpegs))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_caption_placeholder_is_empty_without_a_model_and_said_once(
    pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a model ``{caption}`` is empty, as ``{trigger}`` is without a word; a template of the user's own
    with it gets one note, the default none (the default output is what it was before ``{caption}`` existed)."""
    assert CaptionTemplate("{caption}, {words}").caption("s", 1, None, "a legend", "", "a cow") == "a cow, a legend"
    assert CaptionTemplate().caption("s", 1, None, "a legend", "monochrome line art") == (
        "monochrome line art, a legend"
    )
    assert "--captioner MODEL" in captioner_note(CaptionTemplate("{trigger}, {caption}"), None)
    assert captioner_note(CaptionTemplate("{trigger}, {caption}"), "some/model") == ""
    assert captioner_note(CaptionTemplate(), None) == ""
    assert main([str(pdf), "-o", str(tmp_path / "new/"), *CLI]) == 0
    assert "{caption}" not in capsys.readouterr().err
    assert main([str(pdf), "-o", str(tmp_path / "old/"), "--caption", "{trigger}, {kind}, {words}", *CLI]) == 0
    assert main([str(pdf), "-o", str(tmp_path / "own/"), "--caption", "{caption}, {kind}", *CLI]) == 0
    assert capsys.readouterr().err.count("note: the caption template has {caption} but no captioning model") == 1
    new, old = tmp_path / "new", tmp_path / "old"
    names = sorted(p.name for p in old.iterdir())
    assert names == sorted(p.name for p in new.iterdir()) and any(name.endswith(".txt") for name in names)
    for name in names:
        assert (new / name).read_bytes() == (old / name).read_bytes(), f"{name} differs from the old default's"
