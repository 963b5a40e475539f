"""Hostile and unlucky inputs through the CLI: does every run finish, with a row per page and bounded memory?

Generates each case, runs ``python -m pipeline CASE -o out --workers 1`` in a fresh process (peak RSS of the
whole tree, sampled), and prints the exit code, rows vs pages, images written vs named, rows refused as not a PDF
(HTML, SVG, images named ``.pdf``), manifest cells a spreadsheet would run as formulas, output names holding
bidirectional controls, and peak memory. Then: processes left after a kill -9 (local engine and Ray), the disk
one request of three zip bombs takes (``gather_uploads`` with the Space's budget), URL inputs from a loopback
server (presigned URLs, a drip-fed download under ``--max-seconds``, a 500, a redirect loop), and what a download
interrupted by ``kill -9`` (then rerun) or SIGTERM leaves in the temporary folder.
``--repo DIR`` runs another checkout's pipeline on the same cases (e.g. the commit before a fix).

    python bench/hostile_inputs.py [--repo DIR] [--keep FOLDER] [--parts cli kill kill-ray request remote signals]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psutil
import pymupdf
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "tests"))  # the hostile HTTP server the tests use too
from factories import serve  # noqa: E402


def _scan_pdf(path: Path, seed: int = 0, pages: int = 1) -> Path:
    """A small grey JPEG scan per page: a picture (noise blocks) the judges keep."""
    rng = np.random.default_rng(seed)
    doc = pymupdf.open()
    for _ in range(pages):
        blocks = np.kron(rng.integers(0, 255, (32, 24), dtype=np.uint8), np.ones((32, 32), dtype=np.uint8))
        data = io.BytesIO()
        Image.fromarray(blocks).save(data, format="JPEG", quality=80)
        page = doc.new_page(width=300, height=400)
        page.insert_image(page.rect, stream=data.getvalue())
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


def make_cases(folder: Path) -> dict[str, tuple[Path, int]]:
    """Case name → (input, pages expected in the manifest)."""
    cases: dict[str, tuple[Path, int]] = {}
    names = folder / "names"
    _scan_pdf(names / "plain.pdf").rename(os.fsdecode(os.fsencode(names) + b"/caf\xe9 \xff.pdf"))
    cases["file name not UTF-8"] = (names, 1)

    same = folder / "same"
    for number, rel in enumerate(("c1/x.pdf", "c2/x.pdf", "c3/x~2.pdf")):
        _scan_pdf(same / rel, seed=number)
    cases["c1/x, c2/x, c3/x~2"] = (same, 3)

    long = folder / "long"
    _scan_pdf(long / ("a" * 250 + ".pdf"))
    cases["250-character name"] = (long, 1)

    poster = folder / "poster.pdf"
    doc = pymupdf.open()
    for _ in range(4):
        doc.new_page(width=14_400, height=14_400).insert_text((100, 200), "A poster " * 50, fontsize=40)
    doc.save(poster)
    cases["4 pages of 14,400 pt"] = (poster, 4)

    jpx = folder / "jpx.pdf"
    picture = io.BytesIO()
    Image.new("L", (20_000, 20_000), 200).save(picture, format="JPEG2000", quality_mode="rates", quality_layers=[200])
    doc = pymupdf.open()
    for _ in range(2):
        doc.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792), stream=picture.getvalue())
    doc.save(jpx)
    cases[f"2 pages, 20,000² JPX ({jpx.stat().st_size / 1024:.1f} KB)"] = (jpx, 2)

    fakes = folder / "fakes"  # MuPDF opens each of these as pages whatever the name: refused by content
    fakes.mkdir(parents=True, exist_ok=True)
    (fakes / "login.pdf").write_bytes(b"<!DOCTYPE html><html><body><form>Sign in</form></body></html>\n")
    (fakes / "drawing.pdf").write_bytes(b'<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"/>')
    (fakes / "notes.pdf").write_bytes(b"# Notes\n\nMarkdown saved as .pdf\n")
    Image.new("RGB", (40, 30)).save(fakes / "photo.pdf", format="PNG")
    _scan_pdf(fakes / "real.pdf")
    cases["HTML, SVG, Markdown, PNG named .pdf + 1 scan"] = (fakes, 5)

    hostile = folder / "formulas"
    for number, stem in enumerate(("=1+1", "+cmd", "-2", "@SUM(A1)", "\tx", "cow\u202egpj.exe")):
        _scan_pdf(hostile / f"{stem}.pdf", seed=number)
    cases["names = + - @ tab, U+202E"] = (hostile, 6)
    return cases


def _peak_rss(process: subprocess.Popen) -> int:
    peak = 0
    root = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree))
        except psutil.Error:
            pass
        time.sleep(0.02)
    return peak


def run_case(repo: Path, source: Path | list[str], out: Path, extra: Sequence[str] = ()) -> tuple[int, int, str]:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    inputs = source if isinstance(source, list) else [str(source)]
    command = [sys.executable, "-m", "pipeline", *inputs, "-o", str(out), "--workers", "1", "--no-resume", *extra]
    command += ["--filter", "sigma"]  # the noise-block scans are kept by sigma: every page should give an image
    process = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = _peak_rss(process)
    _, err = process.communicate()
    errors = [line for line in err.decode(errors="replace").splitlines() if "error" in line.lower()]
    return process.returncode, peak, errors[-1] if errors else ""


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
BIDI = {"\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))}


def count_outputs(out: Path) -> tuple[int, int, int, int, int, int]:
    """(manifest rows, images named in the manifest's outputs, distinct images actually there, rows refused as
    not a PDF, manifest cells a spreadsheet would run as a formula, output names with bidirectional controls)."""
    text, files = "", []
    if out.suffix == ".zip" and out.exists():
        with zipfile.ZipFile(out) as archive:
            files = archive.namelist()
            if "manifest.csv" in files:
                text = archive.read("manifest.csv").decode("utf-8", "replace")
    elif out.is_dir():
        files = [path.name for path in out.iterdir()]
        text = (out / "manifest.csv").read_text("utf-8", "replace") if (out / "manifest.csv").exists() else ""
    there = len({name for name in files if name.endswith(".jpg")})
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    named = sum(len(row["outputs"].split(";")) for row in rows if row.get("outputs"))
    not_pdf = sum("not a PDF" in (row.get("error") or "") for row in rows)
    formulas = sum(str(cell).startswith(FORMULA_STARTS) for row in rows for key, cell in row.items() if key != "score")
    bidi = sum(bool(BIDI & set(name)) for name in files)
    return len(rows), named, there, not_pdf, formulas, bidi


def orphans_after_kill(repo: Path, folder: Path, engine: str = "local") -> tuple[int, int, float]:
    """Kill -9 the CLI alone mid-run (2 workers, or a local Ray of 2 CPUs): how many of its processes are alive
    10 s later, with how much memory (MB), and after how many seconds the last one exited by itself (up to 120)."""
    source = _scan_pdf(folder / f"long-run-{engine}.pdf", pages=400)
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = folder / f"killed-{engine}.zip"
    command = [sys.executable, "-m", "pipeline", str(source), "-o", str(out), "--workers", "2", "--engine", engine]
    process = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    progress = folder / f"killed-{engine}.zip.progress"
    while process.poll() is None and not (progress.exists() and progress.read_text().count("\n") > 10):
        time.sleep(0.05)
    children = psutil.Process(process.pid).children(recursive=True)
    process.send_signal(signal.SIGKILL)
    process.wait()
    start = time.monotonic()
    _, alive = psutil.wait_procs(children, timeout=10)
    orphans, memory = len(alive), 0
    for leftover in alive:
        with contextlib.suppress(psutil.Error):
            memory += leftover.memory_info().rss
    _, alive = psutil.wait_procs(alive, timeout=110)
    gone_after = time.monotonic() - start
    for leftover in alive:
        leftover.kill()
    return orphans, memory >> 20, gone_after


BOMB_SCRIPT = """
import sys
from pathlib import Path
from pipeline.source import PdfError, gather_uploads
try:
    gather_uploads(sys.argv[2:], Path(sys.argv[1]), 2048 * 2**20)  # app.py's MAX_UNPACKED_MB default
