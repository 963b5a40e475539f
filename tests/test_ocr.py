"""OCR where a page has no text layer: a scanned plate's printed legend reaches its caption; without Tesseract's
packs (or some of them) the run says so once and goes on; a crash inside Tesseract costs the task its words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from factories import engraving

from pipeline import Options, run, tesseract
from pipeline import ocr as ocr_module
from pipeline.cli import main
from pipeline.distributor import OCR_CRASHED
from pipeline.execution import Execution
from pipeline.ocr import DEFAULT_LANG, _narrowed, _Reading, bands, confident, read_words
from pipeline.render import render
from pipeline.scan import find_scan
from pipeline.tesseract import EngineFailed, Word
from pipeline.writer import read_manifest

ROOT = Path(__file__).resolve().parents[1]
TESSDATA = tesseract._tessdata(None)
"""The system's packs, whatever ``$TESSDATA_PREFIX`` says (the test session points it away for speed)."""


def _missing() -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TESSDATA_PREFIX", str(TESSDATA or "/nonexistent"))
        return tesseract.unavailable(DEFAULT_LANG)


MISSING = _missing()
needs_tesseract = pytest.mark.skipif(bool(MISSING), reason=MISSING or "Tesseract is here")


@pytest.fixture(autouse=True)
def real_tesseract(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests run in this process (one worker) with the system's packs."""
    monkeypatch.setenv("TESSDATA_PREFIX", str(TESSDATA or "/nonexistent"))


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
    summary = run([pdf], tmp_path / "out", Options(min_side=64), Execution(workers=1))
    assert summary.ocr_pages == 1 and summary.ocr_seconds > 0 and "OCR read 1 page in" in summary.describe()
    (text,) = captions(tmp_path / "out")
    assert text == "monochrome line art, the imperial palace at peterhof"
    (name,) = read_manifest(tmp_path / "out")[0]["outputs"].split()
    assert (tmp_path / "out" / name.replace(".jpg", ".txt")).read_text(encoding="utf-8") == text


def cli(*args: object, tessdata: Path | None = TESSDATA, **env: str) -> subprocess.CompletedProcess:
    """``python -m pipeline ARGS`` in a process of its own, reading ``tessdata``'s packs (and ``env`` added): worker
    processes take their environment from the forkserver that this test session may have started earlier."""
    env = {**os.environ, "TESSDATA_PREFIX": str(tessdata or "/nonexistent"), **env}
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
    assert "OCR read 2 pages in" in done.stdout.splitlines()[-1], done.stdout  # its cost, where the user decides
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
    summary = run(
        [scanned_plate(tmp_path / "plate.pdf")], tmp_path / "out", Options(min_side=64, ocr=False), Execution(workers=1)
    )
    assert summary.ocr_pages == 0 and "OCR" not in summary.describe()
    assert captions(tmp_path / "out") == ["monochrome line art"]


@pytest.mark.parametrize(
    ("setting", "said"),
    [({"TESSDATA_PREFIX": "/nonexistent"}, "no Tesseract language packs"), ({}, "no language pack for xx")],
)
def test_without_tesseract_or_a_language_pack_the_run_says_so_once_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], setting: dict, said: str
) -> None:
    for name, value in setting.items():
        monkeypatch.setenv(name, value)
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(2)]
    lang = ["--ocr-lang", "eng+xx"] if not setting else []
    code = main([*map(str, pdfs), "-o", str(tmp_path / "out/"), "--min-side", "64", "--workers", "1", *lang])
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("note: no OCR") == 1 and said in err, err
    rows = read_manifest(tmp_path / "out")
    assert [(row["error"], row["warning"]) for row in rows] == [("", ""), ("", "")]
    assert captions(tmp_path / "out") == ["monochrome line art"] * 2


