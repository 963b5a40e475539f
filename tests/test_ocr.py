"""OCR where a page has no text layer: a scanned plate's printed legend reaches its caption; without Tesseract
(or a language pack) the run says so once and goes on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from factories import engraving

from pipeline import Options, run
from pipeline import ocr as ocr_module
from pipeline.cli import main
from pipeline.execution import Execution
from pipeline.ocr import DEFAULT_LANG, _unavailable, bands, read_words
from pipeline.scan import find_scan
from pipeline.writer import read_manifest

ROOT = Path(__file__).resolve().parents[1]
TESSERACT = shutil.which("tesseract") or "tesseract"
"""The real Tesseract, whatever ``$TESSERACT_CMD`` says (a test session may point it away for speed)."""
MISSING = _unavailable(TESSERACT, DEFAULT_LANG)
needs_tesseract = pytest.mark.skipif(bool(MISSING), reason=MISSING or "Tesseract is here")


@pytest.fixture(autouse=True)
def real_tesseract(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests run in this process (one worker) with the real Tesseract."""
    monkeypatch.setattr(ocr_module, "COMMAND", TESSERACT)


LEGEND = ("THE IMPERIAL PALACE", "AT PETERHOF")


def scanned_plate(path: Path, legend: tuple[str, ...] = LEGEND, dpi: int = 200, seed: int = 3) -> Path:
    """A page drawn with PyMuPDF, a picture in its upper half and its legend printed under it as vector text,
    then rasterised at ``dpi`` into an image-only PDF: the legend is in the pixels only, as on a scan."""
    drawn = pymupdf.open()
    page = drawn.new_page(width=432, height=576)  # 6 x 8 in
    picture = pymupdf.Rect(60, 60, 372, 300)
    pixmap = pymupdf.Pixmap(pymupdf.csGRAY, 624, 480, engraving(624, 480, seed).tobytes(), False)
    page.insert_image(picture, pixmap=pixmap)
    for line, text in enumerate(legend):
        page.insert_text((100, picture.y1 + 22 + 16 * line), text, fontsize=12, fontname="tiro")
    scan = page.get_pixmap(matrix=pymupdf.Matrix(dpi / 72, dpi / 72), colorspace=pymupdf.csGRAY)
    out = pymupdf.open()
    out.new_page(width=432, height=576).insert_image(pymupdf.Rect(0, 0, 432, 576), stream=scan.tobytes("png"))
    out.save(path)
    assert not out[0].get_text("words"), "no text layer: the legend is only in the pixels"
    return path


