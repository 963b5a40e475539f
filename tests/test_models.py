"""The classifier lifecycle on a tiny random ViT (its answers are meaningless; only the plumbing is tested)."""

from __future__ import annotations

import gc
import io
import json
import pickle
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from factories import save_heic
from PIL import Image, ImageOps
from safetensors.torch import load_file
from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

import models
from models import ImageInputError, ModelLoadError, classifier, predict

LABELS = {0: "tiny-a", 1: "tiny-b", 2: "tiny-c"}


def tiny_vit_config(labels: dict[int, str]) -> ViTConfig:
    """A 1-layer 32x32 ViT's config with ``labels``: the tests' models that load in milliseconds."""
    return ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        num_labels=len(labels),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )


def save_tiny_vit(folder: Path) -> Path:
    """A 1-layer 32x32 ViT with 3 made-up labels, saved as safetensors: fast to load, never accurate."""
    torch.manual_seed(0)
    config = tiny_vit_config(LABELS)
    ViTForImageClassification(config).save_pretrained(folder)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_vit(tmp_path_factory.mktemp("tiny-vit"))


@pytest.fixture
def photo() -> Image.Image:
    rng = np.random.default_rng(1)
    return Image.fromarray(rng.integers(0, 255, (72, 96, 3), dtype=np.uint8))


def test_the_model_loaded_holds_the_saved_safetensors_weights(tiny_model: Path) -> None:
    """Every tensor of the folder's ``model.safetensors`` is held by the lifecycle's model (not a fresh init).

    Matched by value: transformers 5 renames checkpoint keys as it loads them (``query`` → ``q_proj``)."""
    saved = load_file(tiny_model / "model.safetensors")
    with models.loaded_model(str(tiny_model), device="cpu") as loaded:
        held = list(loaded.model.state_dict().values())
        assert len(held) == len(saved)
        for name, tensor in saved.items():
            assert any(t.shape == tensor.shape and torch.equal(t, tensor) for t in held), name


FIRST_REQUESTS = """
import sys, threading
import numpy as np
from PIL import Image
import models

classifier = models.make_classifier(policy="per_request", model_id=sys.argv[1])  # as app.py does at import
photo = Image.fromarray(np.random.default_rng(0).integers(0, 255, (72, 96, 3), dtype=np.uint8))
start, failures = threading.Barrier(12), []

def first_request():
    start.wait()
    try:
        classifier.assess([photo])
    except Exception as exc:
        failures.append(repr(exc.__cause__ or exc))

threads = [threading.Thread(target=first_request) for _ in range(12)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(failures)
"""


