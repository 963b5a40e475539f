"""The photos of a training run: class folders scanned into a ``Dataset``, each photo's collection (provenance CSV),
misfiled photos relabelled (``models/label_fixes.csv``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from models import triage
from models.classifier import list_images
from models.train.config import DataError

CATTLE_ONLY = -1
"""Target of a cattle photo without a triage label."""
LABEL_FIXES = Path(__file__).parent.with_name("label_fixes.csv")
"""Photos of the public data sets filed under the wrong label, with their right one (``relabelled``)."""


@dataclass
class Dataset:
    """Photos with integer targets into ``labels`` (``CATTLE_ONLY`` for unlabelled cattle) and their groups."""

    paths: list[Path]
    targets: np.ndarray
    labels: list[str]
    gate_label: str | None
    groups: np.ndarray | None = None
    sources: list[str] = field(default_factory=list)
    """The collection each photo comes from: the unit of leave-one-source-out validation (``photo_sources``)."""


def scan(
    data_dir: Path,
    classes: Sequence[str] | None = None,
    not_cattle: Path | Sequence[Path] | None = None,
    extra_cattle: Sequence[Path] = (),
    cattle_as: str | None = None,
    sources: Path | None = None,
    relabel: Path | None = LABEL_FIXES,
) -> Dataset:
    """Collect the photos: triage classes, then cattle-only folders (``breed_*``, ``extra_cattle``), then not-cattle
    (one folder or several).

    ``cattle_as`` gives the cattle-only photos a triage class (healthy breeds as ``normal_skin``) instead of none.
    ``sources`` is a provenance CSV (``photo_sources``) naming each photo's collection. ``relabel`` is a CSV of
    photos whose folder gives them the wrong label (``relabelled``; ``None``: none).
    """
    if isinstance(not_cattle, (str, Path)):
        not_cattle = [Path(not_cattle)]
    folders = sorted(p for p in Path(data_dir).iterdir() if p.is_dir())
    names = list(classes) if classes else [p.name for p in folders if not p.name.startswith("breed_")]
    unknown = [n for n in names if not (Path(data_dir) / n).is_dir()]
    if unknown or len(names) < 2:
        raise DataError(f"need at least two class folders in {data_dir} (missing: {unknown})")
    if cattle_as and cattle_as not in names:
        raise DataError(f"--cattle-as {cattle_as} is not one of the classes {names}")
    labels = list(names)
    gate = triage.NOT_CATTLE if not_cattle else None
    if gate:
        labels.append(gate)
    paths: list[Path] = []
    targets: list[int] = []
    for i, name in enumerate(names):
        found = list_images(Path(data_dir) / name)
        paths += found
        targets += [i] * len(found)
    if gate:
        cattle_only = [p for p in folders if p.name.startswith("breed_") and p.name not in names]
        for folder in [*cattle_only, *map(Path, extra_cattle)]:
            found = list_images(folder)
            paths += found
            targets += [names.index(cattle_as) if cattle_as else CATTLE_ONLY] * len(found)
        for folder in not_cattle:
            found = list_images(Path(folder))
            paths += found
            targets += [labels.index(gate)] * len(found)
    data = Dataset(paths, np.array(targets), labels, gate, sources=photo_sources(paths, sources))
    return relabelled(data, relabel) if relabel is not None else data


def relabelled(data: Dataset, csv_file: Path) -> Dataset:
    """``data`` with the corrections of ``csv_file`` (columns ``file``, ``label``, ``why``): each photo whose path
    ends with a row's ``file`` gets that row's label, and a source of its own (its collection's name + the label),
    so that leaving it out never leaves a whole collection out. Rows naming a label the model lacks, or no photo
    given, are skipped: the corrections are for one public data set, and any copy of it (a warning names the rows
    that found no photo when others did).

    Why: the public lumpy-skin data set files electron micrographs, a histology slide, line drawings, a laptop banner
    and vaccine vials under *lumpy skin*, and clip art and a web-shop screenshot under *normal skin* (each viewed;
    the ``why`` column says what it shows). Trained as a disease they teach it; scored as one, the gate that
    rightly turns them away counts as a missed case."""
    import csv

    with open(csv_file, newline="", encoding="utf-8") as f:
        fixes = [(row["file"].strip().replace("\\", "/"), row["label"].strip()) for row in csv.DictReader(f)]
    targets, sources = data.targets.copy(), list(data.sources)
    found = set()
    for i, path in enumerate(data.paths):
        posix = Path(path).as_posix()
        for file, label in fixes:
            if posix == file or posix.endswith("/" + file):
                found.add(file)
                if label in data.labels:
                    targets[i] = data.labels.index(label)
                    sources[i] = f"{sources[i]} · relabelled {label}"
    missing = [file for file, _ in fixes if file not in found]
    if found and missing:  # the data set the corrections are for, without some of its photos: renamed, or a typo
        warnings.warn(f"{csv_file}: no photo found for {len(missing)} row(s): {', '.join(missing)}", stacklevel=2)
    return replace(data, targets=targets, sources=sources)


def photo_sources(paths: Sequence[Path], csv_file: Path | None = None) -> list[str]:
    """Each photo's collection: the ``source_repo`` a provenance CSV (columns ``file``, ``source_repo``; ``file``
    relative to the CSV's folder, as ``../shared/data/sources_extra.csv``) gives it, else its folder's name.

    Why: photos of one collection share a camera, a place, a breed and a framing; a model validated on folds of
    one collection learns those. Leaving a whole source out is the estimate of a collection never seen.
    """
    named: dict[Path, str] = {}
    if csv_file is not None:
        import csv

        with open(csv_file, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                named[(Path(csv_file).parent / row["file"]).resolve()] = row["source_repo"]
    return [named.get(Path(p).resolve(), Path(p).parent.name) for p in paths]