except PdfError as exc:
    print(exc)
"""


def _bomb(path: Path, unpacked: int) -> Path:
    """A zip whose one ``.pdf`` member is a PDF header and ``unpacked`` bytes of zeros (deflate: ~1,000×)."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("bomb.pdf", "w", force_zip64=True) as member,
    ):
        member.write(b"%PDF-1.4\n")
        for _ in range(unpacked // 2**24):
            member.write(bytes(2**24))
    return path


def _tree_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # unpacked and removed between the listing and now
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def bomb_request(repo: Path, folder: Path) -> tuple[int, float, str]:
    """Three 2.6 MB zip bombs in one request (``gather_uploads``, the Space's budget of 2,048 MB): the most
    bytes its unpack folder held at once (sampled), seconds, and the first reason it gave."""
    one = _bomb(folder / "bomb0.zip", 2600 * 2**20)
    bombs, size = [one] + [Path(shutil.copy(one, folder / f"bomb{n}.zip")) for n in (1, 2)], one.stat().st_size
    work = folder / "unpacked"
    env = {**os.environ, "PYTHONPATH": str(repo)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", BOMB_SCRIPT, str(work), *map(str, bombs)], cwd=repo, env=env, stdout=subprocess.PIPE
    )
    peak = 0
    while process.poll() is None:
        peak = max(peak, _tree_bytes(work))
        time.sleep(0.01)
    peak = max(peak, _tree_bytes(work))
    out = process.communicate()[0].decode(errors="replace").split("; ")[0].strip()
    seconds = time.perf_counter() - start
    shutil.rmtree(work, ignore_errors=True)
    for bomb in bombs:
        bomb.unlink()
    return peak, seconds, f"{size / 2**20:.1f} MB zips; " + out


def remote_cases(repo: Path, folder: Path) -> None:
    """URL inputs from a loopback server: presigned URLs, a stalled download under ``--max-seconds 10``,
    a 500 and a redirect loop: exit code, rows / pages, seconds, the error line."""
    served = folder / "served"
    _scan_pdf(served / "scan.pdf", pages=2)
    _scan_pdf(served / "other.pdf", seed=1)
    with serve(served, drip_seconds=330) as server:
        signed = f"{server}/scan.pdf?X-Amz-Expires=60&X-Amz-Signature=ab%2Fc%3D"
        cases = {
            "presigned URL alone": ([signed], 2, []),
            "presigned URL + a plain one": ([signed, f"{server}/other.pdf"], 3, []),
            "1 byte/s, --max-seconds 10": ([f"{server}/drip/big.pdf"], 0, ["--max-seconds", "10"]),
            "HTTP 500": ([f"{server}/broken/a.pdf"], 0, []),
            "redirect loop": ([f"{server}/loop/a.pdf"], 0, []),
        }
        print("\n| URL case | exit | manifest rows / pages | seconds | error line |\n| --- | --- | --- | --- | --- |")
        for name, (urls, pages, extra) in cases.items():
            out = folder / f"remote-{abs(hash(name))}.zip"
            start = time.perf_counter()
            code, _, err = run_case(repo, urls, out, extra)
            rows = count_outputs(out)[0]
            cells = [
                name,
                code,
                f"{rows} / {pages}",
                f"{time.perf_counter() - start:.1f}",
                err.replace(server, "")[:90],
            ]
            print("| " + " | ".join(map(str, cells)) + " |")


def _leftovers(tmp: Path) -> tuple[int, int]:
    """(files, folders) the pipeline left in the temporary folder ``tmp``."""
    paths = [path for path in tmp.glob("pipeline-*") for path in [path, *path.rglob("*")]]
    return sum(path.is_file() for path in paths), sum(path.is_dir() for path in paths)


def _fetching(repo: Path, url: str, out: Path, tmp: Path) -> subprocess.Popen:
    """The CLI on ``url`` with ``TMPDIR=tmp``, once part of its copy is on disk."""
    env = {**os.environ, "PYTHONPATH": str(repo), "TMPDIR": str(tmp)}
    command = [sys.executable, "-m", "pipeline", url, "-o", str(out), "--workers", "1", "--filter", "sigma"]
    process = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None and not any(
        path.is_file() and path.stat().st_size for path in tmp.glob("pipeline-*/**/*")
    ):
        time.sleep(0.05)
    return process


def copies_after_signals(repo: Path, folder: Path) -> None:
    """A download (128 KB/s) interrupted by ``kill -9`` then rerun, and one by SIGTERM: what stays in TMPDIR."""
    served = folder / "served-slow"
    size = _scan_pdf(served / "big.pdf", pages=4).stat().st_size
    with serve(served, drip_seconds=330) as server:
        url = f"{server}/slow/big.pdf"
        tmp = folder / "tmp-kill"
        tmp.mkdir()
        process = _fetching(repo, url, folder / "killed-remote.zip", tmp)
        process.kill()
        process.wait()
        killed = _leftovers(tmp)
        env = {**os.environ, "PYTHONPATH": str(repo), "TMPDIR": str(tmp)}
        command = [sys.executable, "-m", "pipeline", url, "-o", str(folder / "killed-remote.zip"), "--workers", "1"]
        rerun = subprocess.run([*command, "--filter", "sigma"], cwd=repo, env=env, capture_output=True).returncode
        after = _leftovers(tmp)
        print(
            f"\nkill -9 mid-download ({size / 2**20:.1f} MB PDF): {killed[0]} copies, {killed[1]} folders left; ",
            end="",
        )
        print(f"after the rerun (exit {rerun}): {after[0]} copies, {after[1]} folders")
        tmp = folder / "tmp-term"
        tmp.mkdir()
        process = _fetching(repo, url, folder / "termed-remote.zip", tmp)
        start = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        code = process.wait()
        left = _leftovers(tmp)
        print(f"SIGTERM mid-download: exit {code} after {time.perf_counter() - start:.1f} s, ", end="")
        print(f"{left[0]} copies, {left[1]} folders left")


PARTS = ["cli", "kill", "kill-ray", "request", "remote", "signals"]


def cli_cases(repo: Path, folder: Path) -> None:
    """The table: each generated case through the CLI to a zip and a folder."""
    print(
        "| case | output | exit | manifest rows / pages | images named / there | not-PDF rows | formula cells "
        "| bidi names | peak RSS MB | error line |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (source, pages) in make_cases(folder / "in").items():
        for output in ("out.zip", "out"):
            out = folder / f"{abs(hash(name))}-{output}"
            code, peak, err = run_case(repo, source, out)
            rows, named, there, not_pdf, formulas, bidi = count_outputs(out)
            cells = [name, output, code, f"{rows} / {pages}", f"{named} / {there}", not_pdf, formulas, bidi]
            cells += [f"{peak / 2**20:,.0f}", err[:70]]
            print("| " + " | ".join(map(str, cells)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="checkout whose pipeline to run (default: this one)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the generated cases and outputs here")
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=PARTS, help="which parts to run (default: all)", metavar="PART"
    )
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="hostile-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"pipeline from {args.repo.resolve()}; cases in {folder}\n")
    if "cli" in args.parts:
        cli_cases(args.repo.resolve(), folder)
    for engine, part in (("local", "kill"), ("ray", "kill-ray")):
        if part in args.parts:
            orphans, memory, gone = orphans_after_kill(args.repo.resolve(), folder, engine)
            print(f"\norphans 10 s after kill -9 of the CLI (--engine {engine}, 2 workers): ", end="")
            print(f"{orphans} ({memory} MB); ", end="")
            print(f"the last of its processes gone {gone:.0f} s after the kill")
    if "request" in args.parts:
        peak, seconds, reason = bomb_request(args.repo.resolve(), folder)
        print(f"\nthree zip bombs in one request: {peak / 2**20:,.0f} MB on disk at most (budget 2,048 MB), ", end="")
        print(f"{seconds:.1f} s; {reason}")
    if "remote" in args.parts:
        remote_cases(args.repo.resolve(), folder)
    if "signals" in args.parts:
        copies_after_signals(args.repo.resolve(), folder)
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
