import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import tomllib
from factories import engraving, large_engraving, woodcut
from PIL import Image

from pipeline.captions import (
    DEFAULT_TEMPLATE,
    METADATA,
    CaptionTemplate,
    caption_name,
    dataset_config_toml,
    metadata_line,
    trigger_note,
)
from pipeline.fit import Fit, encode_jpeg, fit
from pipeline.kinds import _percentiles, _smooth_tone, picture_kind


def test_template_fills_every_placeholder() -> None:
    template = CaptionTemplate("an engraving in the style of vestnik mody, {source} page {page} r{region}", "vm")
    assert (
        template.caption("vestnik_1850", 12, 2) == "an engraving in the style of vestnik mody, vestnik_1850 page 12 r2"
    )
    with_trigger = CaptionTemplate("{trigger}, {source}, p{page:04d}", trigger="vstnk")
    assert with_trigger.caption("issue", 7) == "vstnk, issue, p0007"


def test_the_default_caption_is_the_trigger_the_kind_and_the_pictures_words_never_the_file_name() -> None:
    default = CaptionTemplate(DEFAULT_TEMPLATE, trigger="vestnik mody")
    assert default.caption("pdf_batch__sn93059126__1856050301", 4, None, "the united states capitol", "halftone") == (
        "vestnik mody, halftone, the united states capitol"
    )
    assert default.caption("pdf_batch__sn93059126__1856050301", 4) == "vestnik mody", "no words, no kind: the trigger"
    assert default.fields == {"trigger", "caption", "kind", "words"}


def test_the_default_caption_is_never_empty_without_a_trigger_or_printed_words() -> None:
    kind = picture_kind(engraving(480, 400))
    assert CaptionTemplate().caption("vestnik_1850", 3, None, "", kind) == "monochrome line art"


def test_kind_fills_its_placeholder_wherever_it_stands() -> None:
    template = CaptionTemplate("a {kind} from {source}, {trigger}", trigger="vm")
    assert template.caption("vestnik", 1, kind="colour halftone") == "a colour halftone from vestnik, vm"
    assert "kind" in template.fields


def test_empty_placeholders_leave_no_stray_commas_or_spaces() -> None:
    assert CaptionTemplate(DEFAULT_TEMPLATE).caption("issue", 3) == ""
    assert CaptionTemplate(DEFAULT_TEMPLATE).caption("issue", 3, None, "a legend", "") == "a legend"
    assert CaptionTemplate("{trigger},  {source} ,, region {region}").caption("a", 1) == "a, region"


def test_the_missing_trigger_is_noted_once_with_how_to_set_it() -> None:
    assert "--trigger WORD" in trigger_note(CaptionTemplate()) and "LoRA" in trigger_note(CaptionTemplate())
    assert "the Trigger box" in trigger_note(CaptionTemplate(), how="the Trigger box")
    assert trigger_note(CaptionTemplate(trigger="vstnkmd")) == ""
    assert trigger_note(CaptionTemplate("an engraving, {words}")) == "", "no {trigger} to fill: the user's own words"


