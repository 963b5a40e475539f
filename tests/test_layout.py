from pathlib import Path

import pytest

from pipeline.layout import FolderLayout, ShardsLayout, ZipLayout, layout_for
from pipeline.writer import FolderWriter, OutputError, ZipWriter


def test_the_output_path_says_which_layout(tmp_path: Path) -> None:
    assert layout_for(tmp_path / "out.zip") == ZipLayout(tmp_path / "out.zip")
    assert layout_for(tmp_path / "OUT.ZIP") == ZipLayout(tmp_path / "OUT.ZIP")
    assert layout_for(f"{tmp_path}/out.zip/") == FolderLayout(tmp_path / "out.zip")  # a folder named like a zip
    assert layout_for(tmp_path / "dataset") == FolderLayout(tmp_path / "dataset")
    assert layout_for("s3://bucket/ds/", 10) == ShardsLayout("s3://bucket/ds/", 10)
    with pytest.raises(OutputError, match="an output URL needs --shard-size"):
        layout_for("s3://bucket/out.zip")
    with pytest.raises(ValueError, match="--shard-size must be at least 1 page"):
        layout_for(tmp_path / "out.zip", 0)


def test_each_layout_opens_its_own_writer_and_progress_file(tmp_path: Path) -> None:
    zipped, folder = ZipLayout(tmp_path / "out.zip"), FolderLayout(tmp_path / "dataset")
    assert isinstance(zipped.open("run", resume=True), ZipWriter)
    assert isinstance(folder.open("run", resume=True), FolderWriter)
    assert zipped.progress == tmp_path / "out.zip.progress" and zipped.progress.exists()
    assert folder.progress == tmp_path / "dataset" / ".progress" and folder.progress.exists()
    assert folder.files() == [tmp_path / "dataset" / "manifest.csv"]  # the progress file is not the dataset's


def test_shards_are_named_by_the_kind_of_each_shard() -> None:
    assert ShardsLayout("data/out.zip", 5).unit is ZipLayout
    assert ShardsLayout("data/ds/", 5).unit is FolderLayout
    assert [ZipLayout.shard("data/out.zip", 3), ZipLayout.top("data/out.zip", "index.json")] == [
        "out-00003.zip",
        "data/out.index.json",
    ]
    assert ZipLayout.beside("out.zip", "out-00000.zip") == "out-00000.zip"
    assert [FolderLayout.shard("data/ds", 3), FolderLayout.top("data/ds", "index.json")] == [
        "00003",
        "data/ds/index.json",
    ]


def test_kohya_config_names_the_folder_kohya_reads(tmp_path: Path) -> None:
    assert f'image_dir = "{tmp_path / "dataset"}"' in FolderLayout(tmp_path / "dataset").kohya_config(1024)
    zipped = ZipLayout(tmp_path / "out.zip").kohya_config(1024)
    assert (
        f'image_dir = "{tmp_path / "out"}"' in zipped
        and f"unzip {tmp_path / 'out.zip'} -d {tmp_path / 'out'}" in zipped
    )
    with pytest.raises(ValueError, match="kohya's config names one image folder"):
        ShardsLayout(str(tmp_path / "out.zip"), 5).kohya_config(1024)
