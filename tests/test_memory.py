"""Memory must not grow with the number of pages: RSS after 300 pages vs after 30, in a fresh process."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from factories import engraving, mixed_page, pdf_from_images, text_page

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys, psutil
from pipeline import Options, run
rss = {}
def on_page(record, progress):
    if progress.done in (30, 300):
        rss[progress.done] = psutil.Process().memory_info().rss
options = Options(filter="sigma", fit="square", upscale=True, min_side=1, dedupe=None)
summary = run([sys.argv[1]], sys.argv[2], options, on_page)
print(json.dumps({"rss": rss, "kept": summary.kept, "pages": summary.pages}))
"""


def test_rss_after_300_pages_stays_within_a_margin_of_rss_after_30(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    kinds = (text_page, mixed_page, lambda seed: engraving(800, 1100, seed))
    pages = [kinds[int(rng.integers(3))](seed=seed) for seed in range(300)]
    pdf = pdf_from_images(tmp_path / "three hundred.pdf", pages)
    del pages
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(pdf), str(tmp_path / "out.zip")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    report = json.loads(result.stdout)
    assert report["pages"] == 300 and report["kept"] > 100  # enough 1024² images went through
    growth_mb = (report["rss"]["300"] - report["rss"]["30"]) / 2**20
    # Each kept page is ~0.3 MB of JPEG and ~3 MB of pixels: holding on to them would add far more than this.
    assert growth_mb < 25, f"RSS grew by {growth_mb:.1f} MB between page 30 and page 300"
