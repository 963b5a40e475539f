"""Review a finished dataset zip before training: every image with its caption, paged; captions edited and images
left out are written into a new zip, entry by entry.

A judge and OCR make mistakes a person sees at a glance (a text column kept as a picture, a legend misread), and a
LoRA learns whatever its captions say; re-running the pipeline would not fix either. So the Space shows each written
image with its caption (:class:`Review`, 24 a page, so a 2,000-image run stays light on a phone) and
:func:`write_review` makes the reviewed zip from the run's zip and the changes:

* an edited caption replaces the image's ``.txt`` and its ``metadata.jsonl`` ``text``, cleaned as the pipeline cleans
  captions (:func:`clean_caption`: one line, comma-separated tags, no empty pieces);
* a dropped image goes with its ``.txt`` and its ``metadata.jsonl`` line; ``manifest.csv`` keeps every page's row (the
  judge's verdict and score are still true) but takes the image out of ``outputs`` and of the lists that run beside
  it (``sizes``, ``fingerprints``, ``undersized``), and names what the review did in two columns appended at the end:
  ``review_dropped`` and ``review_edited``;
* kohya's ``dataset_config.toml`` is added or left out on request (``kohya_dir``);
* everything else (the other images, their captions, ``report.html``: the run as it was built) is copied unchanged.

Entries are streamed (the zip is never read whole into memory), written in the source's order with the writer's
fixed dates, so the same review of the same zip gives the same bytes, and to a temporary name renamed at the end, so
a failure leaves no half zip. No torch or gradio here: the Space (``app.py``) only wires this to its page.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shlex
import shutil
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO, TYPE_CHECKING

from pipeline.captions import DATASET_CONFIG, METADATA, CaptionTemplate, caption_name, dataset_config_toml
from pipeline.manifest import split_cell
from pipeline.writer import MANIFEST, zip_entry

if TYPE_CHECKING:
    from PIL import Image

PAGE_SIZE = 24
"""Images a review page shows: a phone draws 24 thumbnails at once without trouble; 2,000 images are 84 pages."""
TABLE = ("#", "keep", "caption")
"""A review page's table: the image's number in the dataset (what a row is matched by, and what its thumbnail is
labelled with, beside its file name), its keep tick, its caption. Three columns, so a phone shows the caption whole."""
REVIEW_COLUMNS = ("review_dropped", "review_edited")
"""Manifest columns a reviewed zip adds after the run's: the images left out, those whose caption was rewritten."""
_AS_WRITTEN = CaptionTemplate("{words}")
"""A template that is only the text: its :meth:`~CaptionTemplate.caption` is the pipeline's own caption cleaning."""
_CHUNK = 1 << 20
MAX_METADATA_MB = 64
"""Largest ``metadata.jsonl`` a review opens (~300,000 images' lines): its records are held in memory, and a
half-megabyte upload can unpack to gigabytes of one line."""


class ReviewError(ValueError):
    """The review cannot be written as asked (an empty caption, an unknown image, not a dataset zip); the message
    says what to change."""


class DatasetGone(ReviewError):
    """The dataset zip being reviewed is no longer there (the Space deletes results after a while)."""


@dataclass(frozen=True)
class Item:
    """One written image of a dataset: its file name in the zip, its caption as written, where it came from."""

    name: str
    caption: str
    source: str
    page: int | None


@dataclass(frozen=True)
class Outcome:
    """What a reviewed zip holds compared with the run's: for the person who asked, in one sentence."""

    images: int
    edited: tuple[str, ...]
    dropped: tuple[str, ...]
    kohya: bool

    def describe(self) -> str:
        changes = [_count(len(self.edited), "caption") + " edited", _count(len(self.dropped), "image") + " left out"]
        kohya = "with" if self.kohya else "without"
        return f"{_count(self.images, 'image')} ({', '.join(changes)}), {kohya} kohya's {DATASET_CONFIG}."


def reviewed_name(dataset: str | Path) -> str:
    """The reviewed zip's name beside the run's: ``gazette_dataset.zip`` → ``gazette_dataset_reviewed.zip``."""
    return f"{Path(dataset).stem}_reviewed.zip"


def kohya_folder(dataset: str | Path, folder: str = "") -> str:
    """Where a reviewed zip's ``dataset_config.toml`` says its images are: ``folder`` when one is given, else
    ``/data/<reviewed zip's stem>`` (the server cannot know the training machine's folders; the file's first lines
    say to extract the zip there or to change ``image_dir``)."""
    return folder.strip() or f"/data/{Path(reviewed_name(dataset)).stem}"


