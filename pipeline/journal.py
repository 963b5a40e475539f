"""A run's progress, appended page by page, so a killed run (even ``kill -9``) resumes where it stopped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

PageKey = tuple[str, "int | None"]
"""``(resolved PDF path, 1-based page)``; page ``None`` for a file that could not be opened."""


class ResumeMismatch(Exception):
    """The progress file belongs to a run with other inputs or options."""


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
        lines = self._committed_lines() if resume else []
        if lines and json.loads(lines[0]).get("run") != run_id:
            raise ResumeMismatch(
                f"{path} belongs to an interrupted run with other inputs or options; "
                "rerun that command to finish it, or pass --no-resume to start over"
            )
        for line in lines[1:]:
            entry = json.loads(line)
            self.done.add((entry["key"][0], entry["key"][1]))
            self.zip_entries.extend(entry.get("zip", ()))
            self.zip_end = entry.get("end", self.zip_end)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("w", encoding="utf-8")
        self._file.write("".join(lines) or json.dumps({"run": run_id}) + "\n")
        self._file.flush()

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

    def _committed_lines(self) -> list[str]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        while lines and not _is_complete(lines[-1]):
            lines.pop()
        return lines


def _is_complete(line: str) -> bool:
    if not line.endswith("\n"):
        return False
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True