def test_concurrent_first_requests_all_classify(tiny_model: Path) -> None:
    """12 first classifications at once in a fresh process, as the Space's request threads make them: transformers
    imports its classes on first use, and threads racing for that failed with ``ImportError`` (5 runs of 5
    before the classes were imported at start)."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_REQUESTS, str(tiny_model)],
        cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]


def test_per_request_returns_plain_probabilities_and_frees_the_model(tiny_model: Path, photo: Image.Image) -> None:
    clf = models.PerRequestClassifier(model_id=str(tiny_model))
    loads = models.STATS.loads
    offloads = models.STATS.offloads
    result = clf.classify([photo, photo.rotate(90)], top_k=2)

    assert len(result) == 2
    for scores in result:
        assert len(scores) == 2
        assert set(scores) <= set(LABELS.values())
        assert all(type(v) is float and 0.0 <= v <= 1.0 for v in scores.values())
        assert list(scores.values()) == sorted(scores.values(), reverse=True)
    assert pickle.loads(pickle.dumps(result)) == result  # crosses the ZeroGPU process boundary
    assert models.STATS.loads == loads + 1
    assert models.STATS.offloads == offloads + 1
    gc.collect()
    assert models.STATS.last_model is not None and models.STATS.last_model() is None

    first = models.STATS.last_model
    clf.classify([photo])
    assert models.STATS.loads == loads + 2, "per-request policy must load again"
    assert models.STATS.last_model is not first


def test_full_distribution_sums_to_one(tiny_model: Path, photo: Image.Image) -> None:
    (scores,) = models.PerRequestClassifier(model_id=str(tiny_model)).classify([photo], top_k=10)
    assert set(scores) == set(LABELS.values())
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-4)


def test_context_manager_offloads_even_when_inference_fails(tiny_model: Path) -> None:
    offloads = models.STATS.offloads
    with pytest.raises(RuntimeError, match="boom"), models.loaded_model(str(tiny_model), device="cpu") as m:
        assert m.device == torch.device("cpu")
        assert models.STATS.last_model() is m.model
        raise RuntimeError("boom")
    assert models.STATS.offloads == offloads + 1
    gc.collect()
    assert models.STATS.last_model() is None


def test_resident_loads_once(tiny_model: Path, photo: Image.Image) -> None:
    loads = models.STATS.loads
    clf = models.make_classifier(policy="resident", model_id=str(tiny_model))
    assert models.STATS.loads == loads + 1
    a = clf.classify([photo])
    b = clf.classify([photo])
    assert a == b
    assert models.STATS.loads == loads + 1
    assert models.STATS.last_model() is not None  # resident: still referenced


def test_missing_model_gives_an_offline_hint(tmp_path: Path, photo: Image.Image) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelLoadError, match="MODEL_ID="):
        models.PerRequestClassifier(model_id=str(missing)).classify([photo])


def test_folder_without_weights_is_named(tmp_path: Path, photo: Image.Image) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="no loadable image-classification model"):
        models.PerRequestClassifier(model_id=str(tmp_path)).classify([photo])


def test_resident_remembers_a_failed_load(tmp_path: Path, photo: Image.Image) -> None:
    clf = models.ResidentClassifier(model_id=str(tmp_path / "missing"))
    assert isinstance(clf.load_error, ModelLoadError)
    with pytest.raises(ModelLoadError):
        clf.classify([photo])


def test_open_images_errors(tmp_path: Path) -> None:
    with pytest.raises(ImageInputError, match="No image"):
        models.open_images([None])
    fake = tmp_path / "cow.jpg"
    fake.write_text("not really a jpeg")
    with pytest.raises(ImageInputError, match=r"cow\.jpg is not an image"):
        models.open_images([fake])
    good = tmp_path / "ok.png"
    Image.new("RGBA", (10, 10)).save(good)
    (img,) = models.open_images([good])
    assert img.mode == "RGB"
    with pytest.raises(ImageInputError, match="Too many photos"):
        models.open_images([good] * (models.MAX_IMAGES + 1))


def test_policy_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MODEL_POLICY", raising=False)
    assert models.policy_from_env() == "per_request"
    monkeypatch.setenv("MODEL_POLICY", "Resident")
    assert models.policy_from_env() == "resident"
    monkeypatch.setenv("MODEL_POLICY", "sometimes")
    with pytest.raises(ValueError, match="MODEL_POLICY"):
        models.policy_from_env()
    monkeypatch.delenv("MODEL_ID", raising=False)
    assert models.model_id_from_env() == models.DEFAULT_MODEL_ID


def test_prefetch_skips_local_folders_and_survives_bad_ids(
    tiny_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert models.prefetch(str(tiny_model)) is None  # nothing to download
    with caplog.at_level("WARNING", logger="models.classifier"):
        assert models.prefetch(str(tmp_path / "missing" / "model")) is None  # not a valid Hub id either
    assert "could not prefetch" in caplog.text


def _halves(size: tuple[int, int]) -> Image.Image:
    """Red left half, blue right half: where each lands shows how the photo was turned."""
    image = Image.new("RGB", size, (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, size[0] // 2, size[1]))
    return image


def test_photos_are_turned_upright_by_their_exif_orientation(tmp_path: Path) -> None:
    """A phone stores a portrait photo sideways with orientation 6 (turn 90° clockwise): the model must see it
    as people do, standing."""
    sideways = _halves((60, 40))  # red on the left half of the stored pixels
    exif = Image.Exif()
    exif[0x0112] = 6
    sideways.save(tmp_path / "phone.jpg", exif=exif)
    (upright,) = models.open_images([tmp_path / "phone.jpg"])
    assert upright.size == (40, 60)
    assert upright.getpixel((20, 5))[0] > 200 and upright.getpixel((20, 55))[0] < 60, "stored left is now the top"


@pytest.mark.parametrize(("kind", "scale"), [(np.uint16, 65535), (np.int32, 65535), (np.float32, 1.0)])
def test_a_16_bit_or_float_grey_photo_is_read_by_its_range_not_clipped_white(
    tmp_path: Path, kind: type, scale: float
) -> None:
    """PIL's conversion clips every value above 255 to white: such a photo (a thermal camera's or a scanner's export)
    was refused as "almost one flat colour"."""
    ramp = np.linspace(0.15, 0.95, 320)[None, :] + np.random.default_rng(0).normal(0, 0.04, (240, 320))
    values = np.clip(ramp, 0, 1) * scale
    path = tmp_path / ("grey.tif" if kind is not np.uint16 else "grey.png")
    Image.fromarray(values.astype(kind)).save(path)
    photo = models.read_photo(path)
    grey = np.asarray(photo.convert("L"), dtype=np.float64)
    assert abs(grey.mean() - ramp.clip(0, 1).mean() * 255) < 3 and grey.std() > 40
    assert models.unusable_reason(photo) is None


def test_a_phone_photo_is_read_shrunk_to_read_side_and_decoded_at_a_reduced_scale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 12 MP phone photo decoded whole is 36 MB, and eight of them in a case were 3.2 GB of the server's memory:
    it is read with its long side at READ_SIDE, the JPEG decoded at 1/2 scale (4000 x 3000 -> 2000 x 1500), not whole,
    upright, the same pixels as the whole photo shrunk; a photo under READ_SIDE is read as it is."""
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways
    _halves((4000, 3000)).save(tmp_path / "phone.jpg", exif=exif, quality=90)
    decoded: list[tuple[int, int]] = []
    real_load = Image.Image.load

    def load(self: Image.Image) -> object:
        out = real_load(self)
        if self.format == "JPEG":
            decoded.append(self.size)
        return out

    monkeypatch.setattr(Image.Image, "load", load)
    photo = models.read_photo(tmp_path / "phone.jpg")
    assert photo.size == (768, 1024) and models.READ_SIDE == 1024
    assert decoded and max(w * h for w, h in decoded) == 2000 * 1500, decoded
    assert photo.getpixel((384, 100))[0] > 200 and photo.getpixel((384, 900))[2] > 200, "stored left is the top"
    monkeypatch.undo()
    with Image.open(tmp_path / "phone.jpg") as im:
        whole = ImageOps.exif_transpose(im).convert("RGB")
    whole.thumbnail((1024, 1024), Image.Resampling.LANCZOS)
    assert np.abs(np.asarray(whole, np.int16) - np.asarray(photo, np.int16)).mean() < 2
    _halves((900, 600)).save(tmp_path / "small.png")
    assert models.read_photo(tmp_path / "small.png").size == (900, 600)


