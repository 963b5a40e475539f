"""The case report for the veterinarian (one PDF page, in the visitor's language), and the API for programs, which
stays labels whatever the page's language."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import pymupdf
import pytest
from fixed_models import write_contacts
from gradio_client import Client, handle_file

from models import contacts, report, triage

WHEN = datetime(2025, 3, 14, 9, 26, tzinfo=timezone.utc)
DEVANAGARI = re.compile(r"[\u0900-\u097F]")


def _case() -> triage.CaseVerdict:
    cow = triage.PhotoVerdict("lumpy_skin", {"lumpy_skin": 0.91, "normal_skin": 0.05, "fmd": 0.04}, gate=0.02)
    car = triage.PhotoVerdict("not_cattle", {"lumpy_skin": 0.2, "normal_skin": 0.7, "fmd": 0.1}, gate=0.97)
    return triage.CaseVerdict("lumpy_skin", {"lumpy_skin": 0.91, "normal_skin": 0.05, "fmd": 0.04}, [cow, car])


def _read(path: Path) -> tuple[int, str, int]:
    with pymupdf.open(path) as doc:
        text = unicodedata.normalize("NFC", doc[0].get_text())  # MuPDF gives फ़ as one character, U+095E
        return len(doc), text, len(doc[0].get_image_info())  # pictures shown (one identical image is stored once)


@pytest.fixture
def photos(files: dict[str, Path]) -> list[str]:
    return [str(files["photo"]), str(files["photo2"])]


def test_the_report_holds_the_case_in_english(photos: list[str], tmp_path: Path) -> None:
    configured = contacts.load(write_contacts(tmp_path))
    pdf = report.build(
        _case(), ["cow.jpg", "car.png"], photos, tmp_path, model="cattle-triage", when=WHEN, configured=configured
    )
    pages, text, images = _read(pdf)
    assert pages == 1 and images == 2, "one page, with each photo"
    for expected in (
        "Cattle photo check — case report",
        "2025-03-14 09:26 UTC",
        "cattle-triage",
        "Likely lumpy skin disease (91%) — call a veterinarian",
        "The model is fairly sure.",
        "cow.jpg",
        "car.png",
        "not a cattle photo",
        "Lumpy skin disease is a notiﬁable disease.",  # MuPDF gives the "fi" ligature as one character
        "Test helpline: +00 0000 0001",
        "Test district vet: +00 0000 0002",
        "not a diagnosis",
    ):
        assert expected in text, expected
    assert pdf.name == "case-report-20250314-0926-en.pdf"


def test_the_report_in_hindi(photos: list[str], tmp_path: Path) -> None:
    pdf = report.build(_case(), ["cow.jpg", "car.png"], photos, tmp_path, lang="hi", model="m", when=WHEN)
    pages, text, images = _read(pdf)
    assert pages == 1 and images == 2
    # MuPDF extracts a shaped Devanagari glyph (a conjunct, the vowel signs ि and ी) as a private character, so
    # लम्पी reads back garbled though it prints right: these words have none of those
    for expected in ("पशु फ़ोटो जाँच", "नतीजा", "आशंका (91%)", "खुरपका-मुंहपका", "लैब जाँच", "cow.jpg"):
        assert expected in text, expected
    assert "Likely" not in text and "notifiable" not in text


def test_a_report_without_its_photos_still_has_the_table(tmp_path: Path) -> None:
    """The photos may be gone from the server's cache when the language is switched an hour later."""
    pdf = report.build(_case(), ["cow.jpg", "car.png"], [None, str(tmp_path / "gone.jpg")], tmp_path, when=WHEN)
    pages, text, images = _read(pdf)
    assert (pages, images) == (1, 0) and "car.png" in text


