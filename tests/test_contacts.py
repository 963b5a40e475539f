"""Whom to call: the owner's contacts file (a made-up one here) per region, shown with a notifiable verdict; without
one, how to find the veterinary authority."""

from __future__ import annotations

import logging
from pathlib import Path
from types import ModuleType

import pytest
from fixed_models import write_contacts
from gradio_client import Client, handle_file

from models import contacts

GENERIC = "ask at the nearest government veterinary hospital"


def test_a_json_file_gives_each_regions_contacts_in_the_visitors_language(tmp_path: Path) -> None:
    configured = contacts.load(write_contacts(tmp_path))
    assert list(configured) == ["Testland North", "Testland South"]
    north = contacts.markdown(configured, "Testland North", "hi")
    assert "टेस्ट हेल्पलाइन: [+00 0000 0001](tel:+0000000001)" in north, "a tap-to-call number"
    assert "0002" not in north, "only the region picked"
    both = contacts.markdown(configured, None, "en")
    assert "Test helpline" in both and "Test district vet: [+00 0000 0002](tel:+0000000002) (test hours)" in both
    assert GENERIC not in both


def test_a_yaml_file_works_too(tmp_path: Path) -> None:
    path = tmp_path / "contacts.yaml"
    path.write_text("Testland:\n  - name: Test helpline\n    phone: '+00 0000 0003'\n", encoding="utf-8")
    assert contacts.markdown(contacts.load(path), None).endswith("- Test helpline: [+00 0000 0003](tel:+0000000003)")


@pytest.mark.parametrize("phone", ["+254722000000", "02224567", "1962:45"])
def test_a_yaml_phone_number_is_shown_as_written_not_as_a_yaml_number(tmp_path: Path, phone: str) -> None:
    """Unquoted, YAML read these as numbers: +254722000000 lost its +, 02224567 (octal) became 600439, 1962:45
    (base 60) became 117765: a wrong number to call about a notifiable disease."""
    path = tmp_path / "contacts.yaml"
    path.write_text(f"Testland:\n  - name: Test helpline\n    phone: {phone}\n", encoding="utf-8")
    ((contact,),) = contacts.load(path).values()
    assert contact.phone == phone


def test_a_json_file_saved_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "contacts.json"
    path.write_text('\ufeff{"Testland": [{"name": "Test", "phone": "+00 0000 0005"}]}', encoding="utf-8")
    assert list(contacts.load(path)) == ["Testland"]


def test_without_contacts_the_advice_says_how_to_find_the_authority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONTACTS", raising=False)
    monkeypatch.setattr(contacts, "ROOT", tmp_path)  # no contacts.json beside app.py
    assert contacts.from_env() == {}
    assert GENERIC in contacts.markdown({}, None, "en")
    assert "सरकारी पशु अस्पताल" in contacts.markdown({}, None, "hi")
    (tmp_path / "contacts.json").write_text('{"Testland": [{"name": "Test", "phone": "+00 0000 0004"}]}')
    assert list(contacts.from_env()) == ["Testland"], "the default file beside app.py"


def test_many_regions_ask_for_the_region_first(tmp_path: Path) -> None:
    many = {f"Testland {i}": [{"name": "Test", "phone": f"+00 0000 000{i}"}] for i in range(contacts.FEW + 1)}
    configured = contacts.load(write_contacts(tmp_path, many))
    text = contacts.markdown(configured, None, "en")
    assert "Choose your region above" in text and GENERIC in text and "0000" not in text
    assert "+00 0000 0002" in contacts.markdown(configured, "Testland 2", "en")


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"Testland": []}',
        '{"Testland": [{"name": "Test"}]}',
        '{"Testland": [{"phone": "12"}]}',
        '{"Testland": [{"name": "Test", "phone": 254722000000}]}',  # a number: its + (or leading 0) is gone
        "[" * 100_000 + "]" * 100_000,  # nested too deep for the parser: the app must still start
    ],
)
def test_a_broken_file_is_logged_and_the_generic_advice_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, content: str
) -> None:
    path = tmp_path / "contacts.json"
    path.write_text(content)
    with pytest.raises(contacts.ContactsError):
        contacts.load(path)
    monkeypatch.setenv("CONTACTS", str(path))
    with caplog.at_level(logging.ERROR, logger="models.contacts"):
        assert contacts.from_env() == {}
    assert str(path) in caplog.text
    monkeypatch.setenv("CONTACTS", str(tmp_path / "missing.json"))
    assert contacts.from_env() == {}


def test_a_notifiable_verdict_shows_whom_to_call(
    lumpy_app: ModuleType, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = Client(lumpy_app.demo.local_url, verbose=False)
    monkeypatch.setattr(lumpy_app.triage, "CONTACTS", contacts.load(write_contacts(tmp_path)))
    verdict, _, details = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert verdict["label"].startswith("Likely lumpy skin disease")
    assert "**Who to call**" in details and "[+00 0000 0001](tel:+0000000001)" in details
    _, _, details, *_ = lumpy_app.triage.show_case(str(files["photo"]), None, "cattle", "hi", "Testland South")
    assert "+00 0000 0002" in details and "0001" not in details, "the page shows the region picked"

    monkeypatch.setattr(lumpy_app.triage, "CONTACTS", {})
    _, _, details = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert GENERIC in details and "tel:" not in details


def test_no_contacts_without_a_notifiable_verdict(
    app: ModuleType, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny model's made-up labels are no notifiable disease."""
    monkeypatch.setattr(app.triage, "CONTACTS", contacts.load(write_contacts(tmp_path)))
    client = Client(app.demo.local_url, verbose=False)
    _, _, details = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert "Who to call" not in details and "0000" not in details
