"""Write images and the manifest as the run goes: a zip (JPEGs stored as-is) or a folder, resumable."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from pipeline.captions import METADATA, caption_name, metadata_line
from pipeline.journal import Journal, OutputError, PageKey
from pipeline.manifest import COLUMNS, PageRecord
from pipeline.names import safe_text

if TYPE_CHECKING:
    from collections.abc import Iterable

    from PIL import Image

    from pipeline.tasks import PageImage

MANIFEST = "manifest.csv"
_ZIPINFO_FIELDS = (
    "filename", "date_time", "compress_type", "CRC", "compress_size", "file_size", "header_offset",
    "flag_bits", "external_attr", "create_system", "create_version", "extract_version",
)  # fmt: skip


class Writer(Protocol):
    """Where a run's pages go, each committed (images, then its manifest row) before the next."""

    path: Path
    journal: Journal

    def commit(self, key: PageKey, record: PageRecord, images: list[PageImage], captions: list[str]) -> None:
        """Write ``images`` with their kohya caption files, then record the page."""

    def size(self) -> int: ...

    def read(self, name: str) -> bytes:
        """A file written earlier in this run or the run it resumes (images read back to rebuild the dedupe index)."""
        ...

    def close(self, complete: bool, files: dict[str, Iterable[str]]) -> None:
        """Add ``manifest.csv``, ``metadata.jsonl`` and ``files`` (name → text chunks), then finish."""


class ZipWriter:
    """A zip whose JPEGs are stored (they are compressed already); ``manifest.csv`` is added on close.

    On resume the zip is cut back to the end of the last committed page and its entries are re-declared,
    so pages are neither lost nor written twice and the final zip is valid.
    """

    def __init__(self, path: Path, journal: Journal) -> None:
        self.path, self.journal = path, journal
        if journal.zip_end is not None and (not path.exists() or path.stat().st_size < journal.zip_end):
            # the pages the progress file lists are not all there: resuming would declare entries with no data
            raise OutputError(
                f"{path} is {'missing' if not path.exists() else 'shorter than its progress file records'} "
                f"({journal.path.name} lists pages written to it); pass --no-resume to start over"
            )
        try:
            if journal.zip_end is not None:
                self._file: BinaryIO = path.open("r+b")
                self._file.truncate(journal.zip_end)
                self._file.seek(journal.zip_end)
            else:
                self._file = path.open("wb")
            self._zip = zipfile.ZipFile(self._file, "w", compression=zipfile.ZIP_STORED)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        for fields in journal.zip_entries:
            info = _zipinfo(fields)
            self._zip.filelist.append(info)
            self._zip.NameToInfo[info.filename] = info

    def commit(self, key: PageKey, record: PageRecord, images: list[PageImage], captions: list[str]) -> None:
        names = []
        for image, caption in zip(images, captions, strict=True):
            self._zip.writestr(zip_entry(image.name, zipfile.ZIP_STORED), image.data)
            self._zip.writestr(zip_entry(caption_name(image.name), zipfile.ZIP_STORED), caption)
            names += [image.name, caption_name(image.name)]
        self._file.flush()
        entries = [_fields(self._zip.getinfo(name)) for name in names]
        metadata = _metadata(record, images, captions)
        self.journal.commit(key, record.row(), metadata, entries, end=self._file.tell())

    def size(self) -> int:
        return self._file.tell()

    def read(self, name: str) -> bytes:
        return self._zip.read(name)  # the file is open r+b when resuming, the only time this is asked

    def _text(self, name: str) -> io.TextIOWrapper:
        return io.TextIOWrapper(
            self._zip.open(zip_entry(name, zipfile.ZIP_DEFLATED), "w"), encoding="utf-8", newline=""
        )

    def close(self, complete: bool, files: dict[str, Iterable[str]]) -> None:
        try:
            with self._text(MANIFEST) as text:
                _write_manifest(text, self.journal)
            with self._text(METADATA) as text:
                text.writelines(self.journal.metadata())
            for name, chunks in files.items():
                with self._text(name) as text:
                    text.writelines(chunks)
            self._zip.close()
        except BaseException:
            # a full disk: the zip is left as the progress file describes it, for the rerun; ZipFile's own finaliser
            # would try to finish it again at exit, and print a second traceback
            self._zip.fp = None
            self._file.close()
            self.journal.close(remove=False)
            raise
        self._file.close()
        self.journal.close(remove=complete)


