"""The real app, launched in this process and driven over HTTP with ``gradio_client``.

The classifier is a tiny random ViT saved by the test: its labels are made up and its answers
meaningless. Only the wiring, the lifecycle and the error paths are under test.
"""

from __future__ import annotations

import csv
import gc
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import httpx
import numpy as np
import pymupdf
import pytest
import tomllib
from factories import free_port, mixed_page, pdf_from_images, text_page
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from PIL import Image
from test_models import LABELS

import models
from models import advice
from pipeline import Options

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client(app: ModuleType) -> Client:
    return Client(app.demo.local_url, verbose=False)


def _error(client: Client, *args: object, api_name: str) -> str:
    """The message of the ``gr.Error`` the server raised (gradio_client re-raises it as ``AppError``)."""
    with pytest.raises(AppError) as info:
        client.predict(*args, api_name=api_name)
    return str(info.value)


def _still_serving(client: Client, files: dict[str, Path]) -> None:
    verdict, _, _ = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert verdict["label"].rsplit(" (", 1)[0] in LABELS.values()


def test_api_names_and_defaults(client: Client) -> None:
    info = client.view_api(print_info=False, return_format="dict")
    endpoints = info["named_endpoints"]
    classify_params = endpoints["/classify"]["parameters"]
    assert classify_params[0]["parameter_name"] == "photo"
    pdf_params = endpoints["/pdf_to_dataset"]["parameters"]
    assert pdf_params[0]["parameter_name"] == "pdfs"
    assert not pdf_params[0]["parameter_has_default"]
    defaults = {p["parameter_name"]: p["parameter_default"] for p in pdf_params[1:]}
    cli = Options()  # the CLI's defaults: every control must default to the same
    assert defaults == {
        "threshold": "",  # empty: the judge's own
        "size": cli.size,
        "filter_name": cli.filter,
        "fit": cli.fit,
        "crop": cli.crop,
        "trigger": cli.trigger,
        "caption": cli.caption,
        "dedupe": cli.dedupe,
        "min_side": cli.min_side,  # added later: calls made before it existed still work
        "ocr": cli.ocr,  # added last
    }


def test_classify_one_photo_loads_and_frees_the_model(app: ModuleType, client: Client, files: dict[str, Path]) -> None:
    import models

    loads, offloads = models.STATS.loads, models.STATS.offloads
    verdict, label, details = client.predict(handle_file(files["photo"]), api_name="/classify")

    confidences = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert set(confidences) == set(LABELS.values())
    assert max(confidences, key=confidences.get) == label["label"]
    assert verdict["label"] == f"{label['label']} ({confidences[label['label']]:.0%})"  # a plain classifier's top
    assert details.startswith(f"### {verdict['label']}")
    assert f"Model: {Path(app.triage.CLASSIFIER.model_id).name}" in details
    assert str(Path(app.triage.CLASSIFIER.model_id).parent) not in details, "no server path on the page"
    assert models.STATS.loads == loads + 1
    assert models.STATS.offloads == offloads + 1
    gc.collect()
    assert models.STATS.last_model is not None and models.STATS.last_model() is None

    client.predict(handle_file(files["photo"]), api_name="/classify")
    assert models.STATS.loads == loads + 2, "the per-request policy loads again for every request"
    gc.collect()
    assert models.STATS.last_model() is None


def test_classify_several_photos_of_every_format(client: Client, files: dict[str, Path]) -> None:
    _, _, details = client.predict(
        handle_file(files["photo"]),
        [handle_file(files["photo2"]), handle_file(files["photo_heic"])],
        api_name="/classify",
    )
    rows = [line for line in details.splitlines() if line.startswith("| cow")]
    assert len(rows) == 3, details


def test_classify_json_gives_the_case_and_each_photo_as_models_predict_does(
    client: Client, files: dict[str, Path]
) -> None:
    photos = [files["photo"], files["photo2"], files["photo_heic"]]
    result = client.predict(handle_file(photos[0]), [handle_file(p) for p in photos[1:]], api_name="/classify_json")
    assert [row["file"] for row in result["photos"]] == ["cow.jpg", "cow2.png", "cow3.HEIC"]
    for row in result["photos"]:
        assert set(row) == {"file", "verdict", "probabilities", "gate", "reason", "distance"}
        assert set(row["probabilities"]) == set(LABELS.values()) and row["gate"] is None  # no gate in this model
        assert row["verdict"] == max(row["probabilities"], key=row["probabilities"].get)  # a plain classifier's
        assert sum(row["probabilities"].values()) == pytest.approx(1.0, abs=1e-4)
    assert result["verdict"] in LABELS.values() and set(result["probabilities"]) == set(LABELS.values())
    for photo, row in zip(photos, result["photos"], strict=True):  # each row is its own photo's answer
        alone = client.predict(handle_file(photo), [], api_name="/classify_json")["photos"][0]
        assert alone["probabilities"] == pytest.approx(row["probabilities"], abs=1e-5)
    verdict, _, details = client.predict(
        handle_file(photos[0]), [handle_file(p) for p in photos[1:]], api_name="/classify"
    )
    headline = advice.headline(models.CaseVerdict(result["verdict"], result["probabilities"]))
    assert verdict["label"] == headline, "the page and the data give one verdict"
    assert f"Model: {result['model']}" in details and "/" not in result["model"]
    table = [line.strip("|").split("|") for line in details.splitlines() if line.startswith("| cow")]
    for row, cells in zip(result["photos"], table, strict=True):  # each photo's own numbers, in order
        assert [c.strip() for c in cells] == [row["file"], advice.name(row["verdict"])] + [
            f"{advice.whole_percent(v):.0%}" for v in row["probabilities"].values()
        ]


