"""Fingerprint every file a run writes, for each output layout and engine, to show that a refactor changed no byte.

``python bench/output_digest.py DATA/pdfs --save digests.json`` runs ``python -m pipeline`` (the CLI, whose
interface a refactor keeps) on the PDFs once per case below and records the SHA-256 of every file it wrote: each
zip's entries, its structure (entry order, offsets, sizes, CRCs: all but the entries' timestamps) and the
zip file itself, each folder's files. ``--compare digests.json`` (a file saved by another
checkout, e.g. the commit before a refactor) prints, per case, how many files are identical and names any that
differ or are missing. Run it from the checkout to measure; the cases cover zip and folder, shards of both,
the local engine with 1 and 2 workers and Ray.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES: dict[str, list[str]] = {
    "zip": ["-o", "{out}/out.zip", "--workers", "1"],
    "folder": ["-o", "{out}/dataset/", "--workers", "1"],
    "zip, 2 workers": ["-o", "{out}/out.zip", "--workers", "2"],
    "article (sigma, square)": ["-o", "{out}/out.zip", "--filter", "sigma", "--fit", "square", "--workers", "2"],
    "zip shards": ["-o", "{out}/out.zip", "--shard-size", "4", "--workers", "2"],
    "folder shards": ["-o", "{out}/dataset/", "--shard-size", "4", "--workers", "2"],
    "ray": ["-o", "{out}/out.zip", "--engine", "ray", "--workers", "2"],
}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (zips also entry by entry), relative name → SHA-256."""
    files: dict[str, str] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        files[name] = digest(path.read_bytes())
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    files[f"{name}!{info.filename}"] = digest(archive.read(info))
                # the zip's structure without its clock: entry order, offsets, sizes, CRCs, compression
                structure = [
                    (i.filename, i.header_offset, i.CRC, i.compress_size, i.file_size, i.compress_type)
                    for i in archive.infolist()
                ]
                files[f"{name}!(entries)"] = digest(repr(structure).encode())
    return files


def run_cases(inputs: list[str], cases: list[str]) -> dict[str, dict[str, str]]:
    results = {}
    for case in cases:
        with tempfile.TemporaryDirectory() as out:
            args = [arg.format(out=out) for arg in CASES[case]]
            start = time.perf_counter()
            command = [sys.executable, "-m", "pipeline", *inputs, *args]
            subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
            results[case] = fingerprint(Path(out))
            print(f"{case}: {len(results[case])} files, {time.perf_counter() - start:.1f} s", flush=True)
    return results


def compare(ours: dict[str, dict[str, str]], theirs: dict[str, dict[str, str]]) -> bool:
    same_everywhere = True
    for case, files in ours.items():
        other = theirs.get(case)
        if other is None:
            print(f"{case}: not in the saved digests")
            continue
        differ = sorted(name for name in files.keys() & other.keys() if files[name] != other[name])
        missing = sorted(other.keys() - files.keys())
        extra = sorted(files.keys() - other.keys())
        same = len(files.keys() & other.keys()) - len(differ)
        verdict = "byte-identical" if not (differ or missing or extra) else "DIFFERENT"
        print(f"{case}: {same} of {len(other)} files identical: {verdict}")
        for label, names in (("differ", differ), ("missing", missing), ("new", extra)):
            if names:
                print(f"  {label}: {', '.join(names[:8])}{' …' if len(names) > 8 else ''}")
        same_everywhere &= verdict == "byte-identical"
    return same_everywhere


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="PDFs or folders of PDFs (e.g. DATA/pdfs)")
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="run only these (default: all)")
    parser.add_argument("--save", type=Path, help="write the digests to this JSON file")
    parser.add_argument("--compare", type=Path, help="compare with digests saved by another checkout")
    args = parser.parse_args()
    inputs = [str(Path(item).resolve()) for item in args.inputs]
    ours = run_cases(inputs, args.case or list(CASES))
    if args.save:
        args.save.write_text(json.dumps(ours, indent=1, sort_keys=True))
    if args.compare:
        return 0 if compare(ours, json.loads(args.compare.read_text())) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