def packs_folder(folder: Path, *names: str, broken: str = "") -> Path:
    """A folder of Tesseract packs holding only ``names`` (links to the system's) and ``broken`` (not a pack): a
    user's install as the CLI sees it, without building one."""
    folder.mkdir()
    for name in names:
        (folder / f"{name}.traineddata").symlink_to(TESSDATA / f"{name}.traineddata")
    if broken:
        (folder / f"{broken}.traineddata").write_bytes(bytes(range(256)) * 20)
    return folder


@needs_tesseract
def test_default_packs_not_installed_are_said_once_and_the_installed_ones_read(tmp_path: Path) -> None:
    """A new user's Tesseract with three of the default set's five packs: every caption kept its words only
    after this (was: one note, OCR off for the whole run, every caption without a word). A set named with
    ``--ocr-lang`` is still read whole or not at all."""
    three = packs_folder(tmp_path / "tessdata", "eng", "fra", "deu", "osd")
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(2)]
    done = cli(*pdfs, "-o", tmp_path / "out/", "--min-side", "64", "--workers", "2", tessdata=three)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:") and "OCR" in line]
    assert len(notes) == 1 and "OCR reads eng+fra+deu only" in notes[0] and "rus+frk" in notes[0], done.stderr
    assert captions(tmp_path / "out") == ["monochrome line art, the imperial palace at peterhof"] * 2
    forced = cli(*pdfs, "-o", tmp_path / "forced/", "--min-side", "64", "--ocr-lang", "eng+rus", tessdata=three)
    assert forced.returncode == 0 and forced.stderr.count("note: no OCR") == 1, forced.stderr
    assert captions(tmp_path / "forced") == ["monochrome line art"] * 2


@needs_tesseract
def test_a_pack_tesseract_cannot_load_costs_the_pages_their_words_and_says_why(tmp_path: Path) -> None:
    """A damaged pack (a download cut short): Tesseract does not start; each page says so, the run goes on, with
    two workers as with one."""
    damaged = packs_folder(tmp_path / "tessdata", broken="eng")
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(3)]
    done = cli(*pdfs, "-o", tmp_path / "out/", "--min-side", "64", "--workers", "2", "--ocr-lang", "eng",
               tessdata=damaged)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = read_manifest(tmp_path / "out")
    assert [row["error"] for row in rows] == [""] * 3
    assert all("OCR failed" in row["warning"] and "does not start with eng" in row["warning"] for row in rows), rows
    assert captions(tmp_path / "out") == ["monochrome line art"] * 3


CRASHING_TESSERACT = """
import os, signal
from pipeline import tesseract
def crash(self, pixels):
    os.kill(os.getpid(), signal.SIGSEGV)
tesseract.Engine.read = crash
"""


@needs_tesseract
def test_a_crash_inside_tesseract_costs_the_pages_their_words_not_the_run(tmp_path: Path) -> None:
    """Tesseract runs in the worker's own process now: a segfault inside it kills the worker. The task is run
    again without OCR: its pictures are written, its rows say why they have no words, the other files are whole."""
    site = tmp_path / "site"
    site.mkdir()  # every Python process of the run (forkserver, workers) starts with Tesseract crashing
    (site / "sitecustomize.py").write_text(CRASHING_TESSERACT)
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(2)]
    with pymupdf.open(pdfs[1]) as doc:  # its legend in a text layer: no OCR there, nothing to crash
        doc[0].insert_text((100, 322), "THE WINTER PALACE", fontsize=12, render_mode=3)
        doc.saveIncr()
    done = cli(*pdfs, "-o", tmp_path / "out/", "--min-side", "64", "--workers", "2", PYTHONPATH=f"{site}:{ROOT}")
    assert done.returncode == 0, done.stderr
    rows = {row["source"]: row for row in read_manifest(tmp_path / "out")}
    assert rows["plate0.pdf"]["error"] == "" and OCR_CRASHED in rows["plate0.pdf"]["warning"], rows
    assert rows["plate0.pdf"]["outputs"] and rows["plate1.pdf"]["warning"] == "", rows
    assert sorted(captions(tmp_path / "out")) == ["monochrome line art", "monochrome line art, the winter palace"]


