"""A run's progress, appended page by page, so a killed run (even ``kill -9``) resumes where it stopped."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; two runs on one output are the user's to avoid
    fcntl = None

PageKey = tuple[str, "int | None"]
"""``(resolved PDF path, 1-based page)``; page ``None`` for a file that could not be opened."""


class ResumeMismatch(Exception):
    """The progress file belongs to a run with other inputs or options, or is damaged."""


class OutputError(Exception):
    """The output cannot be created or written (or another run is writing it); nothing can be done."""


class Journal:
    """JSON lines: a header naming the run, then one line per page committed to the output.

    A page's line is written only after its images are flushed to the output, so every line describes
    data that is there; a torn last line (killed mid-write) is dropped on resume. The manifest is built
    from these lines at the end, so no page's row is held in memory during the run.
    """

    def __init__(self, path: Path, run_id: str, resume: bool) -> None:
        self.path = path
        self.done: set[PageKey] = set()
        self.zip_entries: list[dict] = []
        self.zip_end: int | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        # Opened for appending and locked before it is read: a second run on the same output stops here, and the
        # progress is never rewritten (a kill while rewriting it lost every page done), only a torn tail cut off.
        self._file = path.open("a", encoding="utf-8")
        try:
            _lock(self._file, path)
            lines, length = self._committed_lines() if resume else ([], 0)
            self._read(lines, run_id)
        except BaseException:
            self._file.close()
            raise
        os.truncate(path, length)
        if not lines:
            self._file.write(json.dumps({"run": run_id}) + "\n")
            self._file.flush()

    def _read(self, lines: list[str], run_id: str) -> None:
        """The done pages, zip entries and zip end of a run's committed ``lines`` (its header first)."""
        number = 1
        try:
            if lines and json.loads(lines[0]).get("run") != run_id:
                raise ResumeMismatch(
                    f"{self.path} belongs to an interrupted run with other inputs or options; "
                    "rerun that command to finish it, or pass --no-resume to start over"
                )
            for number in range(2, len(lines) + 1):
                entry = json.loads(lines[number - 1])
                self.done.add((entry["key"][0], entry["key"][1]))
                self.zip_entries.extend(entry.get("zip", ()))
                self.zip_end = entry.get("end", self.zip_end)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            raise ResumeMismatch(
                f"{self.path} is damaged at line {number} ({type(exc).__name__}: {exc}); pass --no-resume to start "
                "over, or delete it"
            ) from None

    @property
    def resumed(self) -> bool:
        return bool(self.done)

    def commit(
        self,
        key: PageKey,
        row: dict[str, str],
        metadata: list[str] = (),
        zip_entries: list[dict] = (),
        end: int | None = None,
    ) -> None:
        """Record one page as done (call after its data is flushed); ``metadata`` are its metadata.jsonl lines."""
        entry: dict = {"key": list(key), "row": row}
        if metadata:
            entry["meta"] = metadata
        if zip_entries:
            entry["zip"] = zip_entries
        if end is not None:
            entry["end"] = end
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self._file.flush()

    def rows(self) -> Iterator[dict[str, str]]:
        """Manifest rows of every committed page, in commit order (read back from disk)."""
        for entry in self._entries():
            yield entry["row"]

    def metadata(self) -> Iterator[str]:
        """``metadata.jsonl`` lines of every committed image, in commit order."""
        for entry in self._entries():
            yield from entry.get("meta", ())

    def _entries(self) -> Iterator[dict]:
        self._file.flush()
        with self.path.open(encoding="utf-8") as handle:
            next(handle)
            for line in handle:
                yield json.loads(line)

    def close(self, remove: bool) -> None:
        """Close; ``remove`` once the run is complete (the progress file is only for resuming)."""
        self._file.close()
        if remove:
            self.path.unlink(missing_ok=True)

    def _committed_lines(self) -> tuple[list[str], int]:
        """The file's lines but a torn last one (killed mid-write), and their length in bytes."""
        data = self.path.read_bytes()
        lines = data.splitlines(keepends=True)
        while lines and not _is_complete(lines[-1]):
            lines.pop()
        try:
            return [line.decode("utf-8") for line in lines], sum(map(len, lines))
        except UnicodeDecodeError as exc:
            raise ResumeMismatch(
                f"{self.path} is damaged ({exc}); pass --no-resume to start over, or delete it"
            ) from None


def _is_complete(line: bytes) -> bool:
    if not line.endswith(b"\n"):
        return False
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _lock(file: object, path: Path) -> None:
    """Hold ``path`` for this run until it closes the file (or dies): two runs writing one output made a corrupt
    zip that the first one reported as done."""
    if fcntl is None:
        return
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise OutputError(
            f"another run is writing this output now ({path} is in use); wait for it, or write elsewhere"
        ) from None
