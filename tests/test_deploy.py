"""The Space can be pushed: what the README's deploy command would upload, computed by huggingface_hub itself.

The command is read out of the README's "Deploy" code block and run through the installed ``hf`` CLI with the Hub
calls replaced by a recorder, so the file list is the one ``hf upload`` builds (``HfApi.upload_folder``: the
``--exclude`` patterns plus huggingface_hub's ``DEFAULT_IGNORE_PATTERNS``, matched by ``filter_repo_objects``).
It is run in a fresh ``git clone`` of this repository (tracked files as they are in the working tree, so an edit
is tested before it is committed) with a sample of everything ``.gitignore`` names added, as a developer's
checkout has it: untracked local files do not count, ignored ones must not be uploaded.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
HUB_FILE_LIMIT = 10 * 2**20  # the Hub refuses a file over 10 MB that is not stored with LFS/Xet
BINARY_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".onnx", ".png", ".jpg", ".jpeg", ".webp", ".zip", ".pdf"}
BINARY_SUFFIXES |= {".gz", ".tar", ".npy", ".npz", ".pkl", ".heic", ".tif", ".tiff"}
NESTED_JUNK = ["pipeline/__pycache__/cli.cpython-311.pyc", "models/__pycache__/train.cpython-311.pyc"]


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def deploy_command(readme: str) -> list[str]:
    """The ``hf upload`` command of the README's Deploy section, as the shell would split it."""
    section = readme.split("\n## Deploy", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", section, re.S)
    commands = [c for b in blocks for c in b.replace("\\\n", " ").splitlines() if c.strip().startswith("hf upload")]
    assert len(commands) == 1, f"the Deploy section must give one `hf upload` command, found {commands}"
    return shlex.split(commands[0], comments=True)


def lfs_patterns(gitattributes: str) -> list[str]:
    """The patterns of ``.gitattributes`` lines that route files through LFS (``filter=lfs``)."""
    patterns = []
    for line in gitattributes.splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#") and "filter=lfs" in fields[1:]:
            patterns.append(fields[0])
    return patterns


def lfs_tracked(path: str, patterns: list[str]) -> bool:
    """gitattributes matching: a pattern without a slash matches the file name at any depth, else the path."""
    name = path.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatchcase(name, p) if "/" not in p else fnmatch.fnmatchcase(path, p.lstrip("/")) for p in patterns
    )


def ignored_samples(gitignore: str) -> list[str]:
    """One file per ``.gitignore`` line (``*`` made concrete), at the top and, for file patterns, in a package."""
    samples = list(NESTED_JUNK)
    for line in gitignore.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        name = line.strip("/").replace("*", "x")
        if line.endswith("/"):
            samples.append(f"{name}/junk.txt")
        else:
            samples += [name, f"pipeline/{name}"] if not line.startswith("/") else [name]
    return samples


def planned_upload(folder: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict[str, Path]]:
    """Run ``argv`` (``hf upload ...``) through the installed CLI in ``folder``, every Hub call recorded instead of
    sent; returns the ``upload_folder`` call's arguments and the files it would upload (path in repo → local)."""
    import huggingface_hub.cli.upload as cli_upload
    import huggingface_hub.hf_api as hf_api
    from huggingface_hub import HfApi
    from huggingface_hub.cli.hf import app

    calls: dict = {}

    class DryRun(HfApi):
        def create_repo(self, repo_id, **kwargs):
            calls["create_repo"] = {"repo_id": repo_id, **kwargs}
            return SimpleNamespace(repo_id=repo_id)

        def upload_folder(self, **kwargs):
            calls["upload_folder"] = dict(kwargs)
            return super().upload_folder(**kwargs)

        def _validate_yaml(self, content, **kwargs):  # a Hub call; the front matter is checked below
            calls["validated_readme"] = True

        def create_commit(self, *, operations, **kwargs):
            calls["operations"] = operations
            return "https://huggingface.co/spaces/dry-run"

    monkeypatch.setattr(cli_upload, "get_hf_api", lambda token=None: DryRun(token=False))
    monkeypatch.setattr(hf_api, "is_xet_available", lambda: False)  # one create_commit; the file list is the same
    monkeypatch.chdir(folder)
    assert argv[:2] == ["hf", "upload"], argv
    app.main(args=argv[1:], prog_name="hf", standalone_mode=False)
    files = {op.path_in_repo: Path(op.path_or_fileobj) for op in calls["operations"]}
    return calls, files


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and this repository's history")
    target = tmp_path_factory.mktemp("deploy") / "space"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(target)], check=True)
    for path in _git("ls-files", "-z").split("\0"):  # the working tree's version of every tracked file
        if not path:
            continue
        source, copy = ROOT / path, target / path
        if source.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
        elif copy.exists():
            copy.unlink()
    for sample in ignored_samples((target / ".gitignore").read_text()):  # what a developer's checkout holds
        (target / sample).parent.mkdir(parents=True, exist_ok=True)
        (target / sample).write_bytes(b"local junk\n")
    return target


