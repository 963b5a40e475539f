"""The Space in a real browser (Debian's Chromium, driven by Playwright), used as a visitor would.

The app is the session's real app (``conftest.app``). Every step leaves a screenshot in the folder printed
at the end of the run (``SCREENSHOTS_DIR``, or a temporary folder) for people to look at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path
from types import ModuleType

import pymupdf
import pytest
import tomllib
from factories import mixed_page, pdf_from_images, text_page
from gradio_client import Client
from PIL import Image
from playwright.sync_api import Browser, Locator, Page, expect
from test_models import LABELS

from pipeline import Options, run
from pipeline.writer import read_manifest

LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
CHROMIUM_FLAGS = [  # as root in a container, offline: no sandbox, no GPU, no calls home
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
RUN_TIMEOUT_MS = 120_000


def _chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Chromium not found: `apt-get install chromium` (or set CHROMIUM=/path/to/chromium)")
    return path


def _open(browser: Browser, app: ModuleType, viewport: dict[str, int], tab: str | None = None) -> Page:
    context = browser.new_context(viewport=viewport, accept_downloads=True, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.goto(app.demo.local_url)
    expect(page.get_by_role("tab", name="Cattle scanner")).to_be_visible(timeout=30_000)
    if tab:
        page.get_by_role("tab", name=tab).click()
    return page


def _file_input(page: Page, elem_id: str) -> Locator:
    return page.locator(f"#{elem_id} input[type=file]")


def _wait_for_upload(page: Page, elem_id: str, name: str) -> None:
    """Gradio uploads the file, then lists it by name: only then is it the component's value."""
    expect(page.locator(f"#{elem_id} a[href$='/{name}']")).to_be_visible(timeout=30_000)


def _build(page: Page) -> str:
    """Press Build dataset and wait for the run's final summary; returns it."""
    page.locator("#build-btn").click()
    summary = page.locator("#summary textarea")
    expect(summary).to_have_value(_matches(r"^\d+ pages? seen"), timeout=RUN_TIMEOUT_MS)
    return summary.input_value()


