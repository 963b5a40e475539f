"""The Space's folders on its shared disk: one work folder per PDF job, case reports, and their sweeping.

Every visitor shares the disk, so new work is refused while it is nearly full, and what a job that ended abnormally
left behind is swept by the next one.
"""

import atexit
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import gradio as gr

from space import settings

WORK_ROOT = Path(tempfile.mkdtemp(prefix="space-pdf-"))
"""One folder per PDF job (its unpacked zips, its output, its process's temporary files), removed at exit."""
REPORTS = Path(tempfile.mkdtemp(prefix="space-reports-"))
"""The cattle tab's case reports (Gradio serves its own copy of each)."""
atexit.register(shutil.rmtree, WORK_ROOT, ignore_errors=True)
atexit.register(shutil.rmtree, REPORTS, ignore_errors=True)


def check_disk() -> None:
    """New work is refused while the disk has less than ``MIN_FREE_DISK_MB`` free (it is shared by every visitor)."""
    free_mb = shutil.disk_usage(WORK_ROOT).free / 2**20
    if free_mb < settings.MIN_FREE_DISK_MB:
        raise gr.Error(f"The Space's disk is nearly full ({free_mb:,.0f} MB free): please try again later.")


def work_dir() -> Path:
    """A fresh folder for one request's zip (older requests' folders swept first)."""
    path = swept(WORK_ROOT) / uuid.uuid4().hex
    path.mkdir()
    return path


def swept(root: Path) -> Path:
    """``root`` without its folders older than ``WORK_MAX_AGE_S`` (one request's files each)."""
    now = time.time()
    for old in root.iterdir():
        if now - old.stat().st_mtime > settings.WORK_MAX_AGE_S:
            shutil.rmtree(old, ignore_errors=True)
    return root