def captions(folder: Path) -> list[str]:
    return [json.loads(line)["text"] for line in (folder / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]


@needs_tesseract
def test_a_scanned_plates_printed_legend_reaches_its_caption(tmp_path: Path) -> None:
    pdf = scanned_plate(tmp_path / "plate.pdf")
    run([pdf], tmp_path / "out", Options(min_side=64), Execution(workers=1))
    (text,) = captions(tmp_path / "out")
    assert text == "monochrome line art, the imperial palace at peterhof"
    (name,) = read_manifest(tmp_path / "out")[0]["outputs"].split()
    assert (tmp_path / "out" / name.replace(".jpg", ".txt")).read_text(encoding="utf-8") == text


def cli(*args: object, tesseract: str = TESSERACT) -> subprocess.CompletedProcess:
    """``python -m pipeline ARGS`` in a process of its own, with ``tesseract`` as its Tesseract: worker processes
    take their environment from the forkserver that this test session may have started earlier."""
    env = {**os.environ, "TESSERACT_CMD": tesseract}
    command = [sys.executable, "-m", "pipeline", *map(str, args)]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@needs_tesseract
def test_a_drawn_pages_legend_is_read_in_worker_processes_too(tmp_path: Path) -> None:
    """A page MuPDF must draw (its picture does not cover it) is drawn at 300 dpi for OCR; the band must outlive
    the drawing's own array. It did not: under the workers' allocator settings (blocks of 4 MB and more unmapped
    when freed) the worker crashed and its pages were lost."""
    pdfs = []
    for seed in range(2):  # two files: a task each, one per worker
        with pymupdf.open(scanned_plate(tmp_path / f"plate{seed}.pdf", seed=seed)) as plate, pymupdf.open() as drawn:
            page = drawn.new_page(width=612, height=792)  # a full page at 300 dpi: 8.4 MB, above the workers' 4 MB
            page.insert_image(pymupdf.Rect(36, 36, 576, 756), pixmap=plate[0].get_pixmap(dpi=200, colorspace="gray"))
            assert find_scan(drawn[0]) is None and not drawn[0].get_text("words")
            drawn.save(tmp_path / f"drawn{seed}.pdf")
            pdfs.append(tmp_path / f"drawn{seed}.pdf")
    out = tmp_path / "out/"
    sigma = ["--filter", "sigma", "--threshold", "0", "--min-side", "64"]  # the whole page kept: one band, 8 MB
    done = cli(*pdfs, "-o", out, "--workers", "2", *sigma)
    assert done.returncode == 0, done.stderr
    assert [row["error"] for row in read_manifest(out)] == ["", ""]
    read = captions(out)  # the whole page is one band: a word or two of the engraving's hatching may come along
    assert len(read) == 2 and all(text.endswith("the imperial palace at peterhof") for text in read), read


@needs_tesseract
def test_the_band_around_the_picture_is_read_not_the_whole_page(tmp_path: Path) -> None:
    with pymupdf.open(
        scanned_plate(tmp_path / "plate.pdf", (*LEGEND, "", "", "", "", "", "", "", "PRINTED BY GAZETTE"))
    ) as doc:
        page, scan = doc[0], find_scan(doc[0])  # read from the scan, as the worker does
        box = (60 / 432, 60 / 576, 372 / 432, 300 / 576)
        assert "gazette" in read_words(page, (), scan=scan)
        assert read_words(page, [box], scan=scan) == "the imperial palace at peterhof"


def test_overlapping_bands_are_read_once() -> None:
    with pymupdf.open() as doc:
        page = doc.new_page(width=400, height=1000)
        assert bands(page) == [(0.0, 0.0, 1.0, 1.0)]
        near = bands(page, [(0.1, 0.10, 0.9, 0.30), (0.1, 0.33, 0.9, 0.5)])  # 15 mm margins meet
        assert len(near) == 1 and near[0][1] < 0.10 and near[0][3] > 0.5
        assert len(bands(page, [(0.1, 0.05, 0.9, 0.2), (0.1, 0.7, 0.9, 0.9)])) == 2


def test_no_ocr_reads_nothing_from_the_pixels(tmp_path: Path) -> None:
    run(
        [scanned_plate(tmp_path / "plate.pdf")], tmp_path / "out", Options(min_side=64, ocr=False), Execution(workers=1)
    )
    assert captions(tmp_path / "out") == ["monochrome line art"]


@pytest.mark.parametrize(
    ("setting", "said"),
    [({"COMMAND": "/nonexistent/tesseract"}, "Tesseract is not installed"), ({}, "no language pack for xx")],
)
def test_without_tesseract_or_a_language_pack_the_run_says_so_once_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], setting: dict, said: str
) -> None:
    for name, value in setting.items():
        monkeypatch.setattr(ocr_module, name, value)
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(2)]
    lang = ["--ocr-lang", "eng+xx"] if not setting else []
    code = main([*map(str, pdfs), "-o", str(tmp_path / "out/"), "--min-side", "64", "--workers", "1", *lang])
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("note: no OCR") == 1 and said in err, err
    rows = read_manifest(tmp_path / "out")
    assert [(row["error"], row["warning"]) for row in rows] == [("", ""), ("", "")]
    assert captions(tmp_path / "out") == ["monochrome line art"] * 2


def tesseract_answering(folder: Path, option: str, answer: str) -> Path:
    """A Tesseract in ``folder`` that runs the shell command ``answer`` when called with ``option`` alone, and is the
    real one otherwise: a user's install as the CLI sees it, without building one."""
    program = folder / "tesseract"
    program.write_text(f'#!/bin/sh\n[ "$1" = {option} ] && {{ {answer}; exit 0; }}\nexec {TESSERACT} "$@"\n')
    program.chmod(0o755)
    return program


