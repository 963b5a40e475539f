import json
from pathlib import Path

import numpy as np
import pytest
import tomllib
from factories import large_engraving
from PIL import Image

from pipeline.captions import (
    DEFAULT_TEMPLATE,
    METADATA,
    CaptionTemplate,
    caption_name,
    dataset_config_toml,
    metadata_line,
)
from pipeline.fit import Fit, encode_jpeg, fit


def test_template_fills_every_placeholder() -> None:
    template = CaptionTemplate("an engraving in the style of vestnik mody, {source} page {page} r{region}", "vm")
    assert (
        template.caption("vestnik_1850", 12, 2) == "an engraving in the style of vestnik mody, vestnik_1850 page 12 r2"
    )
    with_trigger = CaptionTemplate("{trigger}, {source}, p{page:04d}", trigger="vstnk")
    assert with_trigger.caption("issue", 7) == "vstnk, issue, p0007"


def test_the_default_caption_is_the_trigger_and_the_pictures_words_never_the_file_name() -> None:
    default = CaptionTemplate(DEFAULT_TEMPLATE, trigger="vestnik mody")
    assert default.caption("pdf_batch__sn93059126__1856050301", 4, None, "the united states capitol") == (
        "vestnik mody, the united states capitol"
    )
    assert default.caption("pdf_batch__sn93059126__1856050301", 4) == "vestnik mody", "no text layer: the trigger"
    assert default.fields == {"trigger", "words"}


def test_empty_placeholders_leave_no_stray_commas_or_spaces() -> None:
    assert CaptionTemplate(DEFAULT_TEMPLATE).caption("issue", 3) == ""
    assert CaptionTemplate("{trigger},  {source} ,, region {region}").caption("a", 1) == "a, region"


@pytest.mark.parametrize("bad", ["{sourse} page {page}", "{} page", "{0}", "{source.upper}", "{page[0]}"])
def test_unknown_placeholders_are_refused_with_the_known_ones_named(bad: str) -> None:
    with pytest.raises(ValueError, match=r"unknown placeholder .*\{source\}, \{page\}, \{region\}, \{trigger\}"):
        CaptionTemplate(bad)


@pytest.mark.parametrize("bad", ["{source", "{source:d}"])
def test_malformed_templates_fail_when_built(bad: str) -> None:
    with pytest.raises(ValueError, match="caption template"):
        CaptionTemplate(bad)


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
