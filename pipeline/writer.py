"""Write images and the manifest as the run goes: a zip (JPEGs stored as-is) or a folder."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Protocol

from PIL import Image

from pipeline.manifest import COLUMNS, PageRecord

MANIFEST = "manifest.csv"


class OutputError(Exception):
    """The output cannot be created or written; nothing can be done."""


class Writer(Protocol):
    """Where a run's images and manifest rows go, as soon as each page is done."""

    path: Path

    def add_image(self, name: str, data: bytes) -> None: ...
    def add_record(self, record: PageRecord) -> None: ...
    def close(self) -> None: ...


class ZipWriter:
    """A zip whose JPEGs are stored (they are already compressed); ``manifest.csv`` is added on close.

    Manifest rows are a few hundred bytes per page, so they are kept until the end and the zip's
    root always holds the manifest, even when the run is interrupted (``close`` runs in ``finally``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._rows: list[dict[str, str]] = []

    def add_image(self, name: str, data: bytes) -> None:
        self._zip.writestr(name, data)

    def add_record(self, record: PageRecord) -> None:
        self._rows.append(record.row())

    def close(self) -> None:
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self._rows)
        self._zip.writestr(MANIFEST, text.getvalue(), compress_type=zipfile.ZIP_DEFLATED)
        self._zip.close()


class FolderWriter:
    """Images as files in a folder; ``manifest.csv`` appended and flushed row by row."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.mkdir(parents=True, exist_ok=True)
            self._manifest = open(path / MANIFEST, "w", newline="", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._csv = csv.DictWriter(self._manifest, fieldnames=COLUMNS, lineterminator="\n")
        self._csv.writeheader()

    def add_image(self, name: str, data: bytes) -> None:
        (self.path / name).write_bytes(data)

    def add_record(self, record: PageRecord) -> None:
        self._csv.writerow(record.row())
        self._manifest.flush()

    def close(self) -> None:
        self._manifest.close()


def open_writer(output: str | Path) -> Writer:
    """A zip writer for ``*.zip``, a folder writer otherwise (a path ending in ``/`` or an existing folder)."""
    path = Path(output)
    if path.suffix.lower() == ".zip" and not str(output).endswith(("/", "\\")):
        return ZipWriter(path)
    return FolderWriter(path)


def read_images(output: str | Path, limit: int = 12) -> list[tuple[Image.Image, str]]:
    """Up to ``limit`` written images with their names, for previews (the Space's gallery)."""
    path = Path(output)
    images: list[tuple[Image.Image, str]] = []
    if path.is_dir():
        for file in sorted(path.glob("*.jpg"))[:limit]:
            with Image.open(file) as image:
                images.append((image.copy(), file.name))
        return images
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if n.lower().endswith(".jpg")][:limit]
        for name in names:
            with archive.open(name) as handle, Image.open(handle) as image:
                images.append((image.copy(), name))
    return images
