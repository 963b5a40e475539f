"""The cattle scanner as a farmer sees it: each photo uploaded in Chromium at a phone's width, classified, and the
page saved as a screenshot, with the headline it got printed.

Launches the real app (``python app.py``, the built-in model unless ``MODEL_ID`` says otherwise) and drives it as a
visitor would: pick the photo, press Classify, wait for the answer.

    python bench/cattle_screens.py photo.jpg [more.jpg ...] -o /tmp/screens [--width 390] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from browser import CHROMIUM_FLAGS, free_port
from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("photos", type=Path, nargs="+")
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder for the screenshots")
    parser.add_argument("--width", type=int, default=390, help="viewport width in CSS pixels (default: a phone's)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = os.environ | {"GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"}
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_FLAGS)
            context = browser.new_context(viewport={"width": args.width, "height": 844}, is_mobile=args.width < 600)
            page = context.new_page()
            for _ in range(120):  # the app imports torch and gradio first
                try:
                    page.goto(f"http://127.0.0.1:{port}/")
                    break
                except Exception:  # noqa: BLE001 - not listening yet
                    time.sleep(1)
            for photo in args.photos:
                page.reload()
                page.locator("#photo input[type=file]").set_input_files(photo)
                expect(page.locator("#photo-preview img")).to_be_visible(timeout=30_000)
                page.locator("#classify-btn").click()
                headline = page.locator("#verdict h2")
                expect(headline).to_be_visible(timeout=120_000)
                shot = args.output / f"{photo.stem}-{args.width}px.png"
                page.screenshot(path=shot, full_page=True)
                print(f"{photo}\t{headline.inner_text()}\t{shot}")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