def test_heic_photos_from_an_iphone_open_like_jpegs(tmp_path: Path) -> None:
    save_heic(_halves((64, 48)), tmp_path / "IMG_0001.HEIC")
    (image,) = models.open_images([tmp_path / "IMG_0001.HEIC"])
    assert image.mode == "RGB" and image.size == (64, 48)
    assert image.getpixel((8, 24))[0] > 200 and image.getpixel((56, 24))[2] > 200


def test_the_preview_is_the_upright_photo_shrunk_and_none_for_what_cannot_be_read(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: turn 90° clockwise
    _halves((3000, 2000)).save(tmp_path / "phone.jpg", exif=exif)
    preview = models.photo_preview(tmp_path / "phone.jpg")
    assert preview is not None and preview.size == (683, 1024)
    assert preview.getpixel((340, 100))[0] > 200 and preview.getpixel((340, 900))[2] > 200, "stored left is the top"
    (tmp_path / "notes.jpg").write_text("not a photo")
    assert models.photo_preview(tmp_path / "notes.jpg") is None
    assert models.photo_preview(None) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"not an image at all", "is not an image"), (None, r"^could not read photo upload\.jpg: .*damaged")],
)
def test_unreadable_photos_say_what_is_wrong(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "upload.jpg"
    if content is None:  # a JPEG cut in half: an interrupted upload
        Image.effect_noise((200, 200), 50).convert("RGB").save(path, quality=90)
        path.write_bytes(path.read_bytes()[:1500])
    else:
        path.write_bytes(content)
    with pytest.raises(ImageInputError, match=message):
        models.open_images([path])


def _encoded(kind: str) -> bytes:
    data = io.BytesIO()
    image = Image.new("RGB", (64, 48), (120, 80, 40))
    if kind == "HEIC":
        save_heic(image, data)
    else:
        image.save(data, format=kind, **({"lossless": True} if kind == "WEBP" else {}))
    return data.getvalue()


def declaring(kind: str, width: int, height: int) -> bytes:
    """A small photo whose header declares ``width`` × ``height`` pixels: a decompression bomb, or a damaged file
    that asks the decoder for memory it will never fill."""
    data = bytearray(_encoded(kind))
    if kind == "PNG":  # IHDR, with its CRC redone (PIL checks it)
        data[16:24] = struct.pack(">II", width, height)
        data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    elif kind == "JPEG":  # the baseline frame header: height, then width
        at = data.index(b"\xff\xc0")
        data[at + 5 : at + 9] = struct.pack(">HH", height, width)
    elif kind == "BMP":
        data[18:26] = struct.pack("<ii", width, height)
    elif kind == "TIFF":  # ImageWidth and ImageLength, LONG values in the first IFD
        ifd = struct.unpack("<I", data[4:8])[0]
        for entry in range(struct.unpack("<H", data[ifd : ifd + 2])[0]):
            at = ifd + 2 + 12 * entry
            tag = struct.unpack("<H", data[at : at + 2])[0]
            if tag in (256, 257):
                data[at + 8 : at + 12] = struct.pack("<I", width if tag == 256 else height)
    elif kind == "WEBP":  # VP8L: 14 bits each of width - 1 and height - 1
        low = struct.unpack("<I", data[21:25])[0] & ~((1 << 28) - 1)
        data[21:25] = struct.pack("<I", low | (width - 1) | (height - 1) << 14)
    elif kind == "HEIC":  # the image spatial extent box; PIL still reports the 64 × 48 crop
        at = data.index(b"ispe")
        data[at + 8 : at + 16] = struct.pack(">II", width, height)
    return bytes(data)


HUGE = [("PNG", 60_000), ("JPEG", 60_000), ("BMP", 60_000), ("TIFF", 60_000), ("WEBP", 16_384), ("HEIC", 60_000)]


@pytest.mark.parametrize(("kind", "side"), HUGE, ids=[kind for kind, _ in HUGE])
def test_a_photo_declaring_a_huge_size_is_refused_in_one_sentence(tmp_path: Path, kind: str, side: int) -> None:
    """Each format read_photo accepts, its header declaring far more than MAX_PIXELS (a HEIC of 60000 × 60000
    raised libheif's RuntimeError, uncaught): one sentence naming the file, and no preview."""
    path = tmp_path / f"huge.{kind.lower()}"
    path.write_bytes(declaring(kind, side, side))
    with pytest.raises(ImageInputError) as error:
        models.read_photo(path)
    message = str(error.value)
    assert path.name in message and "resize it below 40 MP" in message and "\n" not in message
    assert models.photo_preview(path) is None


def test_a_heic_just_over_the_limit_says_its_size(tmp_path: Path) -> None:
    path = tmp_path / "IMG_0002.HEIC"
    path.write_bytes(declaring("HEIC", 7_000, 6_000))
    with pytest.raises(ImageInputError, match=r"^IMG_0002\.HEIC is 7000x6000 pixels; resize it below 40 MP\.$"):
        models.read_photo(path)


@pytest.mark.parametrize("side", [6_000, 60_000], ids=["size-mismatch", "libheif-security-limit"])
def test_whatever_libheif_raises_becomes_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, side: int
) -> None:
    """Past the size check (as if the file had hidden its declared size), libheif's own errors (its RuntimeError
    for 60000², a ValueError for data that does not fill the size) still name the file in one sentence."""
    monkeypatch.setattr(classifier, "_heif_declared_sizes", lambda path, image: [])
    path = tmp_path / "cow.heic"
    path.write_bytes(declaring("HEIC", side, side))
    with pytest.raises(
        ImageInputError, match=r"^could not read photo cow\.heic: .+; it may be damaged, send it again\.$"
    ):
        models.read_photo(path)


