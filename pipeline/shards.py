"""Output that outgrows one file: numbered shards, each a complete dataset of ``shard_size`` pages, and an index.

``-o out.zip --shard-size N`` writes ``out-00000.zip``, ``out-00001.zip``… beside ``out.index.json`` and
``out.report.html``; ``-o DIR/`` writes ``DIR/00000/``… (each with its images, captions, ``manifest.csv`` and
``metadata.jsonl``: ``datasets.load_dataset("imagefolder", data_dir=DIR)`` loads them all) and
``DIR/index.json``, ``DIR/report.html``. Shard boundaries are page counts in run order, so the shards do not
depend on the engine or the number of workers. The output may be an fsspec URL (``s3://bucket/ds/``): shards
are written in a local staging folder and uploaded as each one closes, then deleted here, so local disk holds
one shard at a time.

Resume: the open shard resumes as an ordinary output (its own progress file); closed shards are listed, with
their pages' keys and manifest rows, in a state file (``.shards`` in the staging folder), removed at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from pipeline.journal import PageKey, ResumeMismatch
from pipeline.manifest import PageRecord
from pipeline.source import is_url
from pipeline.tasks import PageImage
from pipeline.writer import OutputError, Writer

INDEX = "index.json"


class ShardUnit(Protocol):
    """What one shard is, as :mod:`pipeline.layout`'s ``ZipLayout`` and ``FolderLayout`` are: made from its local
    path, it opens its writer and lists, reads and removes its files; its static methods name the shards and the
    files of the whole sharded output. (This module names no layout: ``layout`` imports it, never the reverse.)"""

    path: Path
    progress: Path

    def __init__(self, path: Path) -> None: ...

    def open(self, run_id: str, resume: bool) -> Writer: ...

    def files(self) -> list[Path]: ...

    def read(self, name: str) -> bytes | None: ...

    def remove(self) -> None: ...

    @staticmethod
    def shard(base: str, number: int) -> str: ...

    @staticmethod
    def beside(base: str, name: str) -> str: ...

    @staticmethod
    def top(base: str, name: str) -> str: ...

    @staticmethod
    def state(base: str) -> str: ...

    @staticmethod
    def staging(path: Path) -> Path: ...


class ShardedJournal:
    """The run's progress across shards: what the orchestrator reads from a journal (done pages, rows)."""

    def __init__(self, writer: ShardedWriter, closed_keys: set[PageKey]) -> None:
        self._writer = writer
        self.done = closed_keys | (writer.current.journal.done if writer.current is not None else set())

    def rows(self) -> Iterator[dict[str, str]]:
        """Manifest rows of every committed page in commit order, read back from disk (never all in memory)."""
        for shard in self._writer.read_state():
            yield from shard["rows"]
        if self._writer.current is not None:
            yield from self._writer.current.journal.rows()


