"""The generated pictures the gate learns to turn away: every kind, the same files for the same seed."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from models import synthetic


def test_every_kind_is_written_the_same_way_twice(tmp_path: Path) -> None:
    first = synthetic.write(tmp_path / "a", count=12, seed=3)
    again = synthetic.write(tmp_path / "b", count=12, seed=3)
    assert {p.name.split("_")[0] for p in first} == set(synthetic.KINDS)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    for path in first:
        with Image.open(path) as im:
            assert im.mode == "RGB" and min(im.size) >= 160


def test_the_command_line_writes_the_folder(tmp_path: Path) -> None:
    assert synthetic.main([str(tmp_path / "out"), "--count", "6"]) == 0
    assert len(list((tmp_path / "out").glob("*.png"))) == 6