@pytest.mark.parametrize("argument", [["--batch-size", "-1"], ["--batch-size", "0"], ["--threads", "0"]])
def test_predict_refuses_counts_below_one_before_any_photo(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argument: list[str]
) -> None:
    """--batch-size -1 classified nothing and exited 0; 0 and --threads 0 ended in a traceback."""
    Image.fromarray(np.random.default_rng(3).integers(0, 255, (80, 96, 3), dtype=np.uint8)).save(tmp_path / "a.jpg")
    with pytest.raises(SystemExit) as exited:
        predict.main([str(tmp_path / "a.jpg"), "--model", str(tiny_model), *argument])
    assert exited.value.code == 2
    assert f"{argument[0]}: must be a whole number of at least 1, not '{argument[1]}'" in capsys.readouterr().err


def test_predict_says_why_a_model_cannot_be_loaded_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Image.new("RGB", (96, 80)).save(tmp_path / "a.jpg")
    assert predict.main([str(tmp_path / "a.jpg"), "--model", str(tmp_path / "no-model")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: The classifier could not be loaded") and "Traceback" not in err


def test_predict_says_each_unreadable_photo_in_one_error_line_and_classifies_the_rest(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    for name in ("a.jpg", "c.png"):
        Image.fromarray(rng.integers(0, 255, (80, 96, 3), dtype=np.uint8)).save(tmp_path / name)
    (tmp_path / "b.heic").write_bytes(declaring("HEIC", 60_000, 60_000))
    (tmp_path / "b2.png").write_bytes(declaring("PNG", 60_000, 60_000))
    photos = [tmp_path / name for name in ("a.jpg", "b.heic", "b2.png", "c.png")]
    Image.new("RGB", (1, 1)).save(tmp_path / "d.png")
    photos.append(tmp_path / "d.png")
    assert predict.main([*map(str, photos), "--model", str(tiny_model)]) == 1
    out, err = capsys.readouterr()
    assert [line.split("\t")[0] for line in out.splitlines()] == [str(photos[0]), str(photos[3]), str(photos[4])]
    assert out.splitlines()[-1].split("\t")[1:4:2] == [
        "unusable_photo",
        "it is only 1×1 pixels — send the original photo from the camera",
    ], "a refused picture says why"
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if "error" in line] == [
        "error: b.heic is 60000x60000 pixels; resize it below 40 MP.",
        "error: could not read photo b2.png: it is too large to open; resize it below 40 MP.",
    ]
    assert predict.main([*map(str, photos), "--model", str(tiny_model), "--json"]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [("error" in row, "verdict" in row) for row in rows] == [
        (False, True),
        (True, False),
        (True, False),
        (False, True),
        (False, True),
    ]


def test_offload_moves_to_the_cpu_collects_and_empties_the_cuda_cache(
    tiny_model: Path, photo: Image.Image, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The article's offload, step by step: ``model.cpu(); del model; gc.collect(); torch.cuda.empty_cache()``.

    On a CPU machine ``.cpu()`` moves nothing and CUDA is absent, so the library calls are observed (spied on,
    then run for real) with CUDA reported present; the model must be gone without the test collecting."""
    steps: list[str] = []
    real_cpu, real_collect = torch.nn.Module.cpu, gc.collect

    def cpu(module: torch.nn.Module) -> torch.nn.Module:
        if isinstance(module, torch.nn.Module) and module is models.STATS.last_model():
            steps.append("cpu")
        return real_cpu(module)

    def collect(*args: int) -> int:
        steps.append("gc")
        return real_collect(*args)

    with models.loaded_model(str(tiny_model), device="cpu") as loaded:
        loaded.logits([photo])
        monkeypatch.setattr(torch.nn.Module, "cpu", cpu)
        monkeypatch.setattr(gc, "collect", collect)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "empty_cache", lambda: steps.append("empty_cache"))
        del loaded
    monkeypatch.undo()
    assert steps == ["cpu", "gc", "empty_cache"]
    assert models.STATS.last_model() is None, "freed by the offload itself, not by a later collection"


def _gradient(size: tuple[int, int], noise: float) -> Image.Image:
    """A smooth brown gradient with a little sensor noise: a picture of nothing."""
    rng = np.random.default_rng(5)
    ramp = np.linspace(-25, 25, size[0])[None, :, None]
    arr = np.array([120, 80, 50]) + ramp + rng.normal(0, noise, (size[1], size[0], 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


@pytest.mark.parametrize(
    ("picture", "why"),
    [
        (Image.new("RGB", (1, 1), (120, 80, 50)), "only 1×1 pixels"),
        (Image.new("RGB", (1200, 900), "white"), "one flat colour"),
        (Image.new("RGB", (400, 300), (120, 80, 50)), "one flat colour"),
        (_gradient((400, 300), noise=0.5), "no detail"),
    ],
)
def test_a_picture_with_nothing_to_judge_is_never_a_disease(picture: Image.Image, why: str) -> None:
    """The committed model itself: a notifiable-first policy must not turn a blank or a dot into an alarm."""
    case = models.PerRequestClassifier(model_id=models.DEFAULT_MODEL_ID).assess([picture])
    assert case.verdict == models.UNUSABLE and why in case.photos[0].reason


def test_real_looking_pictures_pass_the_usability_check(photo: Image.Image) -> None:
    assert models.unusable_reason(photo) is None
    assert models.unusable_reason(_gradient((400, 300), noise=12)) is None  # grainy, not blank
    assert models.unusable_reason(photo.resize((64, 64))) is None, "64 px on the short side is the smallest"