@needs_tesseract
def test_default_packs_not_installed_are_said_once_and_the_installed_ones_read(tmp_path: Path) -> None:
    """A new user's Tesseract with three of the default set's five packs: every caption kept its words only
    after this (was: one note, OCR off for the whole run, every caption without a word). A set named with
    ``--ocr-lang`` is still read whole or not at all."""
    listing = tmp_path / "langs.txt"
    listing.write_text('List of available languages in "/x/" (4):\neng\nfra\ndeu\nosd\n')
    three = tesseract_answering(tmp_path, "--list-langs", f'cat "{listing}"')
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(2)]
    done = cli(*pdfs, "-o", tmp_path / "out/", "--min-side", "64", "--workers", "2", tesseract=str(three))
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:") and "OCR" in line]
    assert len(notes) == 1 and "OCR reads eng+fra+deu only" in notes[0] and "rus+frk" in notes[0], done.stderr
    assert captions(tmp_path / "out") == ["monochrome line art, the imperial palace at peterhof"] * 2
    forced = cli(*pdfs, "-o", tmp_path / "forced/", "--min-side", "64", "--ocr-lang", "eng+rus", tesseract=str(three))
    assert forced.returncode == 0 and forced.stderr.count("note: no OCR") == 1, forced.stderr
    assert captions(tmp_path / "forced") == ["monochrome line art"] * 2


@needs_tesseract
def test_a_tesseract_version_pytesseract_refuses_is_said_once_and_the_run_goes_on(tmp_path: Path) -> None:
    """pytesseract exits (``SystemExit``) on a Tesseract older than 3.05: the run must not end at its first page
    without a text layer. It did, with two workers: the CLI stopped with exit code 1 mid-run."""
    old = tesseract_answering(tmp_path, "--version", 'echo "tesseract 3.02"')
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(3)]
    done = cli(*pdfs, "-o", tmp_path / "out/", "--min-side", "64", "--workers", "2", tesseract=str(old))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("note: no OCR") == 1, done.stderr
    assert "tesseract 3.02" in done.stderr and "3.05 or newer" in done.stderr, done.stderr
    rows = read_manifest(tmp_path / "out")
    assert [(row["error"], row["warning"]) for row in rows] == [("", "")] * 3
    assert captions(tmp_path / "out") == ["monochrome line art"] * 3


def test_a_bad_language_argument_is_refused_before_the_run() -> None:
    with pytest.raises(ValueError, match="ocr_lang"):
        Options(ocr_lang="eng deu")


@needs_tesseract
@pytest.mark.parametrize("failure", ["TesseractError", "SystemExit"])
def test_a_tesseract_failure_costs_the_page_its_words_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """SystemExit is what pytesseract raises for a Tesseract version it refuses: a page's words, not the run."""
    import pytesseract

    def fail(*args: object, **kwargs: object) -> None:
        raise pytesseract.TesseractError(1, "simulated") if failure == "TesseractError" else SystemExit("simulated")

    monkeypatch.setattr(pytesseract, "image_to_data", fail)
    run([scanned_plate(tmp_path / "plate.pdf")], tmp_path / "out", Options(min_side=64), Execution(workers=1))
    (row,) = read_manifest(tmp_path / "out")
    assert row["error"] == "" and "OCR failed" in row["warning"] and "simulated" in row["warning"]
    assert captions(tmp_path / "out") == ["monochrome line art"]


def test_a_page_with_a_text_layer_there_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OCR only where the text layer has no word around the picture: its own words are better, and free."""
    pdf = scanned_plate(tmp_path / "plate.pdf")
    with pymupdf.open(pdf) as doc:
        doc[0].insert_text((100, 322), "THE WINTER PALACE", fontsize=12, render_mode=3)  # an invisible OCR layer
        doc.saveIncr()
    read: list[str] = []
    monkeypatch.setattr(ocr_module, "_tesseract", lambda pixels, lang: read.append(lang) or ([], set()))
    run([pdf], tmp_path / "out", Options(min_side=64), Execution(workers=1))
    assert captions(tmp_path / "out") == ["monochrome line art, the winter palace"] and read == []


def test_unsure_words_and_boxes_too_thin_for_their_letters_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Tesseract reads into hatching: words it is unsure of, or sure of in boxes no letters fit (``WW``
    11 px wide and 46 px tall); Fraktur's long s (``ſ``) is read as the ``s`` a caption needs."""
    import pytesseract

    rows = [  # text, confidence, line, width, height
        ("Der", 96, 1, 60, 30), ("Wald-", 91, 1, 100, 30), ("ſaum", 90, 2, 90, 30), ("Ee", 41, 2, 40, 30),
        ("WW", 81, 2, 11, 46), ("NUN", 66, 3, 23, 57), ("bey", 88, 3, 70, 32),
    ]  # fmt: skip
    data = {
        "text": [r[0] for r in rows], "conf": [r[1] for r in rows], "block_num": [1] * len(rows),
        "par_num": [1] * len(rows), "line_num": [r[2] for r in rows], "width": [r[3] for r in rows],
        "height": [r[4] for r in rows],
    }  # fmt: skip
    monkeypatch.setattr(pytesseract, "image_to_data", lambda *args, **kwargs: data)
    read, ends = ocr_module._tesseract(np.full((40, 40), 255, np.uint8), DEFAULT_LANG)
    assert read == ["Der", "Wald-", "saum", "bey"] and ends == {1, 2, 3}
    assert ocr_module.clean_words(read, ends) == "der waldsaum bey"


