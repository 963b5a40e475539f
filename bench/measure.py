"""Run a command and measure wall time and the peak RSS of its whole process tree (workers included)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Measurement:
    seconds: float
    peak_rss_mb: float
    stdout: str


def measure(command: Sequence[str], poll_s: float = 0.02) -> Measurement:
    """Run ``command`` in the repository root; the peak is of the summed RSS of it and its descendants."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    root = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        total = 0
        try:
            for proc in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            break
        peak = max(peak, total)
        time.sleep(poll_s)
    stdout = process.stdout.read() if process.stdout else ""
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}")
    return Measurement(seconds, peak / 2**20, stdout)
