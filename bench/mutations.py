"""Deliberate bugs, each applied to a copy of the repository, and whether the tests named for it catch it.

A test counts only if it fails when what it names breaks. Each mutation below replaces one exact piece of code
(it must occur exactly once) in a fresh copy; the listed tests run there with this interpreter; a failing run
means the bug is caught. Prints a Markdown table and exits 1 if any bug is missed.

    python bench/mutations.py [--only NAME_SUBSTRING]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation("sigma keeps at or below the threshold", "pipeline/judges/sigma.py",
             "keep=score > self.threshold", "keep=score <= self.threshold", ("tests/test_judge_sigma.py",)),
    Mutation("cleanup without gc.collect()", "pipeline/cleanup.py",
             "            gc.collect()\n", "            pass\n", ("tests/test_cleanup.py",)),
    Mutation("cleanup without gc.freeze()", "pipeline/cleanup.py",
             "            gc.freeze()", "            pass  #", ("tests/test_cleanup.py",)),
    Mutation("offload without model.cpu()", "models/classifier.py",
             "        holder.model.cpu()\n", "        pass\n", ("tests/test_models.py",)),
    Mutation("offload without gc.collect()", "models/classifier.py",
             "def _free_cuda() -> None:\n    gc.collect()", "def _free_cuda() -> None:\n    pass",
             ("tests/test_models.py",)),
    Mutation("offload without torch.cuda.empty_cache()", "models/classifier.py",
             "        torch.cuda.empty_cache()", "        pass", ("tests/test_models.py",)),
    Mutation("workers never recycled", "pipeline/distributor.py",
             "self._tasks_per_pool = tasks_per_worker * workers", "self._tasks_per_pool = 10**9",
             ("tests/test_distributor.py::test_workers_are_recycled_and_the_run_still_completes_in_order",)),
    Mutation("workers outlive a killed run", "pipeline/distributor.py",
             "mp_context=self._context, initializer=_die_with_parent)", "mp_context=self._context)",
             ("tests/test_distributor.py::test_workers_end_with_a_killed_run",)),
    Mutation("outside text written as it is", "pipeline/names.py",
             "    if text.isascii() and not _CONTROL.search(text):\n        return text",
             "    if True:\n        return text", ("tests/test_names.py",)),
    Mutation("stems not reserved (x, x, x~2 collide)", "pipeline/names.py",
             "        while candidate.casefold() in self._taken:", "        while False:", ("tests/test_names.py",)),
    Mutation("no pixel budget", "pipeline/worker.py",
             "    check_page(page, judge.zoom)", "    pass  #", ("tests/test_budget.py",)),
    Mutation("libjpeg warnings not recorded", "pipeline/scan.py",
             "        _decoder_warnings.extend(messages)", "        pass", ("tests/test_scan.py",)),
    Mutation("crop auto always crops", "pipeline/worker.py",
             "return bool(boxes) and sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes) < AUTO_CROP_COVERAGE",
             "return bool(boxes)", ("tests/test_orchestrator.py",)),
    Mutation("captions without the page's words", "pipeline/orchestrator.py",
             "captions.caption(source, record.page, image.region, image.words)",
             "captions.caption(source, record.page, image.region)", ("tests/test_words.py",)),
    Mutation("kohya image_dir relative", "pipeline/orchestrator.py",
             "        return dataset_config_toml(str(output), resolution)",
             '        return dataset_config_toml(".", resolution)', ("tests/test_dataset.py",)),
    Mutation("photos not turned upright", "models/classifier.py",
             "return ImageOps.exif_transpose(im).convert(\"RGB\")", "return im.convert(\"RGB\")",
             ("tests/test_models.py",)),
    Mutation("max_pages ignored", "pipeline/orchestrator.py",
             "if max_pages is not None and total > max_pages:", "if False:", ("tests/test_orchestrator.py",)),
    Mutation("empty threshold read as 0", "pipeline/judges/__init__.py",
             "    if not text.strip():\n        return None", "    if not text.strip():\n        return 0.0",
             ("tests/test_judges.py",)),
    Mutation("Space keeps two copies of each zip", "app.py",
             "    shutil.rmtree(work, ignore_errors=True)  # Gradio has made its own copy", "    pass  #",
             ("tests/test_app.py::test_the_result_zip_is_stored_once",)),
    Mutation("SIGTERM leaves the work folder", "app.py",
             "    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))", "    pass",
             ("tests/test_app.py::test_sigterm_removes_the_work_folder",)),
    Mutation("Cancel does not cancel", "app.py", "        cancels=[build],", "        cancels=[],",
             ("tests/test_browser.py::test_cancel_stops_the_run",)),
    Mutation("engine: Ray results out of task order", "pipeline/engines.py",
             "            task, ref = pending.popleft()", "            task, ref = pending.pop()",
             ("tests/test_engines.py::test_ray_gives_the_local_engines_output_byte_for_byte",)),
    Mutation("engine: Ray tasks never retried", "pipeline/engines.py", "RAY_RETRIES = 3", "RAY_RETRIES = 0",
             ("tests/test_engines.py::test_a_ray_worker_killed_mid_run_is_retried",)),
    Mutation("remote: --prefetch not a limit", "pipeline/fetch.py",
             "self._slots = threading.Semaphore(limit)", "self._slots = threading.Semaphore(limit + 3)",
             ("tests/test_remote.py::test_a_served_folder_with_prefetch_1_gives_the_local_output_on_bounded_disk",)),
    Mutation("remote: time budget against the local pages only", "pipeline/orchestrator.py",
             "if late and progress.done < progress.total:", "if late and progress.done < total:",
             ("tests/test_remote.py::test_a_remote_run_stops_on_its_time_budget_and_resumes",)),
    Mutation("shards: not uploaded", "pipeline/shards.py",
             "                self._fs.put_file(", "                (lambda *args: None)(",
             ("tests/test_shards.py::test_shards_are_uploaded_to_a_url_as_they_close",)),
    Mutation("shards: closed shards forgotten on resume", "pipeline/shards.py",
             'closed_keys.update(tuple(key) for key in shard.pop("keys"))', 'shard.pop("keys")',
             ("tests/test_shards.py::test_an_interrupted_sharded_run_resumes_to_the_same_shards",)),
    Mutation("engine: shipped PDF bytes ignored", "pipeline/engines.py",
             "        return process_task(replace(task, path=copy), options)",
             "        return process_task(task, options)",
             ("tests/test_engines.py::test_remote_pdfs_shipped_through_rays_object_store_give_the_same_output",)),
)  # fmt: skip


def apply(copy: Path, mutation: Mutation) -> None:
    path = copy / mutation.path
    text = path.read_text(encoding="utf-8")
    if text.count(mutation.old) != 1:
        raise SystemExit(f"{mutation.name}: {mutation.old!r} occurs {text.count(mutation.old)}× in {mutation.path}")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the mutations whose name contains this")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if args.only in m.name]
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".pytest_cache", ".ruff_cache", "*.zip")
    missed = 0
    print("| bug | tests | caught | seconds |\n| --- | --- | --- | --- |")
    for mutation in chosen:
        with tempfile.TemporaryDirectory(prefix="mutant-") as folder:
            copy = Path(folder) / "repo"
            shutil.copytree(ROOT, copy, ignore=ignore)
            apply(copy, mutation)
            start = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *mutation.tests],
                cwd=copy, capture_output=True, encoding="utf-8", errors="replace", timeout=900,
            )  # fmt: skip
            caught = result.returncode != 0
            missed += not caught
            tests = ", ".join(t.removeprefix("tests/") for t in mutation.tests)
            verdict = "yes" if caught else "**MISSED**"
            print(f"| {mutation.name} | {tests} | {verdict} | {time.perf_counter() - start:.0f} |", flush=True)
    print(f"\n{len(chosen) - missed} of {len(chosen)} deliberate bugs caught")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
