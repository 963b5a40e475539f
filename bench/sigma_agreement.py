"""Do the pipeline's ``--filter sigma`` decisions match the article's own method, page for page?

``python bench/sigma_agreement.py INPUT...`` runs ``bench/reference.py`` (the article's code) and
``python -m pipeline --filter sigma --threshold 45`` on the same PDFs and prints how many decisions agree,
the largest σ difference, and the pages closest to the threshold.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        reference = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "reference.py"), *args.inputs, "-o", f"{tmp}/ref"],
            check=True,
            capture_output=True,
            text=True,
        )
        pipeline = [sys.executable, "-m", "pipeline", *args.inputs, "-o", f"{tmp}/out.zip"]
        subprocess.run(
            [*pipeline, "--filter", "sigma", "--threshold", "45", "--no-resume"],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        with zipfile.ZipFile(f"{tmp}/out.zip") as archive:
            rows = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))
    ours = {(row["source"], int(row["page"])): row for row in rows if row["page"]}
    theirs = json.loads(reference.stdout)["rows"]
    agree = sum((ours[(r["source"], r["page"])]["kept"] == "true") == r["kept"] for r in theirs)
    deltas = [abs(float(ours[(r["source"], r["page"])]["score"]) - r["sigma"]) for r in theirs]
    nearest = sorted(theirs, key=lambda r: abs(r["sigma"] - 45))[:3]
    print(f"{agree} of {len(theirs)} decisions agree; largest |σ difference| {max(deltas):.4f}")
    print("closest to 45:", ", ".join(f"{r['source']} p{r['page']} σ={r['sigma']:.2f}" for r in nearest))


if __name__ == "__main__":
    main()
