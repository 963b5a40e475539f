"""Measurements written into ``docs/`` by the benchmark that made them, never copied there by hand.

``--doc docs/X.md`` on a benchmark replaces the block it wrote last time (between its two markers) with its
new tables, the command that made them, the date and the machine; a doc without the block gets it appended.
Prose around the block is the writer's; the numbers inside are the script's.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """The machine in a few words: the numbers mean nothing without it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} cores, {platform.machine()}, Python {platform.python_version()}"


def write_section(doc: Path, body: str, argv: list[str] | None = None) -> None:
    """Put ``body`` in ``doc`` between the calling script's markers, with how and where it was measured."""
    script = Path(sys.argv[0]).resolve().relative_to(ROOT).as_posix()
    begin, end = f"<!-- begin {script} -->", f"<!-- end {script} -->"
    command = shlex.join(["python", script, *_portable(argv if argv is not None else sys.argv[1:])])
    stamp = f"{datetime.date.today().isoformat()}, {machine()}"
    block = f"{begin}\n_Written by `{command}` on {stamp}; do not edit by hand._\n\n{body.strip()}\n{end}"
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")
    print(f"written into {doc}")


def _portable(args: list[str]) -> list[str]:
    """Arguments as a reader would type them: the data folder as ``DATA``, the repository's paths relative."""
    out = []
    for arg in args:
        path = Path(arg)
        if path.is_absolute() or arg.startswith(".."):
            resolved = path.resolve()
            parts = resolved.parts
            if "data" in parts:  # .../shared/data/pdfs → DATA/pdfs
                index = len(parts) - 1 - parts[::-1].index("data")
                arg = "/".join(["DATA", *parts[index + 1 :]])
            elif resolved.is_relative_to(ROOT):
                arg = resolved.relative_to(ROOT).as_posix()
        out.append(arg)
    return out
