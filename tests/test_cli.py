import subprocess
import sys
import zipfile
from pathlib import Path

from factories import ARTICLE_CLI, engraving, pdf_from_images, text_page

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_cli_run_prints_a_one_line_summary(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "scan.pdf", [engraving(400, 500), text_page(ink=0.05)])
    (tmp_path / "junk.pdf").write_text("not a pdf")
    result = _cli(tmp_path, "-o", tmp_path / "out.zip", *ARTICLE_CLI, "--threshold", "45", "--size", "64")
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.strip()
        .splitlines()[-1]
        .startswith("2 pages, 1 kept (1 images, 0 duplicates and 0 too small dropped), 1 errors")
    )
    assert str(tmp_path / "out.zip") in result.stdout
    kinds = result.stdout.strip().splitlines()[-2]  # σ's candidate is the whole page: kept, and the sparse one
    assert kinds == "by kind, kept/dropped pages: monochrome line art 1/1", kinds
    assert "skipped junk.pdf: junk.pdf: not a PDF" in result.stderr
    assert "page/s" in result.stderr  # the progress bar's rate
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        assert sorted(archive.namelist()) == [
            "manifest.csv", "metadata.jsonl", "report.html", "scan_p0001.jpg", "scan_p0001.txt"
        ]  # fmt: skip
    assert pdf.exists()


def test_cli_writes_a_folder_when_output_is_not_a_zip(tmp_path: Path) -> None:
    pdf_from_images(tmp_path / "scan.pdf", [engraving(400, 500)])
    result = _cli(tmp_path / "scan.pdf", "-o", f"{tmp_path / 'dataset'}/", *ARTICLE_CLI, "--size", "64")
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in (tmp_path / "dataset").iterdir())
    assert names == ["manifest.csv", "metadata.jsonl", "report.html", "scan_p0001.jpg", "scan_p0001.txt"]


def test_cli_fails_with_one_line_when_nothing_can_be_done(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "scan.pdf", [engraving(100, 100)])
    (tmp_path / "blocker").write_text("")
    (tmp_path / "empty").mkdir()
    cases = [
        ((tmp_path / "missing.pdf", "-o", tmp_path / "o.zip"), "missing.pdf"),
        ((tmp_path / "empty", "-o", tmp_path / "o.zip"), "no PDF found"),
        ((pdf, "-o", tmp_path / "blocker" / "o.zip"), "cannot write"),
        ((pdf, "-o", tmp_path / "o.zip", "--quality", "0"), "quality"),
    ]
    for args, message in cases:
        result = _cli(*args)
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("error:") and message in last


def test_cli_help_explains_each_option() -> None:
    result = _cli("--help")
    assert result.returncode == 0
    options = ["--filter", "--threshold", "--fit", "--size", "--min-side", "--upscale", "--quality", "--dedupe"]
    options += ["--caption", "--trigger", "--kohya-config", "--crop", "--gc-every", "--workers", "--no-resume"]
    for option in [*options, "DIR/", "OUT.zip", "structure", "sigma", "bucket", "max-side"]:
        assert option in result.stdout


def test_cli_limits(tmp_path: Path) -> None:
    pdf = pdf_from_images(tmp_path / "scan.pdf", [engraving(300, 400, seed=s) for s in range(6)])
    refused = _cli(pdf, "-o", tmp_path / "out.zip", *ARTICLE_CLI, "--max-pages", "5")
    assert refused.returncode == 1 and "error: 6 pages in all, more than the limit of 5" in refused.stderr
    stopped = _cli(pdf, "-o", tmp_path / "out.zip", *ARTICLE_CLI, "--size", "64", "--max-seconds", "0")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped after the time budget of 0 s" in stopped.stdout and "rerun the same command" in stopped.stdout
    assert (tmp_path / "out.zip.progress").exists()


def test_cli_summary_says_how_many_kept_pictures_were_not_written_and_why(tmp_path: Path) -> None:
    pdf_from_images(tmp_path / "scan.pdf", [engraving(400, 500), text_page(ink=0.05)])
    result = _cli(
        tmp_path / "scan.pdf", "-o", tmp_path / "out.zip", *ARTICLE_CLI, "--threshold", "45", "--min-side", "600"
    )
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith("2 pages, 1 kept (0 images, 0 duplicates and 1 too small dropped), 0 errors"), line
    assert line.endswith(
        "; kept but not written: 1 picture too small (shorter side below --min-side 600 px; lower it to keep them)"
    ), line
    lower = _cli(tmp_path / "scan.pdf", "-o", tmp_path / "low.zip", *ARTICLE_CLI, "--threshold", "45", "--size", "64")
    assert "not written" not in lower.stdout and "1 kept (1 images" in lower.stdout


def test_cli_defaults_are_the_settings_defaults() -> None:
    """The CLI is built from the fields of Options and Execution: no default is written twice."""
    from pipeline.cli import build_parser
    from pipeline.execution import Execution, default_workers
    from pipeline.options import Options
    from pipeline.settings import from_args

    args = build_parser().parse_args(["in.pdf", "-o", "out.zip"])
    assert from_args(Options, args) == Options()
    assert from_args(Execution, args) == Execution(workers=default_workers())
    changed = build_parser().parse_args(["in.pdf", "-o", "o/", "--dedupe", "-1", "--crop", "--no-resume", "--upscale"])
    assert from_args(Options, changed) == Options(dedupe=None, crop="always", upscale=True)
    assert from_args(Execution, changed).resume is False


FILE_SIZE_LIMITED = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv.pop(1)),) * 2)
sys.argv[0] = "pipeline"
runpy.run_module("pipeline", run_name="__main__")
"""


def test_an_output_that_cannot_grow_stops_the_run_with_one_line_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    """A full disk (here: a file size limit) ended the run with a 45-line chained traceback; the pages committed
    before it stay, and the same command continues once there is room."""
    pdf = pdf_from_images(tmp_path / "scan.pdf", [engraving(600, 800, seed=s) for s in range(8)])
    options = [*ARTICLE_CLI, "--threshold", "0", "--size", "256", "--workers", "1"]
    whole = _cli(pdf, "-o", tmp_path / "whole.zip", *options)
    assert whole.returncode == 0, whole.stderr
    limit = (tmp_path / "whole.zip").stat().st_size // 2
    command = [sys.executable, "-c", FILE_SIZE_LIMITED, str(limit), str(pdf), "-o", str(tmp_path / "out.zip")]
    full = subprocess.run([*command, *options], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr
    assert "error: File too large" in full.stderr and "rerun the same command to continue" in full.stderr
    rest = _cli(pdf, "-o", tmp_path / "out.zip", *options)
    assert rest.returncode == 0 and "done before" in rest.stdout, rest.stdout + rest.stderr
    with zipfile.ZipFile(tmp_path / "whole.zip") as a, zipfile.ZipFile(tmp_path / "out.zip") as b:
        assert b.testzip() is None
        assert {n: a.read(n) for n in a.namelist() if n.endswith(".jpg")} == {
            n: b.read(n) for n in b.namelist() if n.endswith(".jpg")
        }
