"""Load a written dataset with kohya sd-scripts' own config code as ``sdxl_train_network.py`` does, from elsewhere.

``python bench/kohya_check.py OUTPUT --sd-scripts DIR`` where OUTPUT is what ``python -m pipeline ... -o OUTPUT
--kohya-config`` wrote (a folder, or a zip: it is first extracted where its ``dataset_config.toml`` says, as the
README tells users to) and DIR a checkout of kohya-ss/sd-scripts. Run it with a Python that can import
sd-scripts (torch with a working torchvision: ``pip install torch==2.14.1 torchvision==0.29.1`` here, then
sd-scripts' requirements); our own venv cannot (torchvision has no wheel for the CPU build of torch 2.13).

It parses ``--dataset_config`` with ``sdxl_train_network.setup_parser()``, builds the dataset group with
``BlueprintGenerator(ConfigSanitizer(True, True, False, True))`` and ``generate_dataset_group_by_blueprint`` (the
calls of ``train_network.py``), from a fresh temporary working directory, and prints: images and captions kohya
found vs. written, every warning kohya logged, the buckets it made, and five captions. Exit code 1 when kohya
finds fewer images or captions than were written.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import tomllib


class Recorder(logging.Handler):
    """Keeps every record kohya logs at WARNING or above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="the pipeline's output folder or zip")
    parser.add_argument("--sd-scripts", type=Path, required=True, help="a kohya-ss/sd-scripts checkout")
    args = parser.parse_args()
    output = args.output.resolve()
    if output.suffix.lower() == ".zip":
        with zipfile.ZipFile(output) as archive:
            config = tomllib.loads(archive.read("dataset_config.toml").decode("utf-8"))
            image_dir = Path(config["datasets"][0]["subsets"][0]["image_dir"])
            archive.extractall(image_dir)  # what the TOML's "First extract the images there" line says
        print(f"extracted {output.name} into {image_dir}, as its dataset_config.toml says")
    else:
        image_dir = output
    toml = image_dir / "dataset_config.toml"
    written = sorted(p.name for p in image_dir.glob("*.jpg"))
    captions = {p.stem: p.read_text(encoding="utf-8") for p in image_dir.glob("*.txt")}

    sys.path.insert(0, str(args.sd_scripts.resolve()))
    os.chdir(tempfile.mkdtemp(prefix="kohya-cwd-"))  # anywhere but the dataset: a relative image_dir finds nothing
    recorder = Recorder()
    logging.getLogger().addHandler(recorder)
    import sdxl_train_network
    from library import config_util
    from library.config_util import BlueprintGenerator, ConfigSanitizer

    for name in list(logging.root.manager.loggerDict):  # kohya's loggers that do not reach the root's handlers
        logger = logging.getLogger(name)
        if not logger.propagate:
            logger.addHandler(recorder)
    namespace = sdxl_train_network.setup_parser().parse_args(
        ["--dataset_config", str(toml), "--pretrained_model_name_or_path", "unused", "--output_dir", os.getcwd()]
    )
    user_config = config_util.load_user_config(str(toml))
    blueprint = BlueprintGenerator(ConfigSanitizer(True, True, False, True)).generate(user_config, namespace)
    group, _ = config_util.generate_dataset_group_by_blueprint(blueprint.dataset_group)

    infos = [info for dataset in group.datasets for info in dataset.image_data.values()]
    found = sorted(Path(info.absolute_path).name for info in infos)
    with_caption = [info for info in infos if info.caption and info.caption == captions.get(Path(info.image_key).stem)]
    print(f"working directory: {os.getcwd()} (not the dataset's)")
    print(f"kohya found {len(found)} images of {len(written)} written; {len(with_caption)} with their .txt caption")
    for dataset in group.datasets:
        manager = dataset.bucket_manager
        if manager is not None:
            counts = {tuple(r): len(b) for r, b in zip(manager.resos, manager.buckets, strict=True) if b}
            print(f"buckets (width, height): images: {counts}")
    print(f"kohya warnings: {len(recorder.records)}")
    for record in recorder.records:
        print(f"  {record.levelname}: {record.getMessage()}")
    for info in infos[:5]:
        print(f"  {Path(info.absolute_path).name}: {info.caption!r}")
    return 0 if found == written and len(with_caption) == len(written) else 1


if __name__ == "__main__":
    raise SystemExit(main())
