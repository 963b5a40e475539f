"""Where a run writes: one class per layout (as img2dataset's writers), each opening its own writer.

- :class:`ZipLayout`: ``out.zip`` (JPEGs stored, manifest and metadata at its root), progress in ``out.zip.progress``;
- :class:`FolderLayout`: ``DIR/`` (the same files, loose), progress in ``DIR/.progress``;
- :class:`ShardsLayout`: numbered shards of either kind and an index, at a local path or an fsspec URL
  (``s3://bucket/ds/``: each shard is uploaded as it closes).

Everything that differs between a zip and a folder — file names, where progress and shard files go, which
files make up the dataset, how a written image is read back — is here; a new format is one more class.
:func:`layout_for` reads what the CLI's ``-o`` and ``--shard-size`` mean.
"""

from __future__ import annotations

import shlex
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pipeline.captions import dataset_config_toml
from pipeline.journal import Journal
from pipeline.shards import ShardedWriter
from pipeline.source import is_url
from pipeline.writer import FolderWriter, OutputError, Writer, ZipWriter


class Layout(Protocol):
    """Where a run writes: opens the writer of a run (``run_id``), continuing an interrupted one with ``resume``."""

    target: str | Path
    """What the run's output is called for people (a path, or the URL shards go to)."""

    def open(self, run_id: str, resume: bool) -> Writer | ShardedWriter: ...

    def kohya_config(self, resolution: int) -> str:
        """kohya sd-scripts' ``dataset_config.toml`` naming this output's image folder."""
        ...


@dataclass(frozen=True)
class ZipLayout:
    """One zip file: what the Space hands back and what moves around best (one file, images stored)."""

    path: Path

    @property
    def target(self) -> Path:
        return self.path

    @property
    def progress(self) -> Path:
        return self.path.with_name(self.path.name + ".progress")

    def open(self, run_id: str, resume: bool) -> ZipWriter:
        return ZipWriter(self.path, _journal(self.progress, run_id, resume, self.path))

    def kohya_config(self, resolution: int) -> str:
        """kohya reads folders: the folder named after the zip beside it (``/data/out.zip`` → ``/data/out``),
        with the command that extracts it there."""
        path = self.path.resolve()
        folder = path.with_suffix("")
        extract = f"unzip {shlex.quote(str(path))} -d {shlex.quote(str(folder))}"
        return dataset_config_toml(str(folder), resolution, extract=extract)

    def files(self) -> list[Path]:
        """What makes up the finished dataset on disk (to upload a shard)."""
        return [self.path]

    def read(self, name: str) -> bytes | None:
        """A file of the finished output, ``None`` when it has none of that name."""
        if not self.path.is_file():
            return None
        with zipfile.ZipFile(self.path) as archive:
            return archive.read(name) if name in archive.NameToInfo else None

    def remove(self) -> None:
        self.path.unlink()

    @staticmethod
    def shard(base: str, number: int) -> str:
        """Shard ``number`` of ``out.zip``: ``out-00003.zip``, beside it."""
        return f"{Path(base).stem}-{number:05d}.zip"

    @staticmethod
    def beside(base: str, name: str) -> str:
        """Where a file of a sharded ``out.zip`` goes: in the folder that holds ``out.zip``."""
        return f"{base.rsplit('/', 1)[0]}/{name}" if "/" in base else name

    @staticmethod
    def top(base: str, name: str) -> str:
        """A file of the whole sharded output: ``out.index.json`` beside ``out.zip``."""
        return ZipLayout.beside(base, f"{Path(base).name[: -len('.zip')]}.{name}")

    @staticmethod
    def state(base: str) -> str:
        """The closed shards' state file, in the staging folder: ``out.zip.shards``."""
        return f"{Path(base).name}.shards"

    @staticmethod
    def staging(path: Path) -> Path:
        """Where the shards of a local ``out.zip`` are written: the folder that holds it."""
        return path.parent


@dataclass(frozen=True)
class FolderLayout:
    """A folder of loose files: what kohya and ``datasets``' imagefolder read directly."""

    path: Path

    @property
    def target(self) -> Path:
        return self.path

    @property
    def progress(self) -> Path:
        return self.path / ".progress"

    def open(self, run_id: str, resume: bool) -> FolderWriter:
        return FolderWriter(self.path, _journal(self.progress, run_id, resume, self.path))

    def kohya_config(self, resolution: int) -> str:
        return dataset_config_toml(str(self.path.resolve()), resolution)

    def files(self) -> list[Path]:
        return [file for file in self.path.iterdir() if file.is_file() and file != self.progress]

    def read(self, name: str) -> bytes | None:
        file = self.path / name
        return file.read_bytes() if file.is_file() else None

    def remove(self) -> None:
        shutil.rmtree(self.path)

    @staticmethod
    def shard(base: str, number: int) -> str:
        """Shard ``number`` of ``DIR``: ``DIR/00003/``."""
        return f"{number:05d}"

    @staticmethod
    def beside(base: str, name: str) -> str:
        return f"{base}/{name}"

    @staticmethod
    def top(base: str, name: str) -> str:
        """``DIR/index.json``."""
        return FolderLayout.beside(base, name)

    @staticmethod
    def state(base: str) -> str:
        return ".shards"

    @staticmethod
    def staging(path: Path) -> Path:
        """Where the shards of a local ``DIR`` are written: in it."""
        return path


@dataclass(frozen=True)
class ShardsLayout:
    """Numbered shards of ``size`` pages, each a complete zip (``target`` ends in ``.zip``) or folder, and an
    index; ``target`` may be an fsspec URL (see :mod:`pipeline.shards`)."""

    target: str
    size: int

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"--shard-size must be at least 1 page (got {self.size})")

    @property
    def unit(self) -> type[ZipLayout] | type[FolderLayout]:
        """What each shard is."""
        return ZipLayout if _is_zip(self.target) else FolderLayout

    def open(self, run_id: str, resume: bool) -> ShardedWriter:
        return ShardedWriter(self.target, self.size, self.unit, run_id, resume)

    def kohya_config(self, resolution: int) -> str:
        raise ValueError("--kohya-config and --shard-size: kohya's config names one image folder, shards are many")


def layout_for(output: str | Path, shard_size: int | None = None) -> ZipLayout | FolderLayout | ShardsLayout:
    """``-o`` and ``--shard-size`` as the CLI reads them: ``*.zip`` a zip, anything else (``DIR/``) a folder;
    with a shard size, shards of that kind (the output may then be a URL)."""
    if shard_size is not None:
        return ShardsLayout(str(output), shard_size)
    if is_url(str(output)):
        raise OutputError(f"{output}: an output URL needs --shard-size (shards are uploaded as they close)")
    return ZipLayout(Path(output)) if _is_zip(str(output)) else FolderLayout(Path(output))


def _is_zip(output: str) -> bool:
    return output.lower().endswith(".zip")


def _journal(progress: Path, run_id: str, resume: bool, output: Path) -> Journal:
    try:
        return Journal(progress, run_id, resume)
    except OSError as exc:
        raise OutputError(f"cannot write {output}: {exc.strerror or exc}") from None