@pytest.fixture(scope="module")
def upload(clone: Path) -> tuple[dict, dict[str, Path]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return planned_upload(clone, deploy_command((clone / "README.md").read_text()), monkeypatch)


def test_the_command_targets_a_space(upload):
    calls, _ = upload
    assert calls["upload_folder"]["repo_type"] == "space"
    assert calls["create_repo"]["repo_type"] == "space"
    assert calls["upload_folder"]["folder_path"] == "."
    assert calls["upload_folder"]["path_in_repo"] in ("", ".")


def test_front_matter_is_a_gradio_space(clone, upload):
    from huggingface_hub.repocard import metadata_load

    _, files = upload
    meta = metadata_load(clone / "README.md")
    assert meta["sdk"] == "gradio"
    assert meta["app_file"] == "app.py"
    assert meta["app_file"] in files
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(meta["sdk_version"])), meta["sdk_version"]
    assert str(meta["python_version"]).startswith("3.")
    assert meta["license"] and meta["title"]
    assert len(meta.get("short_description", "")) <= 60  # the Hub refuses a longer one at upload


def test_the_space_gets_what_it_runs_on(clone, upload):
    _, files = upload
    for needed in ["README.md", "app.py", "requirements.txt", "LICENSE", ".gitattributes"]:
        assert needed in files, needed
    if (clone / "packages.txt").exists():
        assert "packages.txt" in files
    model = "models/cattle-triage"
    for needed in ["model.safetensors", "config.json", "preprocessor_config.json"]:
        assert f"{model}/{needed}" in files, needed
    tracked = [p for p in _git("ls-files", "pipeline", "models", "space", cwd=clone).splitlines() if p]
    assert tracked and not [p for p in tracked if p not in files], "every tracked file of pipeline/, models/, space/"


def test_local_junk_and_git_stay_home(clone, upload):
    _, files = upload
    assert not [p for p in files if p == ".git" or p.startswith(".git/")]
    samples = ignored_samples((clone / ".gitignore").read_text())
    ignored = set(_git("check-ignore", "--no-index", *samples, cwd=clone).splitlines())
    assert ignored == set(samples), f"samples git does not ignore: {set(samples) - ignored}"
    assert not [p for p in files if p.startswith(".venv/")]
    assert not [s for s in samples if s in files], "ignored local files would be uploaded"


def test_every_binary_upload_has_an_lfs_rule(clone, upload):
    _, files = upload
    patterns = lfs_patterns((clone / ".gitattributes").read_text())
    binaries = []
    for path, local in files.items():
        with open(local, "rb") as f:
            binary = b"\0" in f.read(8000)  # git's own test for a binary file
        if binary or local.stat().st_size > HUB_FILE_LIMIT or Path(path).suffix.lower() in BINARY_SUFFIXES:
            binaries.append(path)
    assert "models/cattle-triage/model.safetensors" in binaries
    assert not [p for p in binaries if not lfs_tracked(p, patterns)], "binary files without an LFS rule"