def _matches(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _download_zip(page: Page, tmp_path: Path) -> Path:
    with page.expect_download() as download:
        page.locator("#dataset-zip a[download]").first.click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    return target


def _no_sideways_scroll(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    viewport = page.viewport_size["width"]
    wide = page.evaluate(
        """(viewport) => [...document.querySelectorAll('body *')]
            .filter(e => e.getClientRects().length && e.getBoundingClientRect().right > viewport + 1)
            .map(e => e.tagName + '#' + e.id + '.' + e.getAttribute('class')).slice(0, 5)""",
        viewport,
    )
    assert width <= viewport, f"page is {width} px wide on a {viewport} px screen: {wide}"
    assert not wide, f"elements reach past the screen's right edge: {wide}"


def _within_screen_width(page: Page, selector: str) -> None:
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not displayed"
    assert box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"] + 1, (selector, box)


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("browser-pdfs")
    return {
        "mixed": pdf_from_images(d / "gazette.pdf", [mixed_page(1000, 1400, seed=1), text_page(seed=2)]),
        "text": pdf_from_images(d / "columns.pdf", [text_page(seed=4)]),
        "long": _repeated(pdf_from_images(d / "page.pdf", [mixed_page(seed=3)]), d / "annual.pdf", 200),
        "plates": pdf_from_images(d / "plates.pdf", [mixed_page(1000, 1400, seed=s) for s in (1, 2)], quality=50),
    }


def _repeated(single: Path, path: Path, pages: int) -> Path:
    """``pages`` copies of a one-page PDF sharing its scan: a long run in a file under the 1 MB upload limit."""
    with pymupdf.open(single) as source, pymupdf.open() as doc:
        for _ in range(pages):
            doc.insert_pdf(source)
        doc.save(path, garbage=4)  # garbage=4 merges the identical scans into one object
    assert path.stat().st_size < 2**20
    return path


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_classify_a_photo(
    browser: Browser, app: ModuleType, files: dict[str, Path], screenshots: Path, viewport: dict[str, int]
) -> None:
    name = "laptop" if viewport is LAPTOP else "phone"
    page = _open(browser, app, viewport)
    page.screenshot(path=screenshots / f"cattle-{name}-1-start.png", full_page=True)
    photo_input = _file_input(page, "photo")
    accept = photo_input.get_attribute("accept")
    assert accept is not None and accept.startswith("image/*"), "a phone offers its camera or gallery for image/*"

    photo_input.set_input_files(files["photo"])
    preview = page.locator("#photo-preview img")
    expect(preview).to_be_visible(timeout=30_000)  # the visitor sees the photo they picked
    page.screenshot(path=screenshots / f"cattle-{name}-2-photo.png", full_page=True)
    page.locator("#classify-btn").click()

    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text(_matches("|".join(LABELS.values())), timeout=60_000)
    expect(page.locator("#details table")).to_contain_text("cow.jpg")
    page.screenshot(path=screenshots / f"cattle-{name}-3-verdict.png", full_page=True)
    _no_sideways_scroll(page)
    for selector in ("#classify-btn", "#verdict", "#scores", "#details", "#photo-preview"):
        _within_screen_width(page, selector)
    page.context.close()


def test_a_heic_photo_is_shown_and_classified(browser: Browser, app: ModuleType, files: dict[str, Path]) -> None:
    """A desktop browser does not know HEIC (an iPhone's photos, copied to a PC) as an image type: the upload must
    still take it, and the preview must be an image the browser can draw."""
    page = _open(browser, app, LAPTOP)
    _file_input(page, "photo").set_input_files(files["photo_heic"])
    preview = page.locator("#photo-preview img")
    expect(preview).to_be_visible(timeout=30_000)
    page.wait_for_function("document.querySelector('#photo-preview img').naturalWidth > 0", timeout=30_000)
    page.locator("#classify-btn").click()
    expect(page.locator("#details table")).to_contain_text("cow3.HEIC", timeout=60_000)
    page.context.close()


def test_default_controls_use_the_judges_threshold(
    browser: Browser, app: ModuleType, pdfs: dict[str, Path], screenshots: Path, tmp_path: Path
) -> None:
    """With every control as the page shows it, the run is the CLI's default run (threshold included)."""
    page = _open(browser, app, LAPTOP, "PDF → dataset")
    expect(page.locator("#threshold textarea, #threshold input")).to_have_value("")
    _file_input(page, "pdfs").set_input_files(pdfs["mixed"])
    _wait_for_upload(page, "pdfs", "gazette.pdf")
    page.screenshot(path=screenshots / "pdf-laptop-1-uploaded.png", full_page=True)

    with page.expect_request(lambda r: "/queue/join" in r.url and "gazette" in (r.post_data or "")) as sent:
        summary = _build(page)
    page.screenshot(path=screenshots / "pdf-laptop-2-built.png", full_page=True)
    assert summary.startswith("2 pages seen, 1 kept"), summary

    browser_values = sent.value.post_data_json["data"][1:]
    api = Client(app.demo.local_url, verbose=False).view_api(print_info=False, return_format="dict")
    api_defaults = [p["parameter_default"] for p in api["named_endpoints"]["/pdf_to_dataset"]["parameters"][1:]]
    assert browser_values == api_defaults, "each control's browser default is the API's (and the CLI's)"

    rows = read_manifest(_download_zip(page, tmp_path))
    cli = read_manifest(run([pdfs["mixed"]], tmp_path / "cli.zip", Options()).output)
    assert [(r["page"], r["kept"], r["score"]) for r in rows] == [(r["page"], r["kept"], r["score"]) for r in cli]
    assert [r["kept"] for r in rows] == ["true", "false"]
    assert all((float(r["score"]) >= 0.5) == (r["kept"] == "true") for r in rows), "the structure judge's 0.5"

    chart = page.locator("#score-chart svg.histogram")
    expect(chart).to_contain_text("threshold 0.5")
    column = page.locator("#score-chart").bounding_box()
    drawn = chart.bounding_box()
    assert drawn["x"] + drawn["width"] <= column["x"] + column["width"] + 1, "the histogram fits its column"

    page.get_by_text("Report (report.html)").click()
    report = page.frame_locator("#report iframe")
    expect(report.get_by_text("Dataset report")).to_be_visible(timeout=10_000)
    page.screenshot(path=screenshots / "pdf-laptop-3-report.png", full_page=True)
    page.context.close()


def test_text_only_pdf_keeps_nothing_on_a_phone(
    browser: Browser, app: ModuleType, pdfs: dict[str, Path], screenshots: Path
) -> None:
    page = _open(browser, app, PHONE, "PDF → dataset")
    _no_sideways_scroll(page)
    page.screenshot(path=screenshots / "pdf-phone-1-start.png", full_page=True)
    _file_input(page, "pdfs").set_input_files(pdfs["text"])
    _wait_for_upload(page, "pdfs", "columns.pdf")
    _within_screen_width(page, "#build-btn")
    summary = _build(page)
    assert summary.startswith("1 page seen, 0 kept"), summary
    assert "columns.pdf: 1 page, 0 kept (0 images), no errors" in summary
    page.screenshot(path=screenshots / "pdf-phone-2-built.png", full_page=True)
    _no_sideways_scroll(page)
    page.context.close()


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_text_file_named_pdf_shows_its_error(
    browser: Browser, app: ModuleType, files: dict[str, Path], screenshots: Path, viewport: dict[str, int]
) -> None:
    name = "laptop" if viewport is LAPTOP else "phone"
    page = _open(browser, app, viewport, "PDF → dataset")
    _file_input(page, "pdfs").set_input_files(files["not_pdf"])
    _wait_for_upload(page, "pdfs", "notes.pdf")
    page.locator("#build-btn").click()
    toast = page.locator(".toast-body").filter(has_text="notes.pdf")
    expect(toast).to_contain_text("notes.pdf: not a PDF: looks like text", timeout=30_000)
    page.screenshot(path=screenshots / f"pdf-{name}-error.png", full_page=True)
    _within_screen_width(page, ".toast-body")
    expect(page.locator("#build-btn")).to_be_enabled()
    page.context.close()


def test_several_pdfs_in_one_run(browser: Browser, app: ModuleType, pdfs: dict[str, Path], screenshots: Path) -> None:
    page = _open(browser, app, LAPTOP, "PDF → dataset")
    _file_input(page, "pdfs").set_input_files([pdfs["mixed"], pdfs["text"]])
    _wait_for_upload(page, "pdfs", "columns.pdf")
    summary = _build(page)
    assert summary.startswith("3 pages seen, 1 kept"), summary
    assert "gazette.pdf: 2 pages, 1 kept (1 image), no errors" in summary
    assert "columns.pdf: 1 page, 0 kept (0 images), no errors" in summary
    page.screenshot(path=screenshots / "pdf-laptop-several.png", full_page=True)
    page.context.close()


def test_cancel_stops_the_run(browser: Browser, app: ModuleType, pdfs: dict[str, Path], screenshots: Path) -> None:
    """Cancel ends the run between pages (its work folder is removed when the pipeline has stopped), and the
    freed queue slot takes the next run at once."""
    page = _open(browser, app, LAPTOP, "PDF → dataset")
    _file_input(page, "pdfs").set_input_files(pdfs["long"])
    _wait_for_upload(page, "pdfs", "annual.pdf")
    before = set(app.disk.WORK_ROOT.iterdir())
    page.locator("#build-btn").click()
    summary = page.locator("#summary textarea")
    expect(summary).to_have_value(_matches(r"^Page \d+/200"), timeout=RUN_TIMEOUT_MS)
    running = set(app.disk.WORK_ROOT.iterdir()) - before
    assert len(running) == 1, "the run works in its own folder"
    page.locator("#cancel-btn").click()
    expect(summary).to_have_value(_matches("^Cancelled"), timeout=10_000)
    page.screenshot(path=screenshots / "pdf-laptop-cancelled.png", full_page=True)
    expect(page.locator("#build-btn")).to_be_enabled()
    expect(page.locator("#cancel-btn")).to_be_disabled()
    (work,) = running
    for _ in range(100):  # the generator's cleanup runs once the pipeline has stopped
        if not work.exists():
            break
        page.wait_for_timeout(100)
    assert not work.exists(), "the cancelled run stopped and its files were removed"
    page.wait_for_timeout(1000)  # a run that went on to its end would have delivered its zip by now
    assert page.locator("#dataset-zip a[download]").count() == 0, "the run was not stopped: it delivered a zip"

    page.locator("#pdfs").get_by_role("button", name="Clear").click()
    _file_input(page, "pdfs").set_input_files(pdfs["text"])
    _wait_for_upload(page, "pdfs", "columns.pdf")
    summary_text = _build(page)
    assert summary_text.startswith("1 page seen, 0 kept"), "the next run starts at once and runs alone"
    page.context.close()


def test_a_new_run_clears_the_last_runs_results(
    browser: Browser, app: ModuleType, pdfs: dict[str, Path], screenshots: Path
) -> None:
    """While a run works (and after it is cancelled) the page must not show the previous run's zip, chart, galleries
    and report as if they were this run's."""
    page = _open(browser, app, LAPTOP, "PDF → dataset")
    _file_input(page, "pdfs").set_input_files(pdfs["mixed"])
    _wait_for_upload(page, "pdfs", "gazette.pdf")
    _build(page)
    expect(page.locator("#dataset-zip a[download]")).to_have_count(1)
    expect(page.locator("#score-chart svg")).to_have_count(1)
    expect(page.locator("#review-table")).to_have_count(1)
    page.get_by_text("Report (report.html)").click()
    expect(page.locator("#report iframe")).to_have_count(1)
    page.locator("#pdfs").get_by_role("button", name="Clear").click()
    _file_input(page, "pdfs").set_input_files(pdfs["long"])
    _wait_for_upload(page, "pdfs", "annual.pdf")
    page.locator("#build-btn").click()
    summary = page.locator("#summary textarea")
    expect(summary).to_have_value(_matches(r"^Page \d+/200"), timeout=RUN_TIMEOUT_MS)
    for selector in ("#dataset-zip a[download]", "#score-chart svg", "#kept-gallery img", "#report iframe", "#review"):
        expect(page.locator(selector)).to_have_count(0)
    page.locator("#cancel-btn").click()
    expect(summary).to_have_value(_matches("^Cancelled"), timeout=10_000)
    page.screenshot(path=screenshots / "pdf-laptop-rerun-cancelled.png", full_page=True)
    expect(page.locator("#dataset-zip a[download]")).to_have_count(0)
    page.context.close()


def test_the_built_in_model_on_a_phone(
    browser: Browser,
    app: ModuleType,
    files: dict[str, Path],
    screenshots: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """With the committed triage model (what a fresh clone serves), the verdict, its advice and the per-photo
    table are readable on a phone without scrolling sideways; a picture refused before the model has no chart."""
    import models

    monkeypatch.setattr(
        app.triage, "CLASSIFIER", models.make_classifier(policy="per_request", model_id=models.DEFAULT_MODEL_ID)
    )
    page = _open(browser, app, PHONE)
    _file_input(page, "photo").set_input_files(files["photo"])
    expect(page.locator("#photo-preview img")).to_be_visible(timeout=30_000)
    page.locator("#classify-btn").click()
    expect(page.locator("#details table")).to_be_visible(timeout=60_000)
    page.screenshot(path=screenshots / "cattle-phone-4-built-in-model.png", full_page=True)
    _no_sideways_scroll(page)
    expect(page.locator("#verdict")).to_contain_text(re.compile(r"\w"))
    expect(page.locator("#details h3")).to_have_count(0)  # the headline once, in the verdict box
    expect(page.locator("#photo-guide")).to_contain_text("What to photograph")
    expect(page.locator("#details")).not_to_contain_text(str(Path(models.DEFAULT_MODEL_ID).parent))
    for selector in ("#verdict", "#details table", "#scores"):
        _within_screen_width(page, selector)
    dot = tmp_path / "dot.png"
    Image.new("RGB", (1, 1), (120, 80, 50)).save(dot)
    page.locator("#photo").get_by_role("button", name="Clear").click()
    _file_input(page, "photo").set_input_files(dot)
    page.locator("#classify-btn").click()
    expect(page.locator("#verdict")).to_contain_text("Photo cannot be used", timeout=60_000)
    expect(page.locator("#scores")).to_be_hidden()  # no number to show: no empty chart either
    page.screenshot(path=screenshots / "cattle-phone-5-refused.png", full_page=True)
    page.context.close()


def _type_size(page: Page, size: str) -> None:
    """Type ``size`` into the output size's box as a visitor does, until the slider shows it. The accordion that
    holds it mounts its content as it opens, and a size typed in that moment was sometimes lost (Build then ran at
    1024: one CI run in a few), which no visitor, slower than Playwright, would meet."""
    box, slider = page.locator("#size input[type=number]"), page.locator("#size input[type=range]")
    for _ in range(3):
        box.fill(size)
        box.press("Enter")
        box.blur()
        try:
            expect(slider).to_have_value(size, timeout=3_000)
            return
        except AssertionError:
            continue
    expect(slider).to_have_value(size)


def test_review_edit_a_caption_untick_an_image_and_download(
    browser: Browser, app: ModuleType, pdfs: dict[str, Path], screenshots: Path, tmp_path: Path
) -> None:
    """The review step as a visitor uses it: every written image with its caption; one caption edited, one image
    unticked, kohya's config ticked, the reviewed zip made and downloaded; then the same page on a phone's width."""
    page = _open(browser, app, LAPTOP, "PDF → dataset")
    _file_input(page, "pdfs").set_input_files(pdfs["plates"])
    _wait_for_upload(page, "pdfs", "plates.pdf")
    page.get_by_text("Output: size, fit, captions, duplicates").click()
    _type_size(page, "768")  # the size kohya's config will name
    assert _build(page).startswith("2 pages seen, 2 kept (2 images)")
    expect(page.locator("#review-where")).to_contain_text("Page 1 of 1: images 1–2 of 2")
    rows = page.locator("#review-table .virtual-body [role=row]")
    expect(rows).to_have_count(2)
    first, second = "plates_p0001_r1.jpg", "plates_p0002_r1.jpg"
    expect(page.locator("#review-gallery")).to_contain_text(f"#1 {first}")
    expect(page.locator("#review-gallery")).to_contain_text(f"#2 {second}")

    caption = rows.nth(0).locator("[role=gridcell]").nth(2)
    caption.dblclick()
    editor = caption.locator("textarea, input:not([type=checkbox])")
    expect(editor).to_be_focused()  # typing before the editor has focus loses keystrokes (a flaky CI run)
    editor.fill("an engraving, a caption written by hand")
    editor.press("Enter")
    rows.nth(1).locator("input[type=checkbox]").uncheck()
    page.locator("#review-kohya input").check()
    expect(page.locator("#review-kohya-dir textarea, #review-kohya-dir input")).to_have_value(
        "/data/plates_dataset_reviewed"
    )
    page.locator("#review-btn").click()
    expect(page.locator("#review-note")).to_contain_text(
        "1 image (1 caption edited, 1 image left out), with kohya's dataset_config.toml.", timeout=30_000
    )
    page.locator("#review-gallery").scroll_into_view_if_needed()
    page.wait_for_function("[...document.querySelectorAll('#review-gallery img')].every(i => i.complete)")
    page.locator("#review").screenshot(path=screenshots / "review-laptop.png")

    with page.expect_download() as download:
        page.locator("#reviewed-zip a[download]").first.click()
    assert download.value.suggested_filename == "plates_dataset_reviewed.zip"
    download.value.save_as(reviewed := tmp_path / "reviewed.zip")
    with zipfile.ZipFile(reviewed) as archive:
        names = archive.namelist()
        assert first in names and second not in names and second.replace(".jpg", ".txt") not in names
        assert archive.read(first.replace(".jpg", ".txt")).decode() == "an engraving, a caption written by hand"
        records = [json.loads(line) for line in archive.read("metadata.jsonl").decode().splitlines()]
        assert [(r["file_name"], r["text"]) for r in records] == [(first, "an engraving, a caption written by hand")]
        config = tomllib.loads(archive.read("dataset_config.toml").decode())
    assert config["general"]["resolution"] == 768, "the run's size, as it was when Build was pressed"
    assert config["datasets"][0]["subsets"][0]["image_dir"] == "/data/plates_dataset_reviewed"

    page.set_viewport_size(PHONE)
    page.wait_for_timeout(500)
    _no_sideways_scroll(page)
    for selector in ("#review-gallery", "#review-table", "#review-btn", "#reviewed-zip"):
        _within_screen_width(page, selector)
    page.locator("#review").screenshot(path=screenshots / "review-phone.png")
    page.context.close()