COUNTING_ENGINES = """
import os
from pipeline import tesseract
start = tesseract.Engine.__init__
def counted(self, lang):
    with open(os.environ["ENGINES_LOG"], "a") as log:
        log.write(f"{os.getpid()} {lang}\\n")
    start(self, lang)
tesseract.Engine.__init__ = counted
"""


@needs_tesseract
def test_the_workers_fork_with_tesseract_loaded(tmp_path: Path) -> None:
    """Tesseract starts once, in the workers' forkserver, not in each worker: the workers share its packs' pages
    (~60 MB for the default five) and none waits 0.3 s for it at its first page without a text layer."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(COUNTING_ENGINES)
    log = tmp_path / "engines.log"
    pdfs = [scanned_plate(tmp_path / f"plate{i}.pdf", seed=i) for i in range(4)]  # tasks for both workers
    done = cli(*pdfs, "-o", tmp_path / "out/", "--min-side", "64", "--workers", "2", "--ocr-lang", "eng",
               "--dedupe", "-1", PYTHONPATH=f"{site}:{ROOT}", ENGINES_LOG=str(log))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert captions(tmp_path / "out") == ["monochrome line art, the imperial palace at peterhof"] * 4
    started = log.read_text().splitlines()
    assert len(started) == 1 and started[0].endswith(" eng"), started


READING_HATCHING = """
import sys
from pathlib import Path
import pymupdf
from pipeline import tesseract
from pipeline.render import render
from pipeline.scan import find_scan
with pymupdf.open(sys.argv[1]) as doc:
    for top in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4):  # strips of the engraving alone
        band = render(doc[0], 300 / 72, "gray", (0.13, top, 0.88, top + 0.08), find_scan(doc[0]))
        tesseract.engine("eng").read(band)
