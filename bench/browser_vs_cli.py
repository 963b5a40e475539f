"""Does the Space, used in Chromium with its default controls, keep the pages the CLI keeps by default?

Launches the real app, uploads every PDF of a folder in one run from headless Chromium (as a visitor
would, nothing typed), downloads the zip, and compares its manifest page by page with
``python -m pipeline FOLDER -o out.zip`` (defaults). Prints the agreement and the run times.

    python bench/browser_vs_cli.py ../shared/data/pdfs [--chromium /usr/bin/chromium] [--screenshot shot.png]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from browser import CHROMIUM_FLAGS, free_port
from playwright.sync_api import expect, sync_playwright

from pipeline.writer import read_manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--screenshot", type=Path, default=None)
    args = parser.parse_args()
    pdfs = sorted(args.folder.glob("*.pdf"))
    work = Path(tempfile.mkdtemp(prefix="browser-vs-cli-"))

    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", *map(str, pdfs), "-o", str(work / "cli.zip")], check=True)
    cli_s = time.perf_counter() - start

    import app  # the real Space, default settings

    port = free_port()
    app.demo.launch(
        server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **app.LAUNCH_KWARGS
    )
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=args.chromium,
                args=CHROMIUM_FLAGS,
            )
            page = browser.new_page(viewport={"width": 1280, "height": 800}, accept_downloads=True)
            page.goto(app.demo.local_url)
            page.get_by_role("tab", name="PDF → dataset").click()
            page.locator("#pdfs input[type=file]").set_input_files(pdfs)
            expect(page.locator(f"#pdfs a[href$='/{pdfs[-1].name}']")).to_be_visible(timeout=120_000)
            start = time.perf_counter()
            page.locator("#build-btn").click()
            expect(page.locator("#dataset-zip a[download]")).to_be_visible(timeout=1_800_000)
            space_s = time.perf_counter() - start
            with page.expect_download() as download:
                page.locator("#dataset-zip a[download]").first.click()
            download.value.save_as(work / "space.zip")
            summary = page.locator("#summary textarea").input_value()
            if args.screenshot:
                page.screenshot(path=args.screenshot, full_page=True)
            browser.close()
    finally:
        app.demo.close()

    def key(rows: list[dict[str, str]]) -> list[tuple[str, str, str]]:
        return [(r["source"], r["page"], r["kept"]) for r in rows]

    space, cli = key(read_manifest(work / "space.zip")), key(read_manifest(work / "cli.zip"))
    same = sum(a == b for a, b in zip(space, cli, strict=False))
    print(summary)
    print(f"\n{len(pdfs)} PDFs, {len(cli)} pages; Space (Chromium, default controls) vs CLI (defaults):")
    print(
        f"  same verdict on {same} of {len(cli)} pages; pages kept: Space {sum(k == 'true' for *_, k in space)}, ",
        end="",
    )
    print(f"CLI {sum(k == 'true' for *_, k in cli)}; rows in the Space's manifest: {len(space)}")
    print(f"  run time: Space {space_s:.1f} s (1 worker, in the server), CLI {cli_s:.1f} s (all cores, with start-up)")
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if same == len(cli) == len(space) else 1)


if __name__ == "__main__":
    main()