def clean_caption(text: str) -> str:
    """``text`` as the pipeline writes a caption: encodable, on one line (kohya reads a ``.txt`` caption's first line
    only), comma-separated pieces with white space collapsed and empty pieces dropped. Empty when nothing is left."""
    return _AS_WRITTEN.caption("", 1, words=text)


def read_items(dataset: str | Path) -> list[Item]:
    """Every image a finished dataset zip holds, in its ``metadata.jsonl`` order (the run's), with its caption."""
    with _open(dataset) as archive:
        items = [
            Item(record["file_name"], record["text"], record.get("source", ""), record.get("page"))
            for record in _records(archive)
        ]
        missing = [item.name for item in items if item.name not in archive.NameToInfo]
    if missing:
        raise ReviewError(f"{METADATA} names {missing[0]}, which the zip does not hold: it is not a whole dataset.")
    return items


def thumbnails(dataset: str | Path, names: Sequence[str], side: int = 256) -> list[Image.Image]:
    """The images ``names`` of a dataset zip shrunk to at most ``side`` px, for a review page: JPEG's own reduced
    decoding (``draft``) reads a 1 MP image at a fraction of a full decode's work."""
    from PIL import Image

    pictures = []
    with _open(dataset) as archive:
        for name in names:
            try:
                with archive.open(name) as handle, Image.open(handle) as image:
                    image.draft("RGB", (side, side))
                    image.thumbnail((side, side))
                    pictures.append(image.convert("RGB"))
            except (KeyError, OSError, ValueError, Image.DecompressionBombError, zipfile.BadZipFile) as exc:
                reason = str(exc).split(" <")[0]  # PIL names the zip's file object too
                raise ReviewError(f"{name} in the zip is not an image that can be shown ({reason}).") from None
    return pictures


@dataclass
class Review:
    """A review in progress: the dataset's images, the captions changed so far and the images left out, a page at a
    time. Pages hand rows to a table (:data:`TABLE`) and take the edited rows back (:meth:`apply`)."""

    dataset: str
    items: list[Item]
    size: int
    """The run's output size: kohya's ``resolution`` in a ``dataset_config.toml``."""
    captions: dict[str, str] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    page_size: int = PAGE_SIZE

    @classmethod
    def open(cls, dataset: str | Path, size: int) -> Review:
        """The review of a finished dataset zip, nothing changed yet; ``size`` is the run's output size."""
        return cls(str(dataset), read_items(dataset), int(size))

    @property
    def pages(self) -> int:
        return max(1, math.ceil(len(self.items) / self.page_size))

    def page(self, number: int) -> list[Item]:
        """The images of page ``number`` (1-based; out of range is the nearest page)."""
        start = (self.clamp(number) - 1) * self.page_size
        return self.items[start : start + self.page_size]

    def clamp(self, number: int | float | None) -> int:
        """``number`` as a page there is (the first for none)."""
        return min(max(1, int(number or 1)), self.pages)

    def rows(self, number: int) -> list[list[object]]:
        """Page ``number`` as table rows: its images' numbers in the dataset, keep ticks and current captions."""
        start = (self.clamp(number) - 1) * self.page_size
        return [
            [start + i + 1, item.name not in self.dropped, self.captions.get(item.name, item.caption)]
            for i, item in enumerate(self.page(number))
        ]

    def apply(self, rows: Iterable[Sequence[object]]) -> None:
        """Take a page's rows back, matched by their ``#`` (whatever order the table shows them in): a caption that
        differs from the written one, cleaned, is an edit; an unticked image is left out. All or nothing: a kept
        image whose caption is empty raises :class:`ReviewError` and changes nothing."""
        captions, dropped = dict(self.captions), set(self.dropped)
        for row in rows:
            number = _number(row[0]) if len(row) >= len(TABLE) else None
            if number is None or not 1 <= number <= len(self.items):
                continue  # a row the table added: no image of this dataset
            keep, text = row[1:3]
            item = self.items[number - 1]
            cleaned = clean_caption("" if text is None else str(text))
            if _ticked(keep):
                dropped.discard(item.name)
                if not cleaned:
                    raise ReviewError(
                        f"The caption of #{number} {item.name} is empty: write one, or untick the image to leave "
                        "it out."
                    )
            else:
                dropped.add(item.name)
            if cleaned and cleaned != item.caption:
                captions[item.name] = cleaned
            else:
                captions.pop(item.name, None)
        self.captions, self.dropped = captions, dropped

    def choices(self) -> list[tuple[str, int]]:
        """Every page as a menu entry, ``("3: images 49–72", 3)``, to jump to a page of a long run."""
        total = len(self.items)
        return [
            (f"{n}: images {(n - 1) * self.page_size + 1}–{min(n * self.page_size, total)}", n)
            for n in range(1, self.pages + 1)
        ]

    def describe(self, number: int) -> str:
        """Where the review stands, for above the page: the page, the images on it, the changes so far."""
        page, shown = self.clamp(number), self.page(number)
        first = (page - 1) * self.page_size + 1
        return (
            f"Page {page} of {self.pages}: images {first}–{first + len(shown) - 1} of {len(self.items):,} · "
            f"{_count(len(self.captions), 'caption')} edited, {_count(len(self.dropped), 'image')} unticked so far"
        )


