"""Photos light on the wire (``space/shrink.js``, ``models.classifier.READ_SIDE``): in Chromium at 390 px on a
throttled link (1 Mbit/s, 300 ms latency, set through the DevTools protocol after the page has loaded), a 4 MB
phone photo goes up shrunk and its verdict shows within 15 s; a program sending the whole photo through
``gradio_client`` gets the same answer, the server shrinking it as it reads it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from types import ModuleType
from urllib.parse import urlparse

import pytest
from factories import phone_photo
from gradio_client import Client, handle_file
from playwright.sync_api import Browser, Request, expect
from test_app import _launch
from test_browser import PHONE, _file_input, _no_sideways_scroll

import models

ONE_MBIT = {"offline": False, "latency": 300, "downloadThroughput": 125_000, "uploadThroughput": 125_000}
"""1 Mbit/s both ways (bytes per second), 300 ms latency: a rural mobile link."""
UPLOAD_LIMIT = 400_000
VERDICT_WITHIN_S = 15


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = phone_photo(tmp_path_factory.mktemp("phone") / "IMG_20261207_101500.jpg")
    assert 3_500_000 < path.stat().st_size < 5_000_000, path.stat().st_size
    return path


def test_a_phone_photo_goes_up_shrunk_on_a_slow_link_and_its_verdict_shows_within_15_s(
    browser: Browser, app: ModuleType, photo: Path, screenshots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test app refuses uploads over 1 MB: this 4 MB photo is only classified because the browser shrank it."""
    monkeypatch.setattr(
        app.triage, "CLASSIFIER", models.make_classifier(policy="per_request", model_id=models.DEFAULT_MODEL_ID)
    )
    context = browser.new_context(viewport=PHONE, is_mobile=True)
    page = context.new_page()
    page.goto(app.demo.local_url)
    expect(page.locator("#photo input[type=file]")).to_be_attached(timeout=30_000)
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", ONE_MBIT)
    uploads: list[Request] = []
    page.on("request", lambda r: uploads.append(r) if urlparse(r.url).path.endswith("/gradio_api/upload") else None)

    started = time.monotonic()
    _file_input(page, "photo").set_input_files(photo)
    expect(page.locator("#photo-preview img")).to_be_visible(timeout=VERDICT_WITHIN_S * 1000)
    page.locator("#classify-btn").click()
    expect(page.locator("#details table")).to_be_visible(timeout=VERDICT_WITHIN_S * 1000)
    elapsed = time.monotonic() - started
    expect(page.locator("#verdict")).to_contain_text(re.compile(r"\w"))
    page.screenshot(path=screenshots / "shrink-1-slow-link-verdict.png", full_page=True)
    _no_sideways_scroll(page)

    assert elapsed < VERDICT_WITHIN_S, f"verdict after {elapsed:.1f} s on a 1 Mbit/s link"
    assert len(uploads) == 1
    sent = int(uploads[0].header_value("content-length") or 0)  # the multipart body as Chromium sent it
    assert sent <= UPLOAD_LIMIT, f"{sent} bytes uploaded for a {photo.stat().st_size}-byte photo"
    print(f"verdict after {elapsed:.1f} s; {sent} bytes uploaded for {photo.stat().st_size}")
    (stored,) = json.loads(uploads[0].response().body())
    with models.read_photo(stored) as received:  # the file the server got: upright, its long side 1024
        assert received.size == (768, 1024)
        assert received.getpixel((384, 60))[0] > received.getpixel((384, 960))[0] + 50, "stored left is the top"
    assert Path(stored).name == photo.name, "the name the visitor's phone gave it"
    context.close()


def test_a_program_sending_the_whole_photo_gets_the_answer_of_the_shrunk_one(
    tmp_path: Path, photo: Path, app_model: Path
) -> None:
    """``gradio_client`` uploads the 4 MB photo as it is (a server allowing it): the server reads it shrunk, so its
    answer is the browser's, within 15 s."""
    server, url = _launch(tmp_path, app_model, MODEL_ID=models.DEFAULT_MODEL_ID, MAX_FILE_SIZE="10mb")
    try:
        client = Client(url, verbose=False)
        started = time.monotonic()
        whole = client.predict(handle_file(photo), None, api_name="/classify_json")
        elapsed = time.monotonic() - started
        small = tmp_path / "small.jpg"
        models.read_photo(photo).save(small, quality=95)
        shrunk = client.predict(handle_file(small), None, api_name="/classify_json")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert elapsed < VERDICT_WITHIN_S, f"{elapsed:.1f} s"
    assert whole["verdict"] == shrunk["verdict"]
    (a,), (b,) = whole["photos"], shrunk["photos"]
    assert a["gate"] == pytest.approx(b["gate"], abs=0.03)
    assert all(a["probabilities"][k] == pytest.approx(b["probabilities"][k], abs=0.03) for k in a["probabilities"])
