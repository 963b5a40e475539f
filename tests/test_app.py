"""The real app, launched in this process and driven over HTTP with ``gradio_client``.

The classifier is a tiny random ViT saved by the test: its labels are made up and its answers
meaningless. Only the wiring, the lifecycle and the error paths are under test.
"""

from __future__ import annotations

import csv
import gc
import importlib
import io
import os
import socket
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import numpy as np
import pymupdf
import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from PIL import Image
from test_models import LABELS, save_tiny_vit

MAX_FILE_SIZE = "1mb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_vit(tmp_path_factory.mktemp("tiny-vit-app"))


@pytest.fixture(scope="module")
def app(tiny_model: Path) -> Iterator[ModuleType]:
    """Import app.py with the tiny model and a 1 MB upload limit, launch it, close it afterwards."""
    saved = {k: os.environ.get(k) for k in ("MODEL_ID", "MODEL_POLICY", "MAX_FILE_SIZE")}
    os.environ.update(MODEL_ID=str(tiny_model), MODEL_POLICY="per_request", MAX_FILE_SIZE=MAX_FILE_SIZE)
    sys.modules.pop("app", None)
    module = importlib.import_module("app")
    kwargs = {**module.LAUNCH_KWARGS, "server_name": "127.0.0.1", "server_port": _free_port()}
    module.demo.launch(prevent_thread_lock=True, quiet=True, **kwargs)
    try:
        yield module
    finally:
        module.demo.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def client(app: ModuleType) -> Client:
    return Client(app.demo.local_url, verbose=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A photo, fakes, and PDFs: good (one picture page, one text page), encrypted, damaged, not a PDF."""
    d = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(0)
    out: dict[str, Path] = {}

    out["photo"] = d / "cow.jpg"
    Image.fromarray(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)).save(out["photo"])
    out["photo2"] = d / "cow2.png"
    Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(out["photo2"])
    out["fake_jpg"] = d / "fake.jpg"
    out["fake_jpg"].write_text("this is a text file, not a photo")

    noise = io.BytesIO()  # a 768x1024 "scan" of big grey blocks: high σ, above the 512 px minimum side, small JPEG
    blocks = np.kron(rng.integers(0, 255, (32, 24), dtype=np.uint8), np.ones((32, 32), dtype=np.uint8))
    Image.fromarray(blocks).save(noise, format="JPEG", quality=80)
    doc = pymupdf.open()
    picture = doc.new_page(width=300, height=400)
    picture.insert_image(picture.rect, stream=noise.getvalue())
    text = doc.new_page(width=300, height=400)
    text.insert_text((30, 40), "Lorem ipsum dolor sit amet, " * 2, fontsize=8)
    out["pdf"] = d / "gazette.pdf"
    doc.save(out["pdf"])
    out["encrypted"] = d / "locked.pdf"
    doc.save(out["encrypted"], encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o", user_pw="secret")
    doc.close()

    data = out["pdf"].read_bytes()
    out["broken"] = d / "broken.pdf"
    out["broken"].write_bytes(data[:200])  # cut after the header: MuPDF cannot repair it
    out["not_pdf"] = d / "notes.pdf"
    out["not_pdf"].write_text("just some notes, saved with a .pdf name\n" * 20)
    out["huge_pdf"] = d / "huge.pdf"
    out["huge_pdf"].write_bytes(b"%PDF-1.7\n" + b"0" * 2_000_000)
    return out


def _error(client: Client, *args: object, api_name: str) -> str:
    """The message of the ``gr.Error`` the server raised (gradio_client re-raises it as ``AppError``)."""
    with pytest.raises(AppError) as info:
        client.predict(*args, api_name=api_name)
    return str(info.value)


def _still_serving(client: Client, files: dict[str, Path]) -> None:
    label, _ = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert label["label"] in LABELS.values()


def test_api_names_and_defaults(client: Client) -> None:
    info = client.view_api(print_info=False, return_format="dict")
    endpoints = info["named_endpoints"]
    classify_params = endpoints["/classify"]["parameters"]
    assert classify_params[0]["parameter_name"] == "photo"
    pdf_params = endpoints["/pdf_to_dataset"]["parameters"]
    assert pdf_params[0]["parameter_name"] == "pdf"
    assert not pdf_params[0]["parameter_has_default"]
    assert all(p["parameter_has_default"] for p in pdf_params[1:])


def test_classify_one_photo_loads_and_frees_the_model(app: ModuleType, client: Client, files: dict[str, Path]) -> None:
    import models

    loads, offloads = models.STATS.loads, models.STATS.offloads
    label, details = client.predict(handle_file(files["photo"]), api_name="/classify")

    assert label["label"] in LABELS.values()
    confidences = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert set(confidences) == set(LABELS.values())
    assert max(confidences, key=confidences.get) == label["label"]
    assert str(app.CLASSIFIER.model_id) in details
    assert details.startswith(f"### Verdict: {label['label']}")  # a plain classifier's verdict is its top label
    assert models.STATS.loads == loads + 1
    assert models.STATS.offloads == offloads + 1
    gc.collect()
    assert models.STATS.last_model is not None and models.STATS.last_model() is None

    client.predict(handle_file(files["photo"]), api_name="/classify")
    assert models.STATS.loads == loads + 2, "the per-request policy loads again for every request"
    gc.collect()
    assert models.STATS.last_model() is None


def test_classify_several_photos(client: Client, files: dict[str, Path]) -> None:
    _, details = client.predict(
        handle_file(files["photo"]), [handle_file(files["photo2"]), handle_file(files["photo"])], api_name="/classify"
    )
    rows = [line for line in details.splitlines() if line.startswith("| cow")]
    assert len(rows) == 3, details


def test_classify_errors_keep_the_server_serving(client: Client, files: dict[str, Path]) -> None:
    assert "No image" in _error(client, None, api_name="/classify")
    assert "fake.jpg is not an image" in _error(client, handle_file(files["fake_jpg"]), api_name="/classify")
    assert "Invalid file type" in _error(client, handle_file(files["not_pdf"]), api_name="/classify")
    _still_serving(client, files)


def test_unloadable_model_says_how_to_fix_it(
    app: ModuleType, client: Client, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import models

    monkeypatch.setattr(app, "CLASSIFIER", models.PerRequestClassifier(model_id=str(tmp_path / "missing-model")))
    message = _error(client, handle_file(files["photo"]), api_name="/classify")
    assert "could not be loaded" in message
    assert "MODEL_ID=" in message
    monkeypatch.undo()
    _still_serving(client, files)


def test_resident_policy_loads_once(
    app: ModuleType, client: Client, files: dict[str, Path], tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import models

    monkeypatch.setattr(app, "CLASSIFIER", models.make_classifier(policy="resident", model_id=str(tiny_model)))
    loads = models.STATS.loads
    first, details = client.predict(handle_file(files["photo"]), api_name="/classify")
    second, _ = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert first == second
    assert "(resident)" in details
    assert models.STATS.loads == loads
    assert models.STATS.last_model() is not None


def test_pdf_to_dataset(client: Client, files: dict[str, Path]) -> None:
    zip_path, summary, chart, gallery, rejected = (
        client.predict(  # sigma pinned: a noise picture vs a few text lines is its textbook case
            pdf=handle_file(files["pdf"]),
            threshold=40.0,
            size=256,
            filter_name="sigma",
            fit="square",
            api_name="/pdf_to_dataset",
        )
    )

    assert Path(zip_path).name == "gazette_dataset.zip"
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        rows = list(csv.DictReader(io.TextIOWrapper(archive.open("manifest.csv"), encoding="utf-8")))
        jpgs = [n for n in names if n.endswith(".jpg")]
        with archive.open(jpgs[0]) as handle, Image.open(handle) as image:
            assert image.size == (256, 256)
    assert [(r["page"], r["kept"]) for r in rows] == [("1", "true"), ("2", "false")]
    assert jpgs == ["gazette_p0001.jpg"]
    assert summary.startswith("2 pages seen, 1 kept")
    assert len(gallery) == 1
    assert "<svg" in chart and "threshold 40" in chart
    assert len(rejected) == 1 and "p2" in rejected[0]["caption"]


def test_pdf_to_dataset_defaults(client: Client, files: dict[str, Path]) -> None:
    zip_path, summary, *_ = client.predict(handle_file(files["pdf"]), api_name="/pdf_to_dataset")
    assert zipfile.is_zipfile(zip_path)
    assert summary.startswith("2 pages seen")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("not_pdf", "notes.pdf: not a PDF"), ("encrypted", "locked.pdf: encrypted"), ("broken", "broken.pdf: not a PDF")],
)
def test_pdf_errors_keep_the_server_serving(client: Client, files: dict[str, Path], name: str, expected: str) -> None:
    assert expected in _error(client, handle_file(files[name]), api_name="/pdf_to_dataset")
    _still_serving(client, files)


def test_no_pdf(client: Client, files: dict[str, Path]) -> None:
    assert "No PDF" in _error(client, None, api_name="/pdf_to_dataset")
    assert "Invalid file type" in _error(client, handle_file(files["photo"]), api_name="/pdf_to_dataset")
    _still_serving(client, files)


def test_over_max_file_size(app: ModuleType, client: Client, files: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="exceeds the maximum file size of 1048576 bytes"):
        client.predict(handle_file(files["huge_pdf"]), api_name="/pdf_to_dataset")
    # gradio_client refuses before uploading; the server refuses on its own too (browsers, curl, other clients)
    with files["huge_pdf"].open("rb") as handle:
        response = httpx.post(
            app.demo.local_url.rstrip("/") + "/gradio_api/upload", files={"files": ("huge.pdf", handle)}, timeout=30
        )
    assert response.status_code == 413, response.text
    assert "maximum allowed size" in response.text
    _still_serving(client, files)


def test_progress_advances_page_by_page(app: ModuleType, files: dict[str, Path]) -> None:
    calls: list[tuple[int, int]] = []

    def progress(value: tuple[int, int], desc: str | None = None, total: int | None = None, unit: str = "") -> None:
        calls.append(value)

    zip_path, *_ = app.pdf_to_dataset(str(files["pdf"]), size=256, progress=progress)
    assert calls == [(0, 2), (1, 2), (2, 2)]
    assert zipfile.is_zipfile(zip_path)


def test_free_space_limits(app: ModuleType) -> None:
    assert app.demo.max_file_size == 2**20
    assert app.demo.delete_cache is not None
    assert app.demo._queue.max_size == 16
    limits = {fn.api_name: fn.concurrency_limit for fn in app.demo.fns.values()}
    assert limits == {"classify": 2, "pdf_to_dataset": 1}