def _photo(width: int, height: int, seed: int = 0, colour: bool = False) -> np.ndarray:
    """A photograph-like picture: smooth tones at several scales, grain, in grey or in two hues."""
    rng = np.random.default_rng(seed)
    tone = sum(
        cv2.resize(rng.random((height // s + 1, width // s + 1)).astype(np.float32), (width, height))
        for s in (64, 16, 4)
    )
    tone = (tone - tone.min()) / np.ptp(tone) * 200 + 30 + rng.normal(0, 2, (height, width))
    gray = np.clip(tone, 0, 255).astype(np.uint8)
    if not colour:
        return gray
    sky = np.linspace(0, 1, height, dtype=np.float32)[:, None, None]
    tint = sky * np.array([0.7, 0.85, 1.15]) + (1 - sky) * np.array([1.1, 1.0, 0.6])  # blue above, ochre below
    return np.clip(gray[..., None] * tint, 0, 255).astype(np.uint8)


def _screen(gray: np.ndarray, period: float) -> np.ndarray:
    """``gray`` printed as a 45-degree halftone screen of ``period`` pixels (ink dots grow with the tone)."""
    yy, xx = np.mgrid[0 : gray.shape[0], 0 : gray.shape[1]].astype(np.float32)
    u, v = (xx + yy) / (period * 2**0.5), (yy - xx) / (period * 2**0.5)
    screen = (np.cos(2 * np.pi * u) + np.cos(2 * np.pi * v)) / 4 + 0.5
    return np.where(gray / 255.0 > screen, 245, 20).astype(np.uint8)


def test_picture_kind_tells_line_art_halftone_and_continuous_tone_in_monochrome_and_colour() -> None:
    photo = _photo(900, 700)
    assert picture_kind(engraving(480, 400)) == "monochrome line art"
    assert picture_kind(woodcut(900, 700)) == "monochrome line art"
    assert picture_kind(photo) == "monochrome continuous tone"
    assert picture_kind(_screen(photo, 4.0)) == "monochrome halftone"
    assert picture_kind(_photo(900, 700, colour=True)) == "colour continuous tone"
    assert picture_kind(Image.fromarray(photo).convert("RGB")) == "monochrome continuous tone", "grey in RGB"
    sepia = np.stack([photo * 0.95 + 10, photo * 0.85 + 5, photo * 0.65], axis=2).astype(np.uint8)
    assert picture_kind(sepia) == "monochrome continuous tone", "one weak hue: toned, not colour"


def test_a_pixel_grid_is_no_screen() -> None:
    """An image upscaled 4x (its pixel grid) or JPEG's 8x8 blocks peak like a screen, off the axes too."""
    small = _photo(225, 175, seed=1)
    upscaled = cv2.resize(small, (900, 700), interpolation=cv2.INTER_LANCZOS4)
    assert picture_kind(upscaled) == "monochrome continuous tone"


def _plain_smooth_tone(gray: np.ndarray) -> float:
    """The smooth-tone share written as plainly as it is defined: per-pixel tone, 3x3 mean and standard deviation."""
    lo, hi = np.percentile(gray[:: max(1, gray.shape[0] // 512), :: max(1, gray.shape[1] // 512)], [1, 99])
    if hi - lo < 16:
        return 0.0
    tone = (gray.astype(np.float32) - float(lo)) / float(hi - lo)
    mean = cv2.blur(tone, (3, 3))
    std = np.sqrt(np.maximum(cv2.blur(tone * tone, (3, 3)) - mean * mean, 0.0))
    return float(np.count_nonzero((tone > 0.2) & (tone < 0.8) & (std < 0.1)) / tone.size)


def test_smooth_tone_looked_up_per_grey_level_is_exactly_the_plain_per_pixel_measure() -> None:
    """The kind's smooth-tone share reads each grey level's tone from a table, its 1st and 99th percentiles from
    a histogram and compares variances, not square roots: the same share, to the last bit, on photographs,
    line art, noise, gradients and nearly flat images (where the percentiles fall between two levels)."""
    rng = np.random.default_rng(3)
    images = [_photo(900, 700), _photo(333, 517, seed=2), engraving(480, 400), woodcut(900, 700)]
    images += [(rng.random((300, 401)) * 255).astype(np.uint8), np.tile(np.arange(256, dtype=np.uint8), (40, 3))]
    images += [np.clip(_photo(300, 200, seed=s) // 16 + 100, 0, 255).astype(np.uint8) for s in range(3)]
    images += [np.where(rng.random((200, 300)) < 0.015, 0, 200).astype(np.uint8)]  # 1 % between two levels
    for gray in images:
        assert _smooth_tone(gray) == _plain_smooth_tone(gray)
        assert _smooth_tone(gray.astype(np.float32)) == _plain_smooth_tone(gray.astype(np.float32))
        sample = gray[::2, ::3]
        assert _percentiles(sample, (1, 99)) == tuple(float(v) for v in np.percentile(sample, [1, 99]))
    between = np.array([[0, 0, *[200] * 149]], dtype=np.uint8)  # the 1st percentile is halfway from 0 to 200
    assert _percentiles(between, (1, 99)) == (100.0, 200.0)
    assert sum(_plain_smooth_tone(np.asarray(gray)) > 0.1 for gray in images[:2]) == 2, "photographs measured"


@pytest.mark.parametrize("bad", ["{sourse} page {page}", "{} page", "{0}", "{source.upper}", "{page[0]}"])
def test_unknown_placeholders_are_refused_with_the_known_ones_named(bad: str) -> None:
    with pytest.raises(
        ValueError, match=r"unknown placeholder .*\{source\}, \{page\}, \{region\}, \{trigger\}, \{kind\}"
    ):
        CaptionTemplate(bad)


@pytest.mark.parametrize("bad", ["{source", "{source:d}"])
def test_malformed_templates_fail_when_built(bad: str) -> None:
    with pytest.raises(ValueError, match="caption template"):
        CaptionTemplate(bad)


@pytest.mark.parametrize("bad", ["{page:>2000000000}", "{page!r:>99999999999}", "{words:.5000}"])
def test_templates_that_pad_a_field_to_megabytes_are_refused_when_built(bad: str) -> None:
    """``{page:>2000000000}`` wrote a 2 GB caption for every picture; a wider pad ran out of memory building the
    template (a raw ``MemoryError``, past the Space's check)."""
    with pytest.raises(ValueError, match="padded beyond 1000 characters"):
        CaptionTemplate(bad)
    assert (
        CaptionTemplate("{source}_{page:04}, {words:.60}").caption("a", 7, words="w " * 50)
        == "a_0007, " + ("w " * 30).strip()
    )


def test_caption_file_sits_next_to_its_image() -> None:
    assert caption_name("vestnik_p0001_r2.jpg") == "vestnik_p0001_r2.txt"


def test_metadata_line_is_one_json_object_per_line() -> None:
    line = metadata_line("a_p0001.jpg", "vm, a page 1", "a.pdf", 1, (0.1, 0.2, 0.9123456, 1.0), 51.23456)
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line) == {
        "file_name": "a_p0001.jpg",
        "text": "vm, a page 1",
        "source": "a.pdf",
        "page": 1,
        "box": [0.1, 0.2, 0.9123, 1.0],
        "score": 51.2346,
    }
    assert json.loads(metadata_line("b.jpg", "журнал мод", "b.pdf", 2))["box"] is None
    assert "журнал" in metadata_line("b.jpg", "журнал мод", "b.pdf", 2)


def test_dataset_config_is_valid_toml_with_kohya_bucketing_and_no_upscale() -> None:
    config = tomllib.loads(dataset_config_toml('C:\\data\\"vm"', resolution=1024, num_repeats=10))
    general = config["general"]
    assert general["enable_bucket"] is True and general["bucket_no_upscale"] is True
    assert general["resolution"] == 1024 and general["caption_extension"] == ".txt"
    assert general["bucket_reso_steps"] == 64
    assert "min_bucket_reso" not in general and "max_bucket_reso" not in general  # ignored (and warned) by kohya
    subset = config["datasets"][0]["subsets"][0]
    assert subset == {"image_dir": 'C:\\data\\"vm"', "num_repeats": 10}


def _write_imagefolder(folder: Path) -> dict[str, tuple[str, tuple[int, int]]]:
    """Images fitted as the pipeline fits them, kohya captions, metadata.jsonl and the run's other files."""
    template = CaptionTemplate("{trigger}, {source} page {page}", trigger="vestnik mody")
    expected = {}
    with open(folder / METADATA, "w", encoding="utf-8") as metadata:
        for page, (width, height) in enumerate([(1300, 1700), (2100, 1000), (700, 600)], start=1):
            fitted = fit(large_engraving(width, height, seed=page), Fit("bucket"))
            name = f"vestnik_p{page:04d}.jpg"
            text = template.caption("vestnik", page)
            (folder / name).write_bytes(encode_jpeg(fitted.image.convert("RGB"), 92))
            (folder / caption_name(name)).write_text(text, encoding="utf-8")
            box = None if page != 2 else (0.1, 0.1, 0.9, 0.6)
            metadata.write(metadata_line(name, text, "vestnik.pdf", page, box, 40.0 + page))
            expected[name] = (text, fitted.size)
    (folder / "manifest.csv").write_text("source,page,kept\nvestnik.pdf,1,true\n", encoding="utf-8")
    (folder / "report.html").write_text("<html></html>", encoding="utf-8")
    (folder / "dataset_config.toml").write_text(dataset_config_toml(str(folder)), encoding="utf-8")
    return expected


def test_imagefolder_loads_with_captions_and_fitted_sizes(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    expected = _write_imagefolder(tmp_path)
    dataset = datasets.load_dataset("imagefolder", data_dir=str(tmp_path), split="train")
    assert len(dataset) == len(expected)
    assert {"image", "text", "source", "page", "box", "score"} <= set(dataset.column_names)
    seen = {}
    for row in dataset:
        image: Image.Image = row["image"]
        match = [name for name, (text, size) in expected.items() if text == row["text"]]
        assert len(match) == 1
        seen[match[0]] = image.size
        assert row["source"] == "vestnik.pdf" and row["text"].startswith("vestnik mody, vestnik page ")
    assert seen == {name: size for name, (_, size) in expected.items()}
    assert seen["vestnik_p0001.jpg"] == (896, 1152) and seen["vestnik_p0002.jpg"] == (1536, 640)
    width, height = seen["vestnik_p0003.jpg"]  # undersized: kept at its size, not upscaled
    assert width <= 700 and height <= 600 and width % 64 == 0 and height % 64 == 0
    assert np.isclose(dataset.filter(lambda row: row["page"] == 2)[0]["box"], [0.1, 0.1, 0.9, 0.6]).all()


def test_the_cli_says_once_that_no_trigger_was_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from factories import mixed_page, pdf_from_images

    from pipeline.cli import main

    pdfs = [pdf_from_images(tmp_path / f"p{i}.pdf", [mixed_page(seed=i)] * 2) for i in range(2)]
    assert main([*map(str, pdfs), "-o", str(tmp_path / "out/"), "--no-ocr", "--workers", "1"]) == 0
    assert capsys.readouterr().err.count("note: no trigger word") == 1
    assert main([*map(str, pdfs), "-o", str(tmp_path / "out2/"), "--no-ocr", "--trigger", "vm", "--workers", "1"]) == 0
    assert "trigger" not in capsys.readouterr().err