class ShardedWriter:
    """A :class:`pipeline.writer.Writer` that writes ``target`` (a path or an fsspec URL) as shards of kind ``unit``
    and starts a new one every ``shard_size`` committed pages; with ``resume``, an interrupted run of the same
    ``run_id`` is continued (``pipeline.layout.ShardsLayout`` opens it)."""

    def __init__(self, target: str, shard_size: int, unit: type[ShardUnit], run_id: str, resume: bool) -> None:
        text = target
        self.remote = is_url(text)
        self.unit = unit
        self.shard_size, self._run_id = shard_size, run_id
        if self.remote:
            import fsspec

            self._fs, base = fsspec.core.url_to_fs(text)
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            self._staging = Path(tempfile.gettempdir()) / f"pipeline-shards-{digest}"
            self.path = self._staging
        else:
            self._fs, base = None, text
            self.path = Path(text)
            self._staging = self.unit.staging(self.path)
        self._base = base.rstrip("/")
        try:
            self._staging.mkdir(parents=True, exist_ok=True)
            self._start_state(resume)
        except OSError as exc:
            raise OutputError(f"cannot write {text}: {exc.strerror or exc}") from None
        self.closed: list[dict] = []
        """Each closed shard's name, pages, images and bytes (their keys and rows stay in the state file)."""
        closed_keys: set[PageKey] = set()
        for shard in self.read_state():
            closed_keys.update(tuple(key) for key in shard.pop("keys"))
            del shard["rows"]
            self.closed.append(shard)
        self.current: Writer | None = None
        self._keys: list[PageKey] = []
        """Pages committed to the open shard (a journal's ``done`` holds only those of an earlier run)."""
        self._open_shard(resume)
        if self.current is not None and len(self._keys) >= self.shard_size:  # killed while closing it
            closed_keys.update(self._keys)
            self._close_shard()
        self.journal = ShardedJournal(self, closed_keys)

    def commit(self, key: PageKey, record: PageRecord, images: list[PageImage], captions: list[str]) -> None:
        if self.current is None:
            self._open_shard(resume=False)
        self.current.commit(key, record, images, captions)
        self._keys.append(key)
        if len(self._keys) >= self.shard_size:
            self._close_shard()

    def read(self, name: str) -> bytes:
        """A written image, to rebuild the dedupe index on resume: from the open shard or a closed one still on
        local disk (a remote output's closed shards are uploaded and gone: ``FileNotFoundError``)."""
        if self.current is not None:
            try:
                return self.current.read(name)
            except (KeyError, OSError):
                pass
        for number in range(len(self.closed)):
            data = self._local(number).read(name)
            if data is not None:
                return data
        raise FileNotFoundError(f"{name} is in no shard on this disk")

    def size(self) -> int:
        """Bytes of output on local disk now (closed shards of a remote output are uploaded and gone)."""
        closed = 0 if self.remote else sum(shard["bytes"] for shard in self.closed)
        return closed + (self.current.size() if self.current is not None else 0)

    def close(self, complete: bool, files: dict[str, Iterable[str]]) -> None:
        """Close the open shard; when the run is complete, write (upload) the index and ``files`` beside it."""
        if self.current is not None:
            if complete:
                self._close_shard()
            else:
                self.current.close(False, {})
                self.current = None
        if not complete:
            return
        index = {
            "shard_size": self.shard_size,
            "pages": sum(shard["pages"] for shard in self.closed),
            "images": sum(shard["images"] for shard in self.closed),
            "shards": self.closed,
        }
        self._publish(self.unit.top(self._base, INDEX), json.dumps(index, indent=1) + "\n")
        for name, chunks in files.items():
            self._publish(self.unit.top(self._base, name), "".join(chunks))
        self._state_path().unlink(missing_ok=True)
        if self.remote:
            shutil.rmtree(self._staging, ignore_errors=True)

    def shard_name(self, number: int) -> str:
        """``out-00003.zip`` or ``00003`` (a folder)."""
        return self.unit.shard(self._base, number)

    def _open_shard(self, resume: bool) -> None:
        number = len(self.closed)
        local = self._local(number)
        if not local.progress.exists() and resume:
            return  # nothing of this shard yet: opened with its first page
        self.current = local.open(f"{self._run_id}-{number}", resume)
        self._keys = list(self.current.journal.done)

    def _close_shard(self) -> None:
        shard, number = self.current, len(self.closed)
        rows, keys = list(shard.journal.rows()), self._keys
        shard.close(False, {})  # its progress file stays until the state file lists the shard
        local, target = self._local(number), self.unit.beside(self._base, self.shard_name(number))
        files = local.files()
        size = sum(file.stat().st_size for file in files)
        if self.remote:  # the shard's data, not its progress file
            for file in files:
                self._fs.put_file(str(file), target if file == local.path else f"{target}/{file.name}")
        images = sum(len(row["outputs"].split(";")) for row in rows if row["outputs"])
        record = {"name": self.shard_name(number), "pages": len(rows), "images": images, "bytes": size}
        with self._state_path().open("a", encoding="utf-8") as state:
            state.write(json.dumps({**record, "keys": keys, "rows": rows}, separators=(",", ":")) + "\n")
        self.closed.append(record)
        shard.journal.path.unlink(missing_ok=True)
        if self.remote:
            local.remove()
        self.current, self._keys = None, []

    def _local(self, number: int) -> ShardUnit:
        return self.unit(self._staging / self.shard_name(number))

    def _publish(self, target: str, text: str) -> None:
        if self.remote:
            with self._fs.open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
        else:
            Path(target).write_text(text, encoding="utf-8")

    def _state_path(self) -> Path:
        return self._staging / self.unit.state(self._base)

    def _start_state(self, resume: bool) -> None:
        """Keep the closed shards of an interrupted run of the same ``run_id`` (its header names the run), a
        line torn by a kill dropped; start a new state file otherwise."""
        path = self._state_path()
        try:
            lines = path.read_text(encoding="utf-8").splitlines() if resume and path.exists() else []
            header = json.loads(lines[0]).get("run") if lines else self._run_id
        except (ValueError, AttributeError) as exc:
            raise ResumeMismatch(
                f"{path} is damaged ({type(exc).__name__}: {exc}); pass --no-resume to start over, or delete it"
            ) from None
        if header != self._run_id:
            raise ResumeMismatch(
                f"{path} belongs to an interrupted run with other inputs or options; "
                "rerun that command to finish it, or pass --no-resume to start over"
            )
        kept = lines[:1]
        for line in lines[1:]:
            try:
                json.loads(line)
            except json.JSONDecodeError:
                break
            kept.append(line)
        # written beside it and moved over it: a kill while rewriting it forgot every closed shard
        fresh = path.with_name(f"{path.name}.new")
        fresh.write_text("".join(f"{line}\n" for line in kept or [json.dumps({"run": self._run_id})]))
        os.replace(fresh, path)

    def read_state(self) -> Iterator[dict]:
        """The closed shards' state lines, keys and manifest rows included."""
        with self._state_path().open(encoding="utf-8") as handle:
            next(handle)
            for line in handle:
                yield json.loads(line)
