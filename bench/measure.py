"""Run a command and measure wall time and the peak RSS of its whole process tree (workers included)."""

from __future__ import annotations

import contextlib
import itertools
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
    """Peak of the summed RSS of the process tree (shared library pages counted once per process)."""
    peak_pss_mb: float
    """Peak of the summed PSS (shared pages split between the processes that map them): the tree's real share."""
    stdout: str


def measure(command: Sequence[str], poll_s: float = 0.02) -> Measurement:
    """Run ``command`` in the repository root; the peak is of the summed RSS of it and its descendants."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    root = psutil.Process(process.pid)
    peak = peak_pss = 0
    for sample in itertools.count():
        if process.poll() is not None:
            break
        total = total_pss = 0
        with_pss = sample % 5 == 0  # PSS reads /proc/*/smaps: slower, so sampled every 5th poll
        try:
            for proc in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    total += proc.memory_info().rss
                    total_pss += proc.memory_full_info().pss if with_pss else 0
        except psutil.NoSuchProcess:
            break
        peak, peak_pss = max(peak, total), max(peak_pss, total_pss)
        time.sleep(poll_s)
    stdout = process.stdout.read() if process.stdout else ""
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}")
    return Measurement(seconds, peak / 2**20, peak_pss / 2**20, stdout)