print("read")
"""


@needs_tesseract
def test_leptonicas_own_messages_do_not_reach_the_user(tmp_path: Path) -> None:
    """Tesseract's image library prints its errors to stderr: two dozen lines (``Error in pixScanForForeground:
    invalid box``) for six strips of an engraving, and nothing the run must act on."""
    env = {**os.environ, "TESSDATA_PREFIX": str(TESSDATA), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", READING_HATCHING, str(scanned_plate(tmp_path / "plate.pdf"))]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "read" and "Error in" not in done.stderr, done.stderr


def test_a_bad_language_argument_is_refused_before_the_run() -> None:
    with pytest.raises(ValueError, match="ocr_lang"):
        Options(ocr_lang="eng deu")


@needs_tesseract
def test_a_tesseract_failure_costs_the_page_its_words_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(self: tesseract.Engine, pixels: np.ndarray) -> list[Word]:
        raise EngineFailed("simulated")

    monkeypatch.setattr(tesseract.Engine, "read", fail)
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
    monkeypatch.setattr(tesseract.Engine, "read", lambda self, pixels: read.append(self.lang) or [])
    run([pdf], tmp_path / "out", Options(min_side=64), Execution(workers=1))
    assert captions(tmp_path / "out") == ["monochrome line art, the winter palace"] and read == []


def test_unsure_words_and_boxes_too_thin_for_their_letters_are_dropped() -> None:
    """What Tesseract reads into hatching: words it is unsure of, or sure of in boxes no letters fit (``WW``
    11 px wide and 46 px tall); Fraktur's long s (``ſ``) is read as the ``s`` a caption needs; a line whose last
    word is dropped still ends at its last word kept."""
    rows = [  # text, confidence, width, height, line end
        ("Der", 96, 60, 30, False), ("Wald-", 91, 100, 30, True), ("ſaum", 90, 90, 30, False),
        ("Ee", 41, 40, 30, False), ("WW", 81, 11, 46, True), ("NUN", 66, 23, 57, False), ("bey", 88, 70, 32, True),
    ]  # fmt: skip
    kept = confident([Word(text, conf, width, height, end, "deu") for text, conf, width, height, end in rows])
    assert [word.text for word in kept] == ["Der", "Wald-", "saum", "bey"]
    assert [word.line_end for word in kept] == [False, True, True, True]
    assert ocr_module.clean_words([word.text for word in kept], {1, 2, 3}) == "der waldsaum bey"


def test_the_default_packs_are_narrowed_to_those_that_read_the_pages_first_words() -> None:
    """Five packs read a band about four times slower than one: an English page's first words (the other packs
    read names and short words: 4-15 % each) leave English; a German book in Fraktur its two German packs, the one
    that read most first (Tesseract's main pack)."""
    assert _narrowed(Counter(eng=146, fra=41, deu=37, frk=31, rus=11), DEFAULT_LANG) == "eng"
    assert _narrowed(Counter(frk=32, deu=18, rus=4, fra=2, eng=1), DEFAULT_LANG) == "frk+deu"
    assert _narrowed(Counter(xx=40), "eng+deu") == "eng+deu", "only packs it was reading"


@needs_tesseract
def test_a_page_is_read_with_its_own_packs_after_its_first_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reading of the default set narrows to the packs that read its first words; a set named with ``--ocr-lang``
    is read whole."""
    langs = recorded_langs(monkeypatch)
    with pymupdf.open(scanned_text_page(tmp_path / "text.pdf")) as doc:
        page, scan = doc[0], find_scan(doc[0])
        reading = _Reading(DEFAULT_LANG, narrow=True)
        reading.read(render(page, 300 / 72, "gray", (0.0, 0.0, 1.0, 0.25), scan))  # ~15 lines of type
        assert reading.lang == "eng" and langs == [DEFAULT_LANG], (reading.lang, langs)
        reading.read(render(page, 300 / 72, "gray", (0.0, 0.25, 1.0, 0.3), scan))
        assert langs[-1] == "eng"
        langs.clear()
        read_words(page, (), "eng+deu", scan)
        assert set(langs) == {"eng+deu"}


@needs_tesseract
def test_a_documents_packs_are_found_once_on_its_first_pages_without_a_text_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five packs read a band about four times slower than one: the default set is narrowed once per document, on
    its first lines that need OCR (a page with a text layer says nothing of the packs), and every page of it is read
    with those from its first band. Always the same pages decide, so a page's words do not depend on which pages
    its worker read before."""
    langs = recorded_langs(monkeypatch)
    path = text_document(tmp_path / "doc.pdf", [("layer", FOX), ("scan", FOX), ("scan", FOX)])
    with pymupdf.open(path) as doc:
        last = read_words(doc[2], (), DEFAULT_LANG, find_scan(doc[2]), narrow=True)
        assert langs[0] == DEFAULT_LANG and set(langs[1:]) == {"eng"}, langs  # the probe, then page 3 itself
        probed = len(langs)
        langs.clear()
        assert read_words(doc[1], (), DEFAULT_LANG, find_scan(doc[1]), narrow=True).startswith("the quick brown")
        assert set(langs) == {"eng"}, "found once per document"
    ocr_module._probed.clear()  # another worker, which reads page 3 first
    langs.clear()
    with pymupdf.open(path) as doc:
        assert read_words(doc[2], (), DEFAULT_LANG, find_scan(doc[2]), narrow=True) == last
        assert len(langs) == probed


@needs_tesseract
def test_a_page_in_another_script_than_its_documents_first_lines_is_read_with_every_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An English document with a page in Russian: read with ``eng``, Tesseract is sure of 12 % of its words, so
    the page is read again with all five packs (and narrowed on its own words), not captioned in Latin garbage."""
    langs = recorded_langs(monkeypatch)
    path = text_document(tmp_path / "doc.pdf", [("scan", FOX), ("scan", RUSSIAN)])
    with pymupdf.open(path) as doc:
        words = read_words(doc[1], (), DEFAULT_LANG, find_scan(doc[1]), narrow=True)
    again = langs.index(DEFAULT_LANG, 1)  # the probe (page 1), then page 2 with ``eng`` until it was found wrong
    assert langs[0] == DEFAULT_LANG and set(langs[1:again]) == {"eng"} and langs[-1] == "rus", langs
    assert {"съешь", "французских", "булок"} <= set(words.split()), words


@needs_tesseract
def test_a_page_no_pack_reads_is_checked_once_with_every_pack_and_read_on_with_the_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full-page engraving read top down gives Tesseract's unsure marks in every pack: one strip read with all five
    tells that no pack is surer (no other script), and the page goes on with the document's packs, not all over
    again with five (a spread of pictures took 2.8 s so, 1.1 s without)."""
    langs = recorded_langs(monkeypatch)
    path = text_document(tmp_path / "doc.pdf", [("scan", FOX)])
    with pymupdf.open(path) as doc:
        page = doc.new_page(width=612, height=792)
        plate = pymupdf.Pixmap(pymupdf.csGRAY, 1700, 1100, engraving(1700, 1100, 5).tobytes(), False)
        page.insert_image(pymupdf.Rect(0, 0, 612, 396), pixmap=plate)  # the lower half blank, read in no time
        doc.save(tmp_path / "with_plate.pdf")
    with pymupdf.open(tmp_path / "with_plate.pdf") as doc:
        read_words(doc[1], (), DEFAULT_LANG, find_scan(doc[1]), narrow=True)
    assert langs.count(DEFAULT_LANG) == 2 and langs[1] == "eng" and langs[-1] == "eng", langs  # the probe, one check


def recorded_langs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The packs of every band Tesseract reads from now on, in order (the real reader, recorded)."""
    ocr_module._probed.clear()
    langs: list[str] = []
    read = tesseract.Engine.read

    def recorded(self: tesseract.Engine, pixels: np.ndarray) -> list[Word]:
        langs.append(self.lang)
        return read(self, pixels)

    monkeypatch.setattr(tesseract.Engine, "read", recorded)
    return langs


FOX = ("the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "near", "the", "river", "bank")
RUSSIAN = ("съешь", "же", "ещё", "этих", "мягких", "французских", "булок", "да", "выпей", "чаю")


def text_document(path: Path, pages: Sequence[tuple[str, Sequence[str]]], lines: int = 60) -> Path:
    """Letter-size pages of dense type, each ``("scan", words)`` (only in its pixels: rasterised at 200 dpi, no text
    layer) or ``("layer", words)`` (vector text)."""
    out = pymupdf.open()
    for kind, words in pages:
        drawn = pymupdf.open()
        page = drawn.new_page(width=612, height=792)
        page.insert_font(fontname="noto", fontbuffer=pymupdf.Font(language="ru").buffer)  # Latin and Cyrillic
        for line in range(lines):
            text = " ".join(words[(line + i) % len(words)] for i in range(12))
            page.insert_text((40, 40 + 12 * line), text, fontsize=10, fontname="noto")
        if kind == "layer":
            out.insert_pdf(drawn)
            continue
        scan = page.get_pixmap(matrix=pymupdf.Matrix(200 / 72, 200 / 72), colorspace=pymupdf.csGRAY)
        out.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792), stream=scan.tobytes("png"))
    out.save(path)
    return path


def scanned_text_page(path: Path, lines: int = 60) -> Path:
    """A letter-size page of dense type only in its pixels (rasterised at 200 dpi, no text layer)."""
    drawn = pymupdf.open()
    page = drawn.new_page(width=612, height=792)
    for line in range(lines):
        text = " ".join(FOX[(line + i) % len(FOX)] for i in range(12))
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
    newspaper page read whole took Tesseract 235 s for them. Here: a third of the page's pixels at most, each strip
    made alone from the scan's own pixels, decoded once (not a 300 dpi page)."""
    from pipeline import scan as scan_module
    from pipeline.words import MAX_WORDS

    read: list[int] = []
    made: list[int] = []
    decoded: list[int] = []
    engine_read, view, decode = tesseract.Engine.read, scan_module.scan_view, scan_module.decode_page

    def counted(self: tesseract.Engine, pixels: np.ndarray) -> list[Word]:  # the real reader, counted
        read.append(pixels.size)
        return engine_read(self, pixels)

    def measured(*args: object, **kwargs: object) -> np.ndarray:  # the real strip, measured
        pixels = view(*args, **kwargs)
        made.append(pixels.size)
        return pixels

    def once(*args: object, **kwargs: object) -> np.ndarray:  # the real decode, measured
        pixels = decode(*args, **kwargs)
        decoded.append(pixels.size)
        return pixels

    monkeypatch.setattr(tesseract.Engine, "read", counted)
    monkeypatch.setattr(scan_module, "scan_view", measured)
    monkeypatch.setattr(scan_module, "decode_page", once)
    with pymupdf.open(scanned_text_page(tmp_path / "text.pdf")) as doc:
        page, scan = doc[0], find_scan(doc[0])
        words = read_words(page, (), "eng", scan)
        whole = round(page.rect.width * 300 / 72) * round(page.rect.height * 300 / 72)
    assert len(words.split()) == MAX_WORDS and words.startswith("the quick brown fox"), words
    assert sum(read) < whole / 3, f"{sum(read):,} of {whole:,} pixels read"
    assert max(made) <= ocr_module.STRIP_PIXELS * 1.05, f"a strip of {max(made):,} pixels: the whole page?"
    assert decoded == [scan.width * scan.height], (decoded, "the scan decoded once, at its own 200 dpi")


@needs_tesseract
def test_a_picture_full_of_words_ends_the_reading_before_its_legend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A band is read a part at a time (the strip above its picture, the picture, the strip below) and the reading
    stops once the caption is full: an advertisement's cut holds a caption's words and more, and its band was read
    whole (200-360 words on the real newspaper pages, 0.7-1.1 s) for the first 40."""
    from pipeline.words import MAX_WORDS

    read: list[np.ndarray] = []
    engine_read = tesseract.Engine.read

    def counted(self: tesseract.Engine, pixels: np.ndarray) -> list[Word]:  # the real reader, counted
        read.append(pixels)
        return engine_read(self, pixels)

    drawn = pymupdf.open()
    page = drawn.new_page(width=612, height=792)
    for line in range(12):  # the "picture": a framed block of type, a caption's words and more
        text = " ".join(FOX[(line + i) % len(FOX)] for i in range(10))
        page.insert_text((80, 130 + 14 * line), text, fontsize=11, fontname="tiro")
    page.draw_rect(pymupdf.Rect(70, 110, 540, 310), width=2)
    page.insert_text((200, 340), "THE IMPERIAL PALACE AT PETERHOF", fontsize=12, fontname="tiro")
    scan = page.get_pixmap(matrix=pymupdf.Matrix(200 / 72, 200 / 72), colorspace=pymupdf.csGRAY)
    with pymupdf.open() as doc:
        doc.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792), stream=scan.tobytes("png"))
        monkeypatch.setattr(tesseract.Engine, "read", counted)
        words = read_words(doc[0], [(65 / 612, 105 / 792, 545 / 612, 315 / 792)], "eng", find_scan(doc[0]))
    assert len(words.split()) == MAX_WORDS and words.startswith("the quick brown fox"), words
    assert "palace" not in words and "peterhof" not in words, words
    assert len(read) == 2, f"{len(read)} parts read: the strip above, the picture and no more"
