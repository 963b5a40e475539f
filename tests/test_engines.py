"""The Ray engine against the local one: same per-page work, same output byte for byte, retries, resume."""

import signal
import zipfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from factories import ARTICLE, engraving, free_port, mixed_page, pdf_from_images, text_page

from pipeline import Execution, Options, run
from pipeline.engines import RayEngine, make_engine, ray_init_args


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """One local Ray of 2 CPUs (starting one takes seconds) that ``engine="ray"`` runs use. Module-scoped, and
    this is the only module using it: Ray's processes are children of the test process, and other modules' tests
    pick their victims among those children (``test_distributor``'s killed worker)."""
    ray = pytest.importorskip("ray")
    ray.init(**ray_init_args(num_cpus=2))
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two multi-page scanned issues: engravings, text pages, and pages with a picture among text columns."""
    folder = tmp_path_factory.mktemp("archive")
    for number in range(2):
        pages = [engraving(300, 400, seed=s) if s % 3 else text_page(300, 400, seed=s, ink=0.05) for s in range(14)]
        pages[4] = mixed_page(600, 800, seed=number)
        pdf_from_images(folder / f"issue{number}.pdf", pages)
    return folder


def _entries(zip_path: Path) -> list[tuple[str, bytes]]:
    """Every entry of the zip, name and bytes, in the zip's order (manifest, captions, report included)."""
    with zipfile.ZipFile(zip_path) as archive:
        assert archive.testzip() is None
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


OPTIONS = Options(**{**ARTICLE, "filter": "structure"}, size=64, crop="auto", threshold=0.3)


@pytest.fixture(scope="module")
def local_output(tmp_path_factory: pytest.TempPathFactory, archive: Path) -> list[tuple[str, bytes]]:
    out = tmp_path_factory.mktemp("local") / "out.zip"
    run([archive], out, OPTIONS, Execution(workers=2))
    return _entries(out)


def test_ray_gives_the_local_engines_output_byte_for_byte(
    ray_cluster: None, tmp_path: Path, archive: Path, local_output: list
) -> None:
    summary = run([archive], tmp_path / "ray.zip", OPTIONS, Execution(engine="ray"))
    entries = _entries(tmp_path / "ray.zip")
    assert [name for name, _ in entries] == [name for name, _ in local_output]
    assert entries == local_output
    assert summary.pages == 28 and summary.errors == 0
    images = [name for name, _ in entries if name.endswith(".jpg")]
    assert len(images) >= 6 and any("_r1" in name for name in images), "whole pages and a crop, both compared"


def test_a_ray_worker_killed_mid_run_is_retried(
    ray_cluster: None, tmp_path: Path, archive: Path, local_output: list
) -> None:
    killed = []

    def kill_a_ray_worker(record, progress) -> None:
        """After any page, kill a Ray worker that is running a page range (its title says so), once."""
        busy = [p for p in psutil.process_iter(["cmdline"]) if "ray::process_task" in " ".join(p.info["cmdline"] or ())]
        if busy and not killed:
            busy[0].send_signal(signal.SIGKILL)
            killed.append(busy[0].pid)

    summary = run([archive], tmp_path / "ray.zip", OPTIONS, Execution(engine="ray"), kill_a_ray_worker)
    assert killed, "no Ray worker was seen running a page range"
    assert summary.errors == 0
    assert _entries(tmp_path / "ray.zip") == local_output


def test_an_interrupted_ray_run_resumes_to_the_same_output(
    ray_cluster: None, tmp_path: Path, archive: Path, local_output: list
) -> None:
    first = run([archive], tmp_path / "ray.zip", OPTIONS, Execution(engine="ray", max_seconds=0))
    assert 0 < first.pages < 28 and first.stopped
    rest = run([archive], tmp_path / "ray.zip", OPTIONS, Execution(engine="ray"))
    assert rest.resumed == first.pages and rest.pages == 28 - first.pages
    # the report's borderline thumbnails are of the last session's pages only (as with the local engine)
    without_report = [entry for entry in local_output if entry[0] != "report.html"]
    assert [entry for entry in _entries(tmp_path / "ray.zip") if entry[0] != "report.html"] == without_report


def test_remote_pdfs_shipped_through_rays_object_store_give_the_same_output(
    ray_cluster: None, tmp_path: Path, archive: Path, local_output: list
) -> None:
    """As on a cluster whose nodes do not see this machine's disk: tasks get the file's name only, and the
    fetched copy's bytes through the object store (file:// URLs are fetched like any remote input)."""
    summary = run([f"file://{archive}/"], tmp_path / "ray.zip", OPTIONS, Execution(engine=RayEngine(2, ship=True)))
    assert summary.remote == 2 and summary.errors == 0
    assert _entries(tmp_path / "ray.zip") == local_output


def test_engine_choices_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown engine 'spark': choose one of local, ray"):
        make_engine("spark", 2)
    with pytest.raises(ValueError, match="--ray-address needs --engine ray"):
        make_engine("local", 2, "auto")
    port = free_port()  # nobody listens there
    with (
        pytest.raises(ValueError, match=f"no Ray cluster at 127.0.0.1:{port}: "),
        make_engine("ray", 2, f"127.0.0.1:{port}"),
    ):
        pass