def test_the_chart_and_the_table_show_one_set_of_numbers(
    app: ModuleType, client: Client, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the committed model (a gate, three triage labels): a noise picture, a cattle-coloured texture and a dot;
    whatever each is answered, the chart's numbers are its table row's, a picture turned away shows no triage and a
    picture refused before the model no number."""
    monkeypatch.setattr(app.triage, "CLASSIFIER", models.PerRequestClassifier(model_id=models.DEFAULT_MODEL_ID))
    rng = np.random.default_rng(4)
    hide = tmp_path / "hide.jpg"
    Image.fromarray(np.clip(rng.normal((120, 80, 50), 25, (240, 320, 3)), 0, 255).astype(np.uint8)).save(hide)
    dot = tmp_path / "dot.png"
    Image.new("RGB", (1, 1), (120, 80, 50)).save(dot)
    for path in (files["photo"], hide, dot):
        verdict, chart, details = client.predict(handle_file(path), api_name="/classify")
        lines = [line.strip("|").split("|") for line in details.splitlines() if line.startswith("|")]
        header, row = [c.strip() for c in lines[0]], [c.strip() for c in lines[2]]
        shown = {k: v for k, v in zip(header[2:], row[2:], strict=True) if v != "—"}
        confidences = (chart or {}).get("confidences") or []
        assert {c["label"]: f"{c['confidence']:.0%}" for c in confidences} == shown, details
        assert details.startswith(f"### {verdict['label']}")
        if row[1] == "not a cattle photo":
            assert set(shown) <= {"cattle"}, "no triage numbers for a picture turned away"
        if row[1] == "photo cannot be used":
            assert shown == {}, "no number at all for a picture refused before the model looked"
    assert verdict["label"] == "Photo cannot be used: it is only 1×1 pixels — send the original photo from the camera"


ONE_FILE = "photo must be one file sent as handle_file(path), which uploads it, not "
FILES = "more_photos must be a list of files sent as [handle_file(path), ...], not "
META = {"_type": "gradio.FileData"}
WRONG_SHAPES: dict[str, tuple[Callable[[dict[str, Path]], tuple[object, ...]], str | dict[str, str]]] = {
    "no photo": (lambda f: (None,), "No image: upload a photo of the animal"),
    "a path as a string": (lambda f: ("/no/such/cow.jpg",), ONE_FILE + "a string."),
    "a dict without its path": (lambda f: ({"meta": META},), ONE_FILE + "a dict without its path."),
    "a list for one photo": (lambda f: ([handle_file(f["photo"])],), ONE_FILE + "a list."),
    "a number": (lambda f: (3,), ONE_FILE + "a number."),
    "more_photos a number": (lambda f: (handle_file(f["photo"]), 5), FILES + "a number."),
    "more_photos with a path": (lambda f: (handle_file(f["photo"]), ["cow.jpg"]), FILES + "a list holding a string."),
    "more_photos holding None": (lambda f: (handle_file(f["photo"]), [None]), FILES + "a list holding nothing."),
    "not an image": (
        lambda f: (handle_file(f["not_pdf"]),),
        {"/classify": "Invalid file type", "/classify_json": "notes.pdf is not an image that can be read"},
    ),
}  # fmt: skip


@pytest.mark.parametrize("api_name", ["/classify", "/classify_json"])
@pytest.mark.parametrize("shape", list(WRONG_SHAPES))
def test_a_wrongly_shaped_call_gets_one_sentence(
    client: Client, files: dict[str, Path], api_name: str, shape: str
) -> None:
    """What a program might send instead of (photo, more_photos): Gradio refused most of these before the handler
    with ``{"error": null}``, which gradio_client reports as an "upstream exception"."""
    make, expected = WRONG_SHAPES[shape]
    message = _error(client, *make(files), api_name=api_name)
    assert (expected if isinstance(expected, str) else expected[api_name]) in message
    assert "upstream" not in message and "Traceback" not in message and "\n" not in message, message


@pytest.mark.parametrize("api_name", ["/classify", "/classify_json"])
def test_an_empty_more_photos_is_no_more_photos(client: Client, files: dict[str, Path], api_name: str) -> None:
    assert client.predict(handle_file(files["photo"]), [], api_name=api_name)


def _raw_call(app: ModuleType, api_name: str, data: list[object]) -> str:
    """``data`` posted as it is (gradio_client uploads files and fills every value first): the event's last lines."""
    base = app.demo.local_url.rstrip("/") + "/gradio_api/call/" + api_name
    event = httpx.post(base, json={"data": data}, timeout=30).json()["event_id"]
    return httpx.get(f"{base}/{event}", timeout=30).text


@pytest.mark.parametrize("api_name", ["classify", "classify_json"])
def test_raw_calls_of_the_wrong_shape_get_one_sentence(app: ModuleType, files: dict[str, Path], api_name: str) -> None:
    """Shapes only a hand-written request sends: too few values, a file never uploaded, and a bare ``{"path": …}``,
    which Gradio does not take for a file, so a ``gr.api`` handler would have opened that path on the server."""
    server_file = {"path": str(files["photo"]), "meta": META}  # a path on the server, never uploaded
    cases = {
        "too few values": ([], f"/{api_name} takes 3 values (photo, more_photos, animal), not 0"),
        "a file never uploaded": ([server_file, None], f"/{api_name}: a file in the request was never uploaded here"),
        "a bare path": ([{"path": str(files["photo"])}, None], ONE_FILE + "a dict without handle_file's meta."),
    }
    for data, expected in cases.values():
        answer = _raw_call(app, api_name, data)
        assert "event: error" in answer and expected in answer, answer
    assert '"error": null' not in answer


def test_classify_errors_keep_the_server_serving(client: Client, files: dict[str, Path]) -> None:
    assert "No image" in _error(client, None, api_name="/classify")
    assert "fake.jpg is not an image" in _error(client, handle_file(files["fake_jpg"]), api_name="/classify")
    assert "Invalid file type" in _error(client, handle_file(files["not_pdf"]), api_name="/classify")
    _still_serving(client, files)


def test_unloadable_model_says_how_to_fix_it(
    app: ModuleType, client: Client, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import models

    monkeypatch.setattr(app.triage, "CLASSIFIER", models.PerRequestClassifier(model_id=str(tmp_path / "missing-model")))
    message = _error(client, handle_file(files["photo"]), api_name="/classify")
    assert "could not be loaded" in message
    assert "MODEL_ID=" in message
    monkeypatch.undo()
    _still_serving(client, files)


def test_resident_policy_loads_once(
    app: ModuleType, client: Client, files: dict[str, Path], app_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import models

    monkeypatch.setattr(app.triage, "CLASSIFIER", models.make_classifier(policy="resident", model_id=str(app_model)))
    loads = models.STATS.loads
    first = client.predict(handle_file(files["photo"]), api_name="/classify")
    second = client.predict(handle_file(files["photo"]), api_name="/classify")
    assert first == second
    assert models.STATS.loads == loads
    assert models.STATS.last_model() is not None


def _manifest(zip_path: str) -> list[dict[str, str]]:
    with zipfile.ZipFile(zip_path) as archive:
        return list(csv.DictReader(io.TextIOWrapper(archive.open("manifest.csv"), encoding="utf-8")))


def test_pdf_to_dataset(client: Client, files: dict[str, Path]) -> None:
    zip_path, summary, chart, gallery, rejected, report, not_written = client.predict(
        pdfs=[handle_file(files["pdf"])],  # sigma pinned: a noise picture vs a few text lines is its textbook case
        threshold="40",
        size=256,
        filter_name="sigma",
        fit="square",
        api_name="/pdf_to_dataset",
    )

    assert Path(zip_path).name == "gazette_dataset.zip"
    with zipfile.ZipFile(zip_path) as archive:
        jpgs = [n for n in archive.namelist() if n.endswith(".jpg")]
        with archive.open(jpgs[0]) as handle, Image.open(handle) as image:
            assert image.size == (256, 256)
    assert [(r["page"], r["kept"]) for r in _manifest(zip_path)] == [("1", "true"), ("2", "false")]
    assert jpgs == ["gazette_p0001.jpg"]
    assert summary.startswith("2 pages seen, 1 kept")
    assert "gazette.pdf: 2 pages, 1 kept (1 image), no errors" in summary.splitlines()
    assert len(gallery) == 1
    assert "<svg" in chart and "threshold 40" in chart
    assert len(rejected) == 1 and "p2" in rejected[0]["caption"]
    assert report.startswith("<iframe") and "Dataset report" in report and "threshold 40" in report
    assert not not_written and "Kept pictures not written" in report


def test_one_file_where_a_list_goes_is_a_list_of_one(client: Client, files: dict[str, Path]) -> None:
    """The first release's ``/pdf_to_dataset`` took one file; a program still sending one gets its dataset (it got
    Gradio's "upstream exception"), and more_photos takes one file the same way."""
    zip_path, summary, *_ = client.predict(handle_file(files["pdf"]), api_name="/pdf_to_dataset")
    assert Path(zip_path).name == "gazette_dataset.zip"
    assert [r["page"] for r in _manifest(zip_path)] == ["1", "2"] and summary.startswith("2 pages seen")
    photo, more = handle_file(files["photo"]), handle_file(files["photo2"])
    rows = client.predict(photo, more, api_name="/classify_json")["photos"]
    assert [row["file"] for row in rows] == ["cow.jpg", "cow2.png"]
    _, _, details = client.predict(photo, more, api_name="/classify")
    assert len([line for line in details.splitlines() if line.startswith("| cow")]) == 2, details


def test_the_smallest_picture_side_decides_what_is_written(client: Client, tmp_path: Path) -> None:
    """Above the kept picture's shorter side it is shown as not written, with why; lowered, it is written."""
    pdf = pdf_from_images(tmp_path / "cut.pdf", [mixed_page(800, 1100, seed=1)])
    zip_path, summary, _, kept, _, report, not_written = client.predict(
        [handle_file(pdf)], crop="always", min_side=1024, api_name="/pdf_to_dataset"
    )
    assert [(r["kept"], r["outputs"], r["too_small"]) for r in _manifest(zip_path)] == [
        ("true", "", "cut_p0001_r1.jpg")
    ]
    assert not kept
    assert "Kept but not written: 1 picture too small (shorter side below “Smallest picture side” 1024 px" in summary
    (dropped,) = not_written
    assert dropped["caption"].startswith("cut.pdf p1 r1 · too small: ")
    assert dropped["caption"].endswith(" px < min side 1024")
    with Image.open(dropped["image"]) as thumbnail:
        assert max(thumbnail.size) == 200
    assert "1 picture kept by the judge was not written" in report

    zip_path, summary, _, kept, _, _, not_written = client.predict(
        [handle_file(pdf)], crop="always", min_side=256, api_name="/pdf_to_dataset"
    )
    assert [r["outputs"] for r in _manifest(zip_path)] == ["cut_p0001_r1.jpg"]
    assert len(kept) == 1 and not not_written and "not written" not in summary


def test_pdf_to_dataset_defaults_are_the_clis(client: Client, tmp_path: Path) -> None:
    """A run with every control left alone writes the same dataset as the CLI's defaults, byte for byte, on pages
    where each default shows: a picture under half of its page (crop auto), not square (bucket fit, size), its
    legend in the text layer (caption), the same page again (dedupe)."""
    from pipeline import run

    pdf = pdf_from_images(tmp_path / "plates.pdf", [mixed_page(1200, 1650, seed=1)] * 2)
    with pymupdf.open(pdf) as doc:
        for page in doc:
            page.insert_text((120, page.rect.height / 2 + 16), "THE SPRING FASHIONS", fontsize=10, render_mode=3)
        doc.saveIncr()
    zip_path, _, chart, *_ = client.predict([handle_file(pdf)], api_name="/pdf_to_dataset")
    cli = run([pdf], tmp_path / "cli.zip", Options())
    assert "threshold 0.5" in chart  # the structure judge's own threshold, not 0
    with zipfile.ZipFile(zip_path) as space, zipfile.ZipFile(cli.output) as reference:
        names = sorted(n for n in reference.namelist() if n.endswith((".jpg", ".txt", ".csv")))
        assert sorted(n for n in space.namelist() if n.endswith((".jpg", ".txt", ".csv"))) == names
        assert names == ["manifest.csv", "plates_p0001_r1.jpg", "plates_p0001_r1.txt"], "a region, its twin dropped"
        caption = space.read("plates_p0001_r1.txt")  # the picture's kind, then its legend
        assert caption.startswith(b"monochrome ") and caption.endswith(b", the spring fashions"), caption
        with Image.open(space.open("plates_p0001_r1.jpg")) as image:
            assert image.size == (960, 640)  # its own 1009×710 px: cropped to the nearest bucket's aspect, steps of 64
        assert all(space.read(name) == reference.read(name) for name in names)


def test_options_reach_the_run(client: Client, tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "plate.pdf", [mixed_page(1200, 1650, seed=1)] * 2)
    zip_path, _, *_ = client.predict(
        [handle_file(pdf)], crop="always", trigger="vestnik mody", caption="{trigger}, plate", dedupe=-1,
        api_name="/pdf_to_dataset",
    )  # fmt: skip
    rows = _manifest(zip_path)
    assert [r["kept"] for r in rows] == ["true", "true"]
    assert all("_r1" in r["outputs"] for r in rows), "crop writes regions"
    assert not any(r["duplicates"] for r in rows), "dedupe -1 keeps the identical second page"
    with zipfile.ZipFile(zip_path) as archive:
        assert archive.read(rows[0]["outputs"].split(";")[0][:-4] + ".txt").decode() == "vestnik mody, plate"


def test_several_pdfs_and_a_zip_are_one_run(client: Client, files: dict[str, Path], tmp_path: Path) -> None:
    pictures = pdf_from_images(tmp_path / "plates.pdf", [mixed_page(1200, 1650, seed=1)])
    text = pdf_from_images(tmp_path / "columns.pdf", [text_page(seed=2)])
    bundle = tmp_path / "issues.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.write(files["pdf"], "1890/gazette.pdf")
        archive.write(files["not_pdf"], "1891/notes.pdf")
        archive.writestr("readme.txt", "not a PDF, ignored")

    zip_path, summary, *_ = client.predict(
        [handle_file(pictures), handle_file(text), handle_file(bundle)], api_name="/pdf_to_dataset"
    )
    assert Path(zip_path).name == "plates_and_2_more_dataset.zip"
    rows = _manifest(zip_path)
    assert [(r["source"], r["page"]) for r in rows] == [
        ("plates.pdf", "1"),
        ("columns.pdf", "1"),
        ("gazette.pdf", "1"),
        ("gazette.pdf", "2"),
        ("notes.pdf", ""),
    ]
    lines = summary.splitlines()
    assert lines[0].startswith("4 pages seen, ")
    assert "plates.pdf: 1 page, 1 kept (1 image), no errors" in lines
    assert "columns.pdf: 1 page, 0 kept (0 images), no errors" in lines
    assert any(line.startswith("issues.zip › 1890/gazette.pdf: 2 pages") for line in lines)
    assert any(line.startswith("issues.zip › 1891/notes.pdf: skipped (notes.pdf: not a PDF") for line in lines)


def test_unusable_uploads_are_each_named(client: Client, files: dict[str, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("readme.txt", "no PDF here")
    fake = tmp_path / "fake.zip"
    fake.write_text("not a zip")
    message = _error(
        client, [handle_file(files["not_pdf"]), handle_file(empty), handle_file(fake)], api_name="/pdf_to_dataset"
    )
    assert "notes.pdf: not a PDF" in message
    assert "empty.zip: the zip holds no PDF" in message
    assert "fake.zip: not a zip archive" in message


def test_a_bad_threshold_is_explained(client: Client, files: dict[str, Path]) -> None:
    message = _error(client, [handle_file(files["pdf"])], "high", api_name="/pdf_to_dataset")
    assert "threshold must be a number" in message and "'high'" in message


@pytest.mark.parametrize(
    ("name", "expected"),
    [("not_pdf", "notes.pdf: not a PDF"), ("encrypted", "locked.pdf: encrypted"), ("broken", "broken.pdf: not a PDF")],
)
def test_pdf_errors_keep_the_server_serving(client: Client, files: dict[str, Path], name: str, expected: str) -> None:
    assert expected in _error(client, [handle_file(files[name])], api_name="/pdf_to_dataset")
    _still_serving(client, files)


def test_no_pdf(client: Client, files: dict[str, Path]) -> None:
    assert "No PDF" in _error(client, None, api_name="/pdf_to_dataset")
    assert "Invalid file type" in _error(client, [handle_file(files["photo"])], api_name="/pdf_to_dataset")
    _still_serving(client, files)


def test_over_max_file_size(app: ModuleType, client: Client, files: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="exceeds the maximum file size of 1048576 bytes"):
        client.predict([handle_file(files["huge_pdf"])], api_name="/pdf_to_dataset")
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

    job = app.dataset.pdf_to_dataset([str(files["pdf"])], size=256, progress=progress)
    running = []  # the statuses until the zip, each once (a page slower than HEARTBEAT_S repeats the last one)
    while (update := next(job))[0] is None:
        running += [update[1]] if update[1] not in running else []
    zip_path = update[0]
    assert calls == [(1, 2), (2, 2)]
    assert running == [
        "Reading 1 PDF…",
        "Page 1/2, 0 kept · gazette.pdf p1",
        "Page 2/2, 0 kept · gazette.pdf p2",
    ]
    assert zipfile.is_zipfile(zip_path)
    with pytest.raises(StopIteration):
        next(job)  # once Gradio has taken its copy of the zip, the job's own folder goes
    assert not Path(zip_path).exists()


def test_the_result_zip_is_stored_once(app: ModuleType, client: Client, files: dict[str, Path]) -> None:
    before = set(app.disk.WORK_ROOT.iterdir())
    zip_path, *_ = client.predict([handle_file(files["pdf"])], api_name="/pdf_to_dataset")
    assert zipfile.is_zipfile(zip_path)
    deadline = time.monotonic() + 5
    while set(app.disk.WORK_ROOT.iterdir()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(app.disk.WORK_ROOT.iterdir()) - before, "the job's folder is removed once the result is served"


def test_too_many_pages_are_refused_at_once(
    app: ModuleType, client: Client, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.settings, "MAX_PAGES", 1)
    message = _error(client, [handle_file(files["pdf"])], api_name="/pdf_to_dataset")
    assert "2 pages in all, more than the limit of 1 pages per run" in message


def test_a_job_over_its_time_budget_returns_what_it_did(
    app: ModuleType, client: Client, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.settings, "MAX_JOB_SECONDS", 0)
    zip_path, summary, *_ = client.predict([handle_file(files["pdf"])], api_name="/pdf_to_dataset")
    assert "Incomplete: stopped after the time budget of 0 s, 1 of 2 pages done." in summary
    assert [row["page"] for row in _manifest(zip_path)] == ["1"]


def test_a_full_disk_refuses_new_jobs(
    app: ModuleType, client: Client, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.settings, "MIN_FREE_DISK_MB", 2**40)
    assert "disk is nearly full" in _error(client, [handle_file(files["pdf"])], api_name="/pdf_to_dataset")


@pytest.fixture(scope="module")
def two_plates(client: Client, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    """A dataset the Space built from two pages with a picture each: its zip (as downloaded) and its images."""
    pages = [mixed_page(1000, 1400, seed=seed) for seed in (1, 2)]
    pdf = pdf_from_images(tmp_path_factory.mktemp("review") / "plates.pdf", pages, quality=50)
    zip_path, *_ = client.predict(
        [handle_file(pdf)], size=512, trigger="vstnkmd", min_side=256, api_name="/pdf_to_dataset"
    )
    return zip_path, [row["outputs"] for row in _manifest(zip_path)]


def test_review_dataset_gives_a_program_the_reviewed_zip(client: Client, two_plates: tuple[str, list[str]]) -> None:
    zip_path, (first, second) = two_plates
    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/review_dataset"]
    assert [(p["parameter_name"], p["parameter_default"]) for p in info["parameters"]] == [
        ("dataset", None), ("captions", None), ("drop", None), ("kohya_config", False), ("kohya_image_dir", ""),
        ("size", Options().size),
    ]  # fmt: skip
    reviewed, said = client.predict(
        handle_file(zip_path), {first: "vstnkmd, a plate\nof fashions"}, [second], True, size=512,
        api_name="/review_dataset",
    )  # fmt: skip
    assert Path(reviewed).name == "plates_dataset_reviewed.zip"
    assert said == "1 image (1 caption edited, 1 image left out), with kohya's dataset_config.toml."
    with zipfile.ZipFile(reviewed) as archive:
        assert [n for n in archive.namelist() if n.endswith((".jpg", ".txt"))] == [first, first[:-4] + ".txt"]
        assert archive.read(first[:-4] + ".txt") == b"vstnkmd, a plate of fashions"
        lines = archive.read("metadata.jsonl").decode().splitlines()
        assert [(line["file_name"], line["text"]) for line in map(json.loads, lines)] == [
            (first, "vstnkmd, a plate of fashions")
        ]
        config = tomllib.loads(archive.read("dataset_config.toml").decode())
    assert config["datasets"][0]["subsets"][0]["image_dir"] == "/data/plates_dataset_reviewed"
    assert config["general"]["resolution"] == 512
    rows = _manifest(reviewed)
    assert [(r["outputs"], r["review_dropped"], r["review_edited"]) for r in rows] == [
        (first, "", first),
        ("", second, ""),
    ]


def test_review_dataset_refusals_are_sentences(
    client: Client, files: dict[str, Path], two_plates: tuple[str, list[str]]
) -> None:
    zip_path, (first, _) = two_plates
    dataset = handle_file(zip_path)
    cases = [
        ((None,), "No dataset: send the zip /pdf_to_dataset returned, as handle_file(path)."),
        ((dataset, {first: " ,\n"}), f"The caption of {first} is empty: write one, or drop the image."),
        ((dataset, {"cow.jpg": "a cow"}), "cow.jpg is not an image of this dataset (2 images)."),
        ((dataset, None, None, True, "lora/plates"), "kohya's image folder must be an absolute path"),
        ((handle_file(files["not_pdf"]),), "notes.pdf is not a zip that can be read"),
        ((zip_path,), "dataset must be one file sent as handle_file(path), which uploads it, not a string."),
    ]
    for args, expected in cases:
        message = _error(client, *args, api_name="/review_dataset")
        assert expected in message and "\n" not in message and "Traceback" not in message, message
    _still_serving(client, files)


def test_the_pages_review_keeps_its_edits_and_says_when_the_zip_is_gone(
    app: ModuleType, two_plates: tuple[str, list[str]], tmp_path: Path
) -> None:
    """What the page's events run (the browser test drives them): page 1 of the run's zip, edits taken at Make, the
    run's size in kohya's config; a zip deleted after CACHE_MAX_AGE_S is said to be gone, in one sentence."""
    import gradio as gr

    dataset = Path(shutil.copy(two_plates[0], tmp_path / "plates_dataset.zip"))
    review, _, where, gallery, rows, _, folder = app.review.review_open(str(dataset), 768)
    assert where.startswith("Page 1 of 1: images 1–2 of 2") and len(gallery) == 2
    assert folder == "/data/plates_dataset_reviewed"
    rows[0][2], rows[1][1] = "a new caption", False
    _, reviewed, note, where, _ = app.review.review_download(review, rows, 1, True, "")
    assert note == "**plates_dataset_reviewed.zip**: 1 image (1 caption edited, 1 image left out), with kohya's " \
        "dataset_config.toml."  # fmt: skip
    assert where.endswith("1 caption edited, 1 image unticked so far")
    assert Path(reviewed).parent.parent == Path(app.demo.GRADIO_CACHE), "written where Gradio serves it: no copy"
    with zipfile.ZipFile(reviewed) as archive:
        assert tomllib.loads(archive.read("dataset_config.toml").decode())["general"]["resolution"] == 768
    dataset.unlink()
    turn, make = (
        (lambda: app.review.review_turn(review, rows, 1, 1)),
        (lambda: app.review.review_download(review, rows, 1, False, "")),
    )
    for event in (turn, make):
        with pytest.raises(gr.Error) as info:
            event()
        assert info.value.message == (
            "This dataset is no longer on the Space: results are deleted 30 minutes after they are made. Build it "
            "again (the review's changes were not kept)."
        )
    rows[0][2] = "  "
    with pytest.raises(gr.Error) as info:
        app.review.review_turn(review, rows, 1, 0)
    assert info.value.message.startswith("The caption of #1 plates_p0001_r1.jpg is empty: write one, or untick")


IN_TORCH = """
import os, runpy, threading, time, torch

def in_torch() -> None:  # a classification in flight, always inside torch (real ones are only part of the time)
    while not os.path.exists(os.environ["IN_TORCH"]):  # from when the test says, so as not to slow the start
        time.sleep(0.05)
    a = torch.rand(1500, 1500)
    while True:
        a @ a

threading.Thread(target=in_torch, daemon=True).start()
runpy.run_path("app.py", run_name="__main__")
"""


def _launch(tmp_path: Path, app_model: Path, code: str = "", **env: str) -> tuple[subprocess.Popen[bytes], str]:
    """``python app.py`` (or ``code`` that runs it) in its own process, its temporary files under ``tmp_path``, with
    ``env`` added; returns once it serves, with its URL."""
    port = str(free_port())
    env = {**os.environ, "TMPDIR": str(tmp_path), "MODEL_ID": str(app_model), **env}
    env |= {"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": port}
    command = [sys.executable, "-c", code] if code else [sys.executable, "app.py"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    return server, url


def test_sigterm_removes_the_work_folder(app_model: Path, files: dict[str, Path], tmp_path: Path) -> None:
    """SIGTERM while a thread is inside torch, as a classification in flight is: exit code 0, the work folder gone.
    ``sys.exit`` in the handler finalised the interpreter under that thread, which torch's C++ then aborted
    (SIGABRT, -6, after atexit had run): 3 runs of 3 here, 3 of 8 with two clients classifying 8 photos each."""
    in_torch = tmp_path / "in-torch"
    server, url = _launch(tmp_path, app_model, IN_TORCH, IN_TORCH=str(in_torch))
    assert list(tmp_path.glob("space-pdf-*")), "the app made its work folder"
    verdict, _, _ = Client(url, verbose=False).predict(handle_file(files["photo"]), api_name="/classify")
    assert verdict["label"].rsplit(" (", 1)[0] in LABELS.values()
    in_torch.touch()
    time.sleep(1)
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=30) == 0, server.stdout.read().decode()[-3000:]
    assert not list(tmp_path.glob("space-pdf-*")), "SIGTERM left the work folder behind"


def test_results_handed_to_the_page_are_deleted_after_cache_max_age(
    app_model: Path, files: dict[str, Path], tmp_path: Path
) -> None:
    """With ``CACHE_MAX_AGE_S=3`` (checked every second) the zip and gallery pictures a job handed to the page are
    gone seconds after the job. Its running updates skipped those outputs (``gr.skip()``), which gives the session
    Gradio's own copies of them, and ``delete_cache`` never sees what the copies are given: 20 gallery images
    (9.3 MB) had stayed on the Space past the age."""

    def served() -> list[str]:
        return sorted(p.name for p in (tmp_path / "gradio").rglob("*") if p.suffix in (".webp", ".zip"))

    server, url = _launch(tmp_path, app_model, CACHE_MAX_AGE_S="3")
    try:
        client = Client(url, verbose=False)
        zip_path, _, _, kept, rejected, _, _ = client.predict(
            [handle_file(files["pdf"])], threshold="40", filter_name="sigma", api_name="/pdf_to_dataset"
        )
        assert kept and rejected
        assert served() == ["gazette_dataset.zip"] + ["image.webp"] * (len(kept) + len(rejected))
        reviewed, _ = client.predict(handle_file(zip_path), api_name="/review_dataset")  # written into the cache
        assert Path(reviewed).name in served(), "the reviewed zip is served from where it was written"
        deadline = time.monotonic() + 20
        while served() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not served(), "Gradio kept what it served past CACHE_MAX_AGE_S"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_free_space_limits(app: ModuleType) -> None:
    assert app.demo.max_file_size == 2**20
    assert app.demo.delete_cache is not None
    assert app.demo._queue.max_size == 16
    limits = {fn.api_name: fn.concurrency_limit for fn in app.demo.fns.values() if fn.api_visibility == "public"}
    assert limits == {"classify": 2, "classify_json": 2, "pdf_to_dataset": 2, "review_dataset": 2}
    groups = {fn.api_name: fn.concurrency_id for fn in app.demo.fns.values() if fn.api_name in limits}
    assert groups["classify"] == groups["classify_json"] != groups["pdf_to_dataset"], "2 classifications in all"
    assert groups["review_dataset"] not in (groups["classify"], groups["pdf_to_dataset"])
    assert app.demo.delete_cache == (180, 1800)


def test_photo_limits_through_the_app(client: Client, files: dict[str, Path], tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    Image.new("RGB", (8000, 5001), (90, 120, 60)).save(big)  # 40.008 MP, a few KB: under the upload limit
    assert big.stat().st_size < 2**20
    assert "big.png is 8000x5001 pixels; resize it below 40 MP" in _error(
        client, handle_file(big), api_name="/classify"
    )
    nine = [handle_file(files["photo"])] * 8
    assert "Too many photos (9)" in _error(client, handle_file(files["photo"]), nine, api_name="/classify")
    _still_serving(client, files)


def test_a_job_removes_work_folders_left_for_over_an_hour(
    app: ModuleType, client: Client, files: dict[str, Path]
) -> None:
    """A job that ended abnormally leaves its folder; the next job removes it once it is older than
    ``WORK_MAX_AGE_S``, and leaves a younger one (a job still running) alone."""
    old, young = app.disk.WORK_ROOT / "abandoned", app.disk.WORK_ROOT / "running"
    for folder, age in ((old, app.settings.WORK_MAX_AGE_S + 60), (young, app.settings.WORK_MAX_AGE_S - 60)):
        (folder / "unpacked").mkdir(parents=True)
        os.utime(folder, (time.time() - age, time.time() - age))
    try:
        client.predict([handle_file(files["pdf"])], api_name="/pdf_to_dataset")
        assert not old.exists()
        assert (young / "unpacked").is_dir()
    finally:
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(young, ignore_errors=True)


@pytest.fixture(scope="module")
def fresh_app(app_model: Path) -> tuple[ModuleType, dict[str, dict[str, object]], int]:
    """app.py imported afresh (beside the launched one) with ``GPU_DURATION=7`` and ``MODEL_POLICY=resident``,
    ``spaces.GPU`` spied on: the module, what each function it decorated asked for, and the models loaded.

    Off ZeroGPU ``spaces.GPU`` hands the function back unchanged (on it, 0.51 wraps it in a handler marked
    ``zerogpu`` that needs a CUDA build of torch to be made), so the call itself is what can be observed here."""
    import spaces

    import models

    requests: dict[str, dict[str, object]] = {}
    real_gpu = spaces.GPU

    def gpu(task: Callable | None = None, **kwargs: object) -> Callable:
        def decorate(function: Callable) -> Callable:
            requests[function.__name__] = kwargs
            return real_gpu(function, **kwargs)

        return decorate(task) if callable(task) else decorate

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spaces, "GPU", gpu)
        patch.setenv("GPU_DURATION", "7")
        patch.setenv("MODEL_POLICY", "resident")
        patch.setenv("MODEL_ID", str(app_model))
        loads = models.STATS.loads
        launched = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "space"}
        try:  # space/ afresh too, for this app alone: the launched app keeps its own modules
            spec = importlib.util.spec_from_file_location("fresh_app", ROOT / "app.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        finally:
            for name in [name for name in sys.modules if name.split(".")[0] == "space"]:
                sys.modules.pop(name)
            sys.modules.update(launched)
    return module, requests, models.STATS.loads - loads


def test_only_the_classify_handlers_ask_for_a_gpu_for_gpu_duration(
    fresh_app: tuple[ModuleType, dict[str, dict[str, object]], int],
) -> None:
    """The PDF job runs on the CPU and must not take (and be charged for) a ZeroGPU slot, nor another animal's photos
    (no model judges them): only the cattle classifier's handler (``judged``, which both classify endpoints call for
    cattle) and the captioning model's call for a page (``describe``, when the owner sets ``CAPTIONER``) ask for one,
    each for its own duration."""
    module, requests, _ = fresh_app
    assert requests == {"judged": {"duration": 7}, "describe": {"duration": 30}}
    handlers = {fn.api_name: fn.fn for fn in module.demo.fns.values() if fn.api_name}
    triage = module.triage
    assert handlers["classify"] is triage.classify and handlers["classify_json"] is triage.classify_json
    assert handlers["pdf_to_dataset"] is module.dataset.pdf_to_dataset


def test_the_resident_policy_loads_the_model_at_import(
    fresh_app: tuple[ModuleType, dict[str, dict[str, object]], int],
) -> None:
    module, _, loads = fresh_app
    assert loads == 1
    assert module.triage.CLASSIFIER.policy == "resident"
    assert module.triage.CLASSIFIER.load_error is None


def test_the_owners_captioning_model_describes_each_written_image(
    client: Client, app: ModuleType, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``CAPTIONER`` set, the default template's ``{caption}`` holds what that model says of each written image
    (loaded and freed per page, inside ``describe``); a template without ``{caption}`` runs without asking it."""
    from test_captioner import save_tiny_captioner

    from models import captioner

    tiny = save_tiny_captioner(tmp_path / "tiny-captioner")
    monkeypatch.setattr(app.settings, "CAPTIONER", str(tiny))
    loads = captioner.STATS.loads
    pdf = [handle_file(files["pdf"])]
    zip_path, *_ = client.predict(pdf, "40", 256, "sigma", "square", api_name="/pdf_to_dataset")
    with zipfile.ZipFile(zip_path) as archive:
        image = archive.read("gazette_p0001.jpg")
        text = archive.read("gazette_p0001.txt").decode()
    said = captioner.caption_jpegs([image], str(tiny))[0]
    assert said and text.startswith(said + ", "), (said, text)
    assert captioner.STATS.loads == loads + 2 and captioner.STATS.offloads == captioner.STATS.loads
    client.predict(pdf, "40", 256, "sigma", "square", caption="{kind}", api_name="/pdf_to_dataset")
    assert captioner.STATS.loads == loads + 2


def test_the_animal_is_a_parameter_with_cattle_as_its_default(client: Client) -> None:
    """``animal`` came after programs called ``/classify``: it is optional, and a call without it means cattle."""
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for api_name in ("/classify", "/classify_json"):
        params = {p["parameter_name"]: p for p in endpoints[api_name]["parameters"]}
        assert params["animal"]["parameter_has_default"] and params["animal"]["parameter_default"] == "cattle"


@pytest.mark.parametrize("api_name", ["classify", "classify_json"])
def test_a_programs_call_without_the_animal_still_gets_a_cattle_verdict(
    app: ModuleType, files: dict[str, Path], api_name: str
) -> None:
    """A hand-written request of the shape sent before ``animal`` existed: two values, judged by the model."""
    base = app.demo.local_url.rstrip("/") + "/gradio_api/"
    with open(files["photo"], "rb") as handle:
        (uploaded,) = httpx.post(base + "upload", files={"files": ("cow.jpg", handle)}, timeout=30).json()
    photo = {"path": uploaded, "meta": META, "orig_name": "cow.jpg"}
    loads = models.STATS.loads
    answer = _raw_call(app, api_name, [photo, None])
    assert "event: complete" in answer, answer
    assert models.STATS.loads == loads + 1, "the model judged it"
    payload = json.loads(answer.split("data: ", 1)[1])
    if api_name == "classify_json":
        assert payload[0]["animal"] == "cattle" and payload[0]["verdict"] in LABELS.values()
    else:
        assert payload[0]["label"].rsplit(" (", 1)[0] in LABELS.values()


def test_a_goats_photos_get_no_cattle_verdict_but_the_species_advice_and_whom_to_call(
    client: Client, files: dict[str, Path]
) -> None:
    """Goats, sheep and pigs live beside the cattle and FMD is a disease of all of them: their photos get that
    species' notifiable signs and the contacts, never a cattle verdict, and no model is loaded for them."""
    loads = models.STATS.loads
    result = client.predict(
        handle_file(files["photo"]), [handle_file(files["photo2"])], "goat", api_name="/classify_json"
    )
    assert result["verdict"] == "other_animal" and result["animal"] == "goat_sheep" and result["model"] is None
    assert [p["verdict"] for p in result["photos"]] == ["other_animal"] * 2
    assert "Foot-and-mouth disease" in result["advice"] and "PPR" in result["advice"]
    verdict, scores, details = client.predict(handle_file(files["photo"]), None, "pig", api_name="/classify")
    assert verdict["label"].startswith("Pig: no verdict") and not scores.get("confidences")
    assert "African swine fever" in details and "Who to call" in details, details
    assert "Model:" not in details and "| photo |" not in details, "no table of answers the model did not give"
    assert models.STATS.loads == loads, "no model loaded for another animal's photos"


def test_an_unknown_animal_or_a_file_that_is_no_photo_is_one_sentence(
    client: Client, files: dict[str, Path], tmp_path: Path
) -> None:
    message = _error(client, handle_file(files["photo"]), None, "horsey", api_name="/classify_json")
    assert "Unknown animal horsey: choose one of cattle, goat_sheep, pig, other." in message
    (tmp_path / "notes.jpg").write_text("not a photo")
    message = _error(client, handle_file(tmp_path / "notes.jpg"), None, "goat_sheep", api_name="/classify")
    assert "notes.jpg is not an image that can be read" in message


def test_the_language_and_region_switches_go_through_the_queue(app: ModuleType) -> None:
    """Each switch words the case again and writes a fresh case report (a PDF): work the queue must count, with a
    limit of its own, not requests that bypass it (and no progress veil over the whole tab while it does)."""
    switches = [fn for fn in app.demo.fns.values() if fn.fn in (app.triage.relabel, app.triage.reword)]
    assert len(switches) == 2
    for fn in switches:
        assert fn.queue and fn.concurrency_id == "reword" and fn.concurrency_limit == 4
        assert fn.show_progress == "hidden"


def test_the_pdf_tabs_ocr_choice_reads_the_legend_or_skips_it(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The choice where the user pays for OCR: on (the CLI's default), a scanned plate's legend is in its caption and
    the summary says what OCR cost; off, neither (the job's process reads the packs from the server's environment)."""
    from test_ocr import MISSING, TESSDATA, scanned_plate

    if MISSING:
        pytest.skip(MISSING)
    monkeypatch.setenv("TESSDATA_PREFIX", str(TESSDATA))
    plate = scanned_plate(tmp_path / "plate.pdf", dpi=120)  # under the test app's 1 MB upload limit
    for ocr in (True, False):
        zip_path, summary, *_ = client.predict(
            [handle_file(plate)], caption="{words}", crop="never", ocr=ocr, api_name="/pdf_to_dataset"
        )
        with zipfile.ZipFile(zip_path) as archive:
            (caption,) = [archive.read(n).decode() for n in archive.namelist() if n.endswith(".txt")]
        assert ("PETERHOF" in caption.upper()) is ocr, caption
        assert ("OCR read 1 page" in summary) is ocr, summary