READING_FOREVER = """
import sys
import numpy as np
from pipeline import ocr
ocr.COMMAND = sys.argv[1]
band = np.full((400, 1200), 255, np.uint8)
band[100:140, 100:1100] = 0
print("reading", flush=True)
while True:
    ocr._tesseract(band, "eng")
"""


def _tesseract_files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("tess_*") if path.is_file()]


@needs_tesseract
def test_tesseracts_files_of_a_killed_worker_are_swept_by_the_next_one(tmp_path: Path) -> None:
    """pytesseract's temporary files go to the worker's run folder, not loose in TMPDIR: after a ``kill -9``
    mid-read they are in that folder (were: loose ``tess_*`` files, left for good), and the next process that reads
    a band removes it; a process that exits removes its own."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile
    import time

    scratch = Path(tempfile.mkdtemp(prefix="ocr-"))  # short: a Unix socket path under it must stay < 108 bytes
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        for _ in range(5):  # killed between two reads, it leaves nothing: try again
            command = [sys.executable, "-c", READING_FOREVER, TESSERACT]
            reader = subprocess.Popen(command, env=env, stdout=subprocess.PIPE)
            assert reader.stdout is not None and reader.stdout.readline().strip() == b"reading"
            give_up = time.monotonic() + 30
            while not _tesseract_files(scratch) and time.monotonic() < give_up:
                time.sleep(0.005)
            reader.send_signal(signal.SIGKILL)
            reader.wait()
            left = _tesseract_files(scratch)
            if left:
                break
        assert left, "the reader should have been killed while Tesseract's files existed"
        assert all(path.parent.name.startswith(f"pipeline-run-{reader.pid}-") for path in left), left
        once = READING_FOREVER.replace("while True:\n    ", "")
        subprocess.run([sys.executable, "-c", once, TESSERACT], env=env, check=True, capture_output=True)
        assert not list(scratch.iterdir()), list(scratch.rglob("*"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def scanned_text_page(path: Path, lines: int = 60) -> Path:
    """A letter-size page of dense type only in its pixels (rasterised at 200 dpi, no text layer)."""
    drawn = pymupdf.open()
    page = drawn.new_page(width=612, height=792)
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "near", "the", "river", "bank"]
    for line in range(lines):
        text = " ".join(words[(line + i) % len(words)] for i in range(12))
        page.insert_text((40, 40 + 12 * line), text, fontsize=10, fontname="tiro")
    scan = page.get_pixmap(matrix=pymupdf.Matrix(200 / 72, 200 / 72), colorspace=pymupdf.csGRAY)
    out = pymupdf.open()
    out.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792), stream=scan.tobytes("png"))
    out.save(path)
    return path


@needs_tesseract
def test_a_whole_page_of_type_is_read_only_until_a_caption_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole page (no picture boxes) is read top down and the reading stops at the caption's 40 words: a
    newspaper page read whole took Tesseract 235 s for them. Here: a third of the page's pixels at most."""
    from pipeline.words import MAX_WORDS

    read: list[int] = []
    tesseract = ocr_module._tesseract

    def counted(pixels: np.ndarray, lang: str) -> tuple[list[str], set[int]]:  # the real reader, counted
        read.append(pixels.size)
        return tesseract(pixels, lang)

    monkeypatch.setattr(ocr_module, "_tesseract", counted)
    with pymupdf.open(scanned_text_page(tmp_path / "text.pdf")) as doc:
        page = doc[0]
        words = read_words(page, (), "eng", find_scan(page))
        whole = round(page.rect.width * 300 / 72) * round(page.rect.height * 300 / 72)
    assert len(words.split()) == MAX_WORDS and words.startswith("the quick brown fox"), words
    assert sum(read) < whole / 3, f"{sum(read):,} of {whole:,} pixels read"