def write_review(
    dataset: str | Path,
    target: Path,
    captions: Mapping[str, str] | None = None,
    drop: Iterable[str] = (),
    kohya_dir: str | None = None,
    size: int = 1024,
) -> Outcome:
    """Write ``target``, the reviewed copy of the finished dataset zip ``dataset``: ``captions`` (image name → new
    caption) rewritten, the images in ``drop`` left out, kohya's ``dataset_config.toml`` for images extracted to the
    absolute folder ``kohya_dir`` (its ``resolution`` the run's ``size``), or none when ``kohya_dir`` is ``None``.

    Everything is checked before a byte is written (:class:`ReviewError` says what to change): names that are not
    images of this dataset, a kept image's caption that is empty once cleaned, every image dropped, a relative folder.
    """
    drop = set(drop)
    captions = {name: clean_caption(str(text)) for name, text in (captions or {}).items()}
    if kohya_dir is not None and not _absolute(kohya_dir):
        raise ReviewError(
            f"kohya's image folder must be an absolute path, not {kohya_dir!r}: kohya resolves a relative one from "
            "where training starts, finds no image there and ends without training."
        )
    with _open(dataset) as source:
        written = {record["file_name"]: record["text"] for record in _records(source)}
        unknown = sorted((set(captions) | drop) - set(written))
        if unknown:
            raise ReviewError(f"{unknown[0]} is not an image of this dataset ({_count(len(written), 'image')}).")
        empty = [name for name in written if name in captions and not captions[name] and name not in drop]
        if empty:
            raise ReviewError(f"The caption of {empty[0]} is empty: write one, or drop the image.")
        if written and drop >= set(written):
            raise ReviewError("Every image is left out: nothing would be left to train on.")
        edited = {name: text for name, text in captions.items() if text != written[name] and name not in drop}
        gone = drop | {caption_name(name) for name in drop}
        texts = {caption_name(name): text for name, text in edited.items()}
        partial = target.with_name(target.name + ".partial")
        try:
            with partial.open("wb") as raw, zipfile.ZipFile(raw, "w") as out, _damage_said(Path(dataset).name):
                for info in source.infolist():
                    _copy(source, out, info, edited, texts, drop, gone)
                if kohya_dir is not None:
                    extract = (
                        f"unzip {shlex.quote(target.name)} -d {shlex.quote(kohya_dir)} (elsewhere: set image_dir "
                        "below to that folder, absolute)"
                    )
                    toml = dataset_config_toml(kohya_dir, size, extract=extract)
                    out.writestr(zip_entry(DATASET_CONFIG, zipfile.ZIP_DEFLATED), toml)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    in_order = list(written)
    return Outcome(
        images=len(in_order) - len(drop),
        edited=tuple(name for name in in_order if name in edited),
        dropped=tuple(name for name in in_order if name in drop),
        kohya=kohya_dir is not None,
    )


def _copy(
    source: zipfile.ZipFile,
    out: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    edited: Mapping[str, str],
    texts: Mapping[str, str],
    drop: set[str],
    gone: set[str],
) -> None:
    """One entry of the source into the reviewed zip: left out, rewritten or copied as it is (same compression)."""
    name = info.filename
    if name in gone or name == DATASET_CONFIG:
        return
    entry = zip_entry(name, info.compress_type)
    if name in texts:  # an edited image's kohya caption
        out.writestr(entry, texts[name])
        return
    with source.open(info) as reader, out.open(entry, "w") as writer:
        if name == METADATA:
            _metadata(reader, writer, edited, drop)
        elif name == MANIFEST:
            _manifest(reader, writer, edited, drop)
        else:
            shutil.copyfileobj(reader, writer, _CHUNK)