@pytest.mark.parametrize("lang", ["en", "hi"])
def test_a_long_photo_name_keeps_every_number_on_the_page(photos: list[str], tmp_path: Path, lang: str) -> None:
    """A name without a space to break at (a download named by its hash) widened the table until its right-hand
    columns and their numbers fell off the A4 page, without a sign."""
    long = "0123456789abcdef" * 7 + ".jpg"
    pdf = report.build(_case(), [long, "car.png"], photos, tmp_path, lang=lang, when=WHEN)
    with pymupdf.open(pdf) as doc:
        page = doc[0]
        words = page.get_text("words", clip=pymupdf.Rect(-1e4, -1e4, 1e4, 1e4))  # off the page too
        assert words and all(page.rect.contains(pymupdf.Rect(word[:4])) for word in words), "a word off the page"
        text = page.get_text()
    for number in ("98%", "91%", "5%", "4%", "3%"):
        assert number in text, number
    assert "0123456789abcdef0123456789abcde…cdef.jpg" in text, "the table's name: its start and its end"


def test_eight_photos_still_fit_one_page(files: dict[str, Path], tmp_path: Path) -> None:
    photo = triage.PhotoVerdict("lumpy_skin", {"lumpy_skin": 0.6, "normal_skin": 0.3, "fmd": 0.1}, gate=0.1)
    case = triage.CaseVerdict("lumpy_skin", photo.probabilities, [photo] * 8)
    names = [f"IMG_{i:04d}.jpg" for i in range(8)]
    pdf = report.build(case, names, [str(files["photo"])] * 8, tmp_path, lang="hi", when=WHEN)
    pages, text, images = _read(pdf)
    assert pages == 1 and images == 8 and all(name in text for name in names)


def test_the_model_version_names_its_weights(app_model: Path) -> None:
    version = report.model_version(str(app_model))
    assert re.fullmatch(rf"{app_model.name} \(sha256 [0-9a-f]{{12}}\)", version), version
    assert report.model_version("someone/hub-model") == "someone/hub-model"


def test_the_page_offers_the_report_in_its_language(lumpy_app: ModuleType, files: dict[str, Path]) -> None:
    photos = [str(files["photo"]), [str(files["photo2"])]]
    headline, _, _, button, box, state = lumpy_app.triage.show_case(*photos, "cattle", "hi", None)
    assert headline.startswith("लम्पी स्किन रोग")
    assert button.endswith("-hi.pdf") and box.visible
    assert "नतीजा" in _read(Path(button))[1]
    english = lumpy_app.triage.reword("en", None, state)  # the language switch: the same case, no model
    assert english[0].startswith("Likely lumpy skin disease") and english[3].endswith("-en.pdf")
    assert "Likely lumpy skin disease" in _read(Path(english[3]))[1]


def test_the_api_for_programs_is_unchanged_by_the_pages_language(app: ModuleType, files: dict[str, Path]) -> None:
    """``/classify_json`` answers labels (and ``/classify`` English) to a program whatever language it asks for;
    the page's own Classify is not an endpoint of its own."""
    client = Client(app.demo.local_url, verbose=False, headers={"Accept-Language": "hi-IN,hi;q=0.9"})
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert [p["parameter_name"] for p in api["/classify_json"]["parameters"]] == ["photo", "more_photos", "animal"]
    assert [p["parameter_name"] for p in api["/classify"]["parameters"]] == ["photo", "more_photos", "animal"]
    assert len(api["/classify"]["returns"]) == 3
    assert "/show_case" not in api
    result = client.predict(handle_file(files["photo"]), [handle_file(files["photo2"])], api_name="/classify_json")
    assert set(result) == {"verdict", "probabilities", "animal", "advice", "photos", "model"}
    labels = set(result["probabilities"])
    assert result["verdict"] in labels and all(p["verdict"] in labels for p in result["photos"])
    assert not DEVANAGARI.search(json.dumps(result, ensure_ascii=False))
    verdict, _, details = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert not DEVANAGARI.search(verdict["label"] + details) and "| photo | answer |" in details
