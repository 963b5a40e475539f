"""What the article's per-page cleanup costs and saves: pages/s and peak RSS for several ``--gc-every``.

``python bench/cleanup_cadence.py INPUT... [--filter sigma]``; each cadence runs in a fresh process.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from measure import measure

CADENCES = (1, 10, 100, 10**9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--filter", default="sigma")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cadence (the best time is kept)")
    args = parser.parse_args()
    print(f"{'gc every':>10} {'pages/s':>8} {'seconds':>8} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for every in CADENCES:
            runs = []
            for _ in range(args.repeat):
                command = [sys.executable, "-m", "pipeline", *args.inputs, "-o", str(Path(tmp) / "out.zip")]
                runs.append(measure([*command, "--filter", args.filter, "--gc-every", str(every)]))
            best = min(runs, key=lambda m: m.seconds)
            pages = int(best.stdout.split(" pages")[0].split()[-1])
            label = "never" if every == 10**9 else str(every)
            peak = max(m.peak_rss_mb for m in runs)
            print(f"{label:>10} {pages / best.seconds:8.2f} {best.seconds:8.1f} {peak:12.0f}")


if __name__ == "__main__":
    main()
