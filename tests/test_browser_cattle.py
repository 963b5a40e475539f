"""The cattle scanner in a Hindi-speaking phone's Chromium (``locale="hi-IN"``, 390 px): the page, a lumpy skin
verdict with its advice and whom to call, the case report, and a photo that shows no cattle read in Hindi; the
switch turns the page and the report to English. Screenshots: ``i18n-*.png`` in the suite's screenshot folder."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pymupdf
import pytest
from fixed_models import save_fixed_model, write_contacts
from playwright.sync_api import Browser, Page, expect
from test_browser import LAPTOP, PHONE, _file_input, _no_sideways_scroll

import models
from models import contacts, i18n

DEVANAGARI = re.compile(r"[\u0900-\u097F]")


@pytest.fixture(scope="module")
def fixed_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {a: save_fixed_model(tmp_path_factory.mktemp(a), a) for a in ("lumpy_skin", "not_cattle")}


def _classify(page: Page, app: ModuleType, model: Path, photo: Path) -> None:
    app.triage.CLASSIFIER = models.PerRequestClassifier(model_id=str(model))
    _file_input(page, "photo").set_input_files(photo)
    expect(page.locator("#photo-preview img")).to_be_visible(timeout=30_000)
    page.locator("#classify-btn").click()


def _report_text(page: Page, tmp_path: Path) -> str:
    with page.expect_download() as download:
        page.locator("#case-report a[download]").first.click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    with pymupdf.open(target) as doc:
        assert len(doc) == 1
        return unicodedata.normalize("NFC", doc[0].get_text())


def test_a_hindi_phone_reads_the_scanner_in_hindi_and_switches_to_english(
    browser: Browser,
    app: ModuleType,
    files: dict[str, Path],
    fixed_models: dict[str, Path],
    screenshots: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app.triage, "CLASSIFIER", app.triage.CLASSIFIER)  # restored after the test
    monkeypatch.setattr(app.triage, "CONTACTS", contacts.load(write_contacts(tmp_path)))
    context = browser.new_context(viewport=PHONE, is_mobile=True, locale="hi-IN", accept_downloads=True)
    page = context.new_page()
    page.goto(app.demo.local_url)
    expect(page.get_by_role("tab", name="पशु जाँच")).to_be_visible(timeout=30_000)  # the browser's language
    expect(page.get_by_role("radio", name="हिन्दी")).to_be_checked()
    expect(page.locator("#classify-btn")).to_have_text("जाँच करें")
    expect(page.locator("#photo-guide")).to_contain_text("खुर और थन")
    expect(page.locator("#photo-framing svg")).to_have_count(4)  # how to frame the photos, drawn
    expect(page.locator("#photo-framing")).to_contain_text(i18n.text("framing.closeup", "hi"))
    page.screenshot(path=screenshots / "i18n-1-start.png", full_page=True)

    _classify(page, app, fixed_models["lumpy_skin"], files["photo"])
    expect(page.locator("#verdict")).to_contain_text("लम्पी स्किन रोग होने की ज़्यादा आशंका", timeout=60_000)
    details = page.locator("#details")
    expect(details).to_contain_text("लम्पी स्किन रोग की ख़बर सरकार को देना ज़रूरी है")
    expect(details).to_contain_text("टेस्ट हेल्पलाइन: +00 0000 0001")  # both regions until one is picked
    expect(details).to_contain_text("+00 0000 0002")
    expect(page.locator("#region")).to_be_visible()
    page.locator("#region input").click()
    page.get_by_role("option", name="Testland South").click()
    expect(details).not_to_contain_text("0001")
    expect(details).to_contain_text("+00 0000 0002")
    page.screenshot(path=screenshots / "i18n-2-lumpy-hindi.png", full_page=True)
    _no_sideways_scroll(page)
    hindi = _report_text(page, tmp_path)
    assert "नतीजा" in hindi and "आशंका (96%)" in hindi and "+00 0000 0002" in hindi

    page.get_by_role("radio", name="English").click()
    expect(page.locator("#verdict")).to_contain_text("Likely lumpy skin disease (96%)")
    expect(page.get_by_role("tab", name="Cattle scanner")).to_be_visible()
    expect(page.locator("#classify-btn")).to_have_text("Classify")
    expect(page.locator("#photo-framing")).to_contain_text(i18n.text("framing.closeup"))
    expect(details).to_contain_text("Lumpy skin disease is a notifiable disease.")
    expect(details).not_to_contain_text("Likely lumpy skin disease (96%)")  # in the verdict box, not twice
    expect(page.locator("#case-report a[download]")).to_have_attribute("href", re.compile(r"-en\.pdf$"))
    assert not DEVANAGARI.search(page.locator("#details").inner_text())
    page.screenshot(path=screenshots / "i18n-3-lumpy-english.png", full_page=True)
    english = _report_text(page, tmp_path)
    assert "Likely lumpy skin disease (96%)" in english and "Test district vet: +00 0000 0002" in english

    page.get_by_role("radio", name="हिन्दी").click()
    expect(page.locator("#verdict")).to_contain_text("लम्पी स्किन रोग")
    page.reload()  # a new case; the page starts in the browser's language again
    expect(page.get_by_role("radio", name="हिन्दी")).to_be_checked(timeout=30_000)
    _classify(page, app, fixed_models["not_cattle"], files["photo2"])
    expect(page.locator("#verdict")).to_contain_text("यह गाय-भैंस की फ़ोटो नहीं है", timeout=60_000)
    expect(details).to_contain_text("इस फ़ोटो में गाय-भैंस नहीं दिखती")
    expect(details).not_to_contain_text("किसे फ़ोन करें")  # no one to call about a photo without cattle
    page.screenshot(path=screenshots / "i18n-4-not-cattle-hindi.png", full_page=True)
    _no_sideways_scroll(page)
    context.close()


@pytest.mark.parametrize(("lang", "viewport"), [("en", PHONE), ("hi", PHONE), ("en", LAPTOP), ("hi", LAPTOP)])
def test_a_goat_chosen_gets_no_cattle_verdict_but_its_signs_and_whom_to_call(
    browser: Browser,
    app: ModuleType,
    files: dict[str, Path],
    fixed_models: dict[str, Path],
    screenshots: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lang: str,
    viewport: dict[str, int],
) -> None:
    """A goat's lesion photographed for the vet: with *goat or sheep* chosen the model is not asked (a model that
    answers lumpy skin for every photo is set, and its verdict never shows), the page and the case report give the
    signs of the notifiable diseases of goats and sheep and the contacts; choosing cattle again clears the answer."""
    monkeypatch.setattr(app.triage, "CONTACTS", contacts.load(write_contacts(tmp_path)))
    monkeypatch.setattr(app.triage, "CLASSIFIER", app.triage.CLASSIFIER)
    context = browser.new_context(
        viewport=viewport,
        is_mobile=viewport is PHONE,
        locale="hi-IN" if lang == "hi" else "en-GB",
        accept_downloads=True,
    )
    page = context.new_page()
    page.goto(app.demo.local_url)
    expect(page.locator("#animal")).to_contain_text(i18n.text("animal.goat_sheep", lang), timeout=30_000)
    page.get_by_role("radio", name=i18n.text("animal.goat_sheep", lang)).check()
    loads = models.STATS.loads
    _classify(page, app, fixed_models["lumpy_skin"], files["photo"])
    verdict, details = page.locator("#verdict"), page.locator("#details")
    expect(verdict).to_contain_text(i18n.text("headline.animal.goat_sheep", lang), timeout=60_000)
    expect(verdict).not_to_contain_text(i18n.text("name.lumpy_skin", lang))
    expect(details).to_contain_text("PPR" if lang == "en" else "पीपीआर")
    expect(details).to_contain_text("+00 0000 0001")  # whom to call (both regions until one is picked)
    expect(page.locator("#scores")).to_be_hidden()
    expect(details.locator("table")).to_have_count(0)
    assert models.STATS.loads == loads, "no model asked about a goat"
    shot = "phone" if viewport is PHONE else "desktop"
    page.screenshot(path=screenshots / f"animal-goat-{lang}-{shot}.png", full_page=True)
    _no_sideways_scroll(page)
    report = " ".join(unicodedata.normalize("NFKC", _report_text(page, tmp_path)).split())  # ligatures ("ff") undone
    assert "+00 0000 0001" in report and "lumpy_skin0" not in report, "whom to call; no model named"
    if lang == "en":
        assert i18n.text("headline.animal.goat_sheep", lang) in report and "PPR (goat plague)" in report

    page.get_by_role("radio", name=i18n.text("animal.cattle", lang)).check()  # the answer was for the goat
    expect(verdict).not_to_contain_text(i18n.text("headline.animal.goat_sheep", lang))
    expect(page.locator("#case-report")).to_be_hidden()
    context.close()
