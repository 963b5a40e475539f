import os
import zipfile
from pathlib import Path

import pytest
from factories import ARTICLE, engraving, pdf_from_images

from pipeline import Options, run
from pipeline.names import MAX_STEM_BYTES, StemRegistry, portable_stem, safe_text
from pipeline.writer import read_manifest


def test_safe_text_replaces_undecodable_bytes_and_controls() -> None:
    from_bytes = os.fsdecode(b"caf\xe9 \xff.pdf")  # Latin-1 bytes in a UTF-8 file system: lone surrogates
    assert safe_text(from_bytes) == "caf\ufffd \ufffd.pdf"
    assert safe_text("a\x00b\x1bc\td\ne") == "a\ufffdb\ufffdc\td\ne"
    assert safe_text("\ud800 lone") == "\ufffd lone"
    assert safe_text("Überschrift, 1890") == "Überschrift, 1890"
    safe_text(from_bytes).encode("utf-8")


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        ("issue 1890", "issue 1890"),
        ('a/b\\c:d*e?f"g<h>i|j', "a_b_c_d_e_f_g_h_i_j"),
        ("..", "pdf"),
        (" .hidden. ", "hidden"),
        ("CON", "_CON"),
        ("lpt1.scan", "_lpt1.scan"),
        ("tab\there", "tab_here"),
        ("=1+1", "_=1+1"),  # a formula in a spreadsheet, an option to a shell command
        ("-rf", "_-rf"),
        ("@SUM(A1)", "_@SUM(A1)"),
        ("+cmd", "_+cmd"),
        ("a=b-c", "a=b-c"),
    ],
)
def test_portable_stem(stem: str, expected: str) -> None:
    assert portable_stem(stem) == expected


BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@pytest.mark.parametrize("control", BIDI_CONTROLS, ids=[f"U+{ord(c):04X}" for c in BIDI_CONTROLS])
def test_bidi_controls_leave_output_stems(control: str) -> None:
    """``cow`` + U+202E + ``gpj.exe`` shows as ``cowexe.jpg``: the output name must show what it is."""
    assert portable_stem(f"cow{control}gpj.exe") == "cowgpj.exe"
    assert portable_stem(f"{control}{control}") == "pdf"


def test_long_stems_are_shortened_apart() -> None:
    first, second = portable_stem("é" * 200 + "1"), portable_stem("é" * 200 + "2")
    assert first != second
    assert len(first.encode()) <= MAX_STEM_BYTES and len(second.encode()) <= MAX_STEM_BYTES
    assert first.startswith("ééé")


def test_registry_never_hands_out_a_stem_twice() -> None:
    registry = StemRegistry()
    assert [registry.reserve(s) for s in ("x", "x", "x~2", "X", "x~2")] == ["x", "x~2", "x~2~2", "X~3", "x~2~3"]


def _pdf(path: Path, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return pdf_from_images(path, [engraving(300, 400, seed=seed)])


@pytest.mark.parametrize("output", ["out.zip", "out"])
def test_colliding_stems_lose_no_image(tmp_path: Path, output: str) -> None:
    pdfs = [
        _pdf(tmp_path / "c1" / "x.pdf", 1),
        _pdf(tmp_path / "c2" / "x.pdf", 2),
        _pdf(tmp_path / "c3" / "x~2.pdf", 3),
    ]
    summary = run(pdfs, tmp_path / output, Options(**ARTICLE, size=64))
    rows = read_manifest(tmp_path / output)
    names = [row["outputs"] for row in rows]
    assert len(set(names)) == 3 and summary.images == 3
    if output.endswith(".zip"):
        with zipfile.ZipFile(tmp_path / output) as archive:
            listed = [n for n in archive.namelist() if n.endswith(".jpg")]
        assert sorted(listed) == sorted(names)
    else:
        assert sorted(p.name for p in (tmp_path / output).glob("*.jpg")) == sorted(names)


def test_a_right_to_left_override_in_a_file_name_is_not_in_its_outputs(tmp_path: Path) -> None:
    pdf = _pdf(tmp_path / "report\u202efdp.exe.pdf")
    run([pdf], tmp_path / "out.zip", Options(**ARTICLE, size=64))
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        images = [name for name in archive.namelist() if name.endswith((".jpg", ".txt"))]
    assert sorted(images) == ["reportfdp.exe_p0001.jpg", "reportfdp.exe_p0001.txt"]
    (row,) = read_manifest(tmp_path / "out.zip")
    assert row["outputs"] == "reportfdp.exe_p0001.jpg" and row["source"] == pdf.name, "the manifest keeps the name"


@pytest.mark.parametrize("output", ["out.zip", "out"])
def test_undecodable_and_long_file_names_complete_the_run(tmp_path: Path, output: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    raw = os.fsencode(folder) + b"/\xff\xfe gazette.pdf"
    _pdf(tmp_path / "plain.pdf").rename(os.fsdecode(raw))
    long = _pdf(folder / ("Вестник моды " * 10 + ".pdf"), seed=1)  # 134 characters, 244 bytes
    assert len(long.name.encode()) > 255 - 20 and len(long.name.encode()) <= 255

    summary = run([folder], tmp_path / output, Options(**ARTICLE, size=64))
    rows = read_manifest(tmp_path / output)
    assert summary.images == 2 and [row["kept"] for row in rows] == ["true", "true"]
    assert {row["source"] for row in rows} == {"\ufffd\ufffd gazette.pdf", long.name}, "the manifest keeps the name"
    assert all(len(name.encode()) <= 120 for row in rows for name in row["outputs"].split(";"))
    if output.endswith(".zip"):
        with zipfile.ZipFile(tmp_path / output) as archive:
            assert {"manifest.csv", "metadata.jsonl", "report.html"} <= set(archive.namelist())
            archive.extractall(tmp_path / "extracted")
        assert len(list((tmp_path / "extracted").glob("*.jpg"))) == 2