def _metadata(reader: IO[bytes], writer: IO[bytes], edited: Mapping[str, str], drop: set[str]) -> None:
    """``metadata.jsonl`` line by line: a dropped image's line left out, an edited one's ``text`` replaced, the
    others copied byte for byte."""
    for line in reader:
        record = json.loads(line) if line.strip() else None
        name = record.get("file_name") if isinstance(record, dict) else None
        if name in drop:
            continue
        if name in edited:
            line = (json.dumps(record | {"text": edited[name]}, ensure_ascii=False) + "\n").encode("utf-8")
        writer.write(line)


def _manifest(reader: IO[bytes], writer: IO[bytes], edited: Mapping[str, str], drop: set[str]) -> None:
    """``manifest.csv`` row by row: each page's dropped images out of ``outputs`` and the lists beside it, and what
    the review did named in ``review_dropped`` / ``review_edited`` (added to those of an earlier review)."""
    rows = csv.DictReader(io.TextIOWrapper(reader, encoding="utf-8", newline=""))
    columns = list(rows.fieldnames or [])
    columns += [c for c in REVIEW_COLUMNS if c not in columns]
    text = io.TextIOWrapper(writer, encoding="utf-8", newline="")
    table = csv.DictWriter(text, fieldnames=columns, lineterminator="\n")
    table.writeheader()
    for row in rows:
        outputs = split_cell(row.get("outputs"))
        keep = [i for i, name in enumerate(outputs) if name not in drop]
        for column in ("outputs", "sizes", "fingerprints"):
            values = split_cell(row.get(column))
            if len(values) == len(outputs):  # one per output: they go with their image
                row[column] = ";".join(values[i] for i in keep)
        row["undersized"] = ";".join(n for n in split_cell(row.get("undersized")) if n not in drop)
        row["review_dropped"] = ";".join(split_cell(row.get("review_dropped")) + [n for n in outputs if n in drop])
        earlier = split_cell(row.get("review_edited"))
        now = [n for n in outputs if n in edited and n not in earlier]
        row["review_edited"] = ";".join([n for n in earlier if n not in drop] + now)
        table.writerow({column: row.get(column) or "" for column in columns})
    text.flush()
    text.detach()


def _records(archive: zipfile.ZipFile) -> Iterator[dict]:
    """``metadata.jsonl``'s records, streamed; a line that is no image's record is a :class:`ReviewError`."""
    info = archive.getinfo(METADATA)
    if info.file_size > MAX_METADATA_MB << 20:  # the zip stops a reader at this size: it bounds what is read
        raise ReviewError(
            f"{METADATA} unpacks to {info.file_size >> 20} MB, more than a review opens ({MAX_METADATA_MB} MB)."
        )
    with archive.open(info) as handle, _damage_said(f"{METADATA} in the zip"):
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("file_name", "text")):
                raise ReviewError(f"{METADATA} line {number} is not an image's record (file_name and text).")
            yield record


@contextmanager
def _damage_said(name: str) -> Iterator[None]:
    """A damaged entry of the zip (its data, or a CSV field past the csv module's limit) as a :class:`ReviewError`."""
    try:
        yield
    except (zipfile.BadZipFile, csv.Error, UnicodeDecodeError, EOFError) as exc:
        raise ReviewError(f"{name} is damaged ({exc}).") from None


@contextmanager
def _open(dataset: str | Path) -> Iterator[zipfile.ZipFile]:
    """A dataset zip opened for reading, its failures as :class:`ReviewError` sentences."""
    path = Path(dataset)
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise DatasetGone(f"{path.name} is no longer there.") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise ReviewError(f"{path.name} is not a zip that can be read ({exc}).") from None
    with archive:
        if METADATA not in archive.NameToInfo or MANIFEST not in archive.NameToInfo:
            raise ReviewError(f"{path.name} is not a dataset zip made by this pipeline: it has no {METADATA}.")
        yield archive


def _absolute(folder: str) -> bool:
    """Absolute on the machine that trains, whichever it is: ``/data/set``, ``C:\\data\\set``."""
    return PurePosixPath(folder).is_absolute() or PureWindowsPath(folder).is_absolute()


def _number(value: object) -> int | None:
    """A table's ``#`` cell (a number from the browser, maybe ``3.0``; a string from a hand-made request)."""
    try:
        return int(float(str(value)))
    except ValueError:
        return None


def _ticked(value: object) -> bool:
    """A table's keep cell: a boolean from the browser, a string from a hand-made request."""
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"
