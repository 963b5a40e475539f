"""The real app, launched once for the session and shared by the API tests and the browser tests.

Its classifier is a tiny random ViT saved by the tests (labels made up, answers meaningless): only the
wiring, the lifecycle and the error paths are under test there.
"""

from __future__ import annotations

import importlib
import io
import os
import sys

# OCR is off for the suite's many generated scans (no packs there): tests/test_ocr.py points it at the real ones.
os.environ.setdefault("TESSDATA_PREFIX", "/nonexistent")
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pymupdf
import pytest
from factories import free_port, save_heic
from PIL import Image
from test_models import save_tiny_vit

if TYPE_CHECKING:
    from playwright.sync_api import Browser

MAX_FILE_SIZE = "1mb"


def pytest_configure(config: pytest.Config) -> None:
    """One screenshot folder for the whole run: chosen here, in the process that reports, and inherited by the
    test processes (``pytest-xdist``), so the summary can say where the screenshots are."""
    if not hasattr(config, "workerinput") and not os.environ.get("SCREENSHOTS_DIR"):
        os.environ["SCREENSHOTS_DIR"] = tempfile.mkdtemp(prefix="browser-screenshots-")


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where the browser tests leave their screenshots: ``SCREENSHOTS_DIR`` (a fresh temporary folder by default)."""
    folder = Path(os.environ["SCREENSHOTS_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    folder = Path(os.environ.get("SCREENSHOTS_DIR", ""))
    shots = list(folder.glob("*.png")) if folder.name else []
    if shots:
        terminalreporter.write_line(f"browser screenshots: {folder} ({len(shots)} PNG)")


@pytest.fixture(scope="session")
def app_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_vit(tmp_path_factory.mktemp("tiny-vit-app"))


@pytest.fixture(scope="session")
def app(app_model: Path) -> Iterator[ModuleType]:
    """Import app.py with the tiny model and a 1 MB upload limit, launch it, close it afterwards."""
    saved = {k: os.environ.get(k) for k in ("MODEL_ID", "MODEL_POLICY", "MAX_FILE_SIZE")}
    os.environ.update(MODEL_ID=str(app_model), MODEL_POLICY="per_request", MAX_FILE_SIZE=MAX_FILE_SIZE)
    for name in [name for name in sys.modules if name == "app" or name.split(".")[0] == "space"]:
        sys.modules.pop(name)  # read the settings above afresh (a test module may have imported space.checks)
    module = importlib.import_module("app")
    kwargs = {**module.LAUNCH_KWARGS, "server_name": "127.0.0.1", "server_port": free_port()}
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


@pytest.fixture(scope="session")
def lumpy_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model that calls every cattle photo lumpy skin (``fixed_models``): the notifiable path, on demand."""
    from fixed_models import save_fixed_model

    return save_fixed_model(tmp_path_factory.mktemp("lumpy-model"), "lumpy_skin")


@pytest.fixture
def lumpy_app(app: ModuleType, lumpy_model: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The app classifying with :func:`lumpy_model` for one test."""
    import models

    monkeypatch.setattr(app.triage, "CLASSIFIER", models.PerRequestClassifier(model_id=str(lumpy_model)))
    return app


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A photo, fakes, and PDFs: good (one picture page, one text page), encrypted, damaged, not a PDF."""
    d = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(0)
    out: dict[str, Path] = {}

    out["photo"] = d / "cow.jpg"
    Image.fromarray(rng.integers(0, 255, (90, 120, 3), dtype=np.uint8)).save(out["photo"])
    out["photo2"] = d / "cow2.png"
    Image.fromarray(rng.integers(0, 255, (80, 80, 3), dtype=np.uint8)).save(out["photo2"])
    out["photo_heic"] = d / "cow3.HEIC"  # an iPhone's default format, with its upper-case extension
    save_heic(Image.fromarray(rng.integers(0, 255, (72, 96, 3), dtype=np.uint8)), out["photo_heic"])
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


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One Chromium for every browser test of a test process: Playwright's sync API cannot be started twice in one
    process while the first is running (a fixture per test module did that when two modules shared a worker)."""
    from playwright.sync_api import expect, sync_playwright
    from test_browser import CHROMIUM_FLAGS, _chromium

    # An assertion waits up to 20 s, not Playwright's 5: on 2 cores shared with the other tests a Gradio round trip
    # (a language switch, a region picked) took longer once and failed a test that passes alone. A condition that is
    # never met still fails; it only fails later.
    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()
