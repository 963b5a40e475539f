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
    tree = [root]
    for sample in itertools.count():
        if process.poll() is not None:
            break
        # Listing the tree (~1.3 ms) and reading PSS (~1 ms per process, /proc/*/smaps) are slow next to RSS
        # (0.02 ms): on a 2-core machine a monitor doing all of them every 20 ms would slow the parallel run
        # it measures. RSS every poll, the tree every 5th, PSS every 10th.
        if sample % 5 == 0:
            with contextlib.suppress(psutil.NoSuchProcess):
                tree = [root, *root.children(recursive=True)]
        total = total_pss = 0
        with_pss = sample % 10 == 0
        for proc in tree:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                total += proc.memory_info().rss
                total_pss += proc.memory_full_info().pss if with_pss else 0
        peak, peak_pss = max(peak, total), max(peak_pss, total_pss)
        time.sleep(poll_s)
    stdout = process.stdout.read() if process.stdout else ""
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}")
    return Measurement(seconds, peak / 2**20, peak_pss / 2**20, stdout)