class FolderWriter:
    """Images as files in a folder; ``manifest.csv`` appended and flushed row by row."""

    def __init__(self, path: Path, journal: Journal) -> None:
        self.path, self.journal = path, journal
        try:
            path.mkdir(parents=True, exist_ok=True)
            self._manifest = (path / MANIFEST).open("w", newline="", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._csv = _write_manifest(self._manifest, journal)
        self._size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())

    def commit(self, key: PageKey, record: PageRecord, images: list[PageImage], captions: list[str]) -> None:
        for image, caption in zip(images, captions, strict=True):
            (self.path / image.name).write_bytes(image.data)
            (self.path / caption_name(image.name)).write_text(caption, encoding="utf-8")
            self._size += len(image.data) + len(caption)
        self._csv.writerow(record.row())
        self._manifest.flush()
        self.journal.commit(key, record.row(), _metadata(record, images, captions))

    def size(self) -> int:
        return self._size

    def read(self, name: str) -> bytes:
        return (self.path / name).read_bytes()

    def close(self, complete: bool, files: dict[str, Iterable[str]]) -> None:
        self._manifest.close()
        with (self.path / METADATA).open("w", encoding="utf-8") as handle:
            handle.writelines(self.journal.metadata())
        for name, chunks in files.items():
            with (self.path / name).open("w", encoding="utf-8") as handle:
                handle.writelines(chunks)
        self.journal.close(remove=complete)


def read_images(output: str | Path, limit: int = 12) -> list[tuple[Image.Image, str]]:
    """Up to ``limit`` written images with their names, for previews (the Space's gallery)."""
    from PIL import Image

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


def read_manifest(output: str | Path) -> list[dict[str, str]]:
    """The manifest rows of a finished output (zip or folder)."""
    path = Path(output)
    if path.is_dir():
        with (path / MANIFEST).open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    with zipfile.ZipFile(path) as archive, archive.open(MANIFEST) as raw:
        return list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline="")))


def read_text(output: str | Path, name: str) -> str:
    """A text file a finished output holds at its root (``report.html``), for showing it outside the zip."""
    path = Path(output)
    if path.is_dir():
        return (path / name).read_text(encoding="utf-8")
    with zipfile.ZipFile(path) as archive:
        return archive.read(name).decode("utf-8")


def _write_manifest(handle: io.TextIOBase, journal: Journal) -> csv.DictWriter:
    writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(journal.rows())
    return writer


def _metadata(record: PageRecord, images: list[PageImage], captions: list[str]) -> list[str]:
    return [
        metadata_line(image.name, caption, safe_text(record.source), record.page, image.box, record.score)
        for image, caption in zip(images, captions, strict=True)
    ]


def zip_entry(name: str, compression: int) -> zipfile.ZipInfo:
    """An entry dated 1980-01-01 (zip's epoch), not by the clock: the same run gives the same zip, byte for
    byte, so a dataset can be checked by its hash (as reproducible builds do) and a refactor by a digest."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = compression
    info.external_attr = 0o600 << 16  # what writestr gives a name: rw for the owner
    return info


def _fields(info: zipfile.ZipInfo) -> dict:
    return {name: getattr(info, name) for name in _ZIPINFO_FIELDS}


def _zipinfo(fields: dict) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(fields["filename"], tuple(fields["date_time"]))
    for name in _ZIPINFO_FIELDS[2:]:
        setattr(info, name, fields[name])
    return info
