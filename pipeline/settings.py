"""Settings dataclasses as command-line options: each field's default and help are written once, on the field.

A field made with :func:`setting` becomes ``--field-name``: its type from the annotation, its default from the
field (or the ``cli_default``, where the CLI's default differs on purpose), choices from a ``Literal`` (or given),
booleans as ``--flag`` (default off) or ``--flag/--no-flag`` (default on). The pipeline's ``Options`` and
``Execution`` and the training's ``TrainConfig`` are built this way.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


def setting(default: Any, help: str, *, cli_default: Any = dataclasses.MISSING, **cli: Any) -> Any:
    """A dataclass field with its command-line help (and any other ``add_argument`` keywords) as metadata;
    ``cli_default`` where the command line's default differs from the library's on purpose."""
    if cli_default is not dataclasses.MISSING:
        cli["default"] = cli_default
    return dataclasses.field(default=default, metadata={"help": help, "cli": cli})


def flag(name: str) -> str:
    """``cv_repeats`` → ``--cv-repeats``: how a setting is named on the command line (and in its errors)."""
    return "--" + name.replace("_", "-")


def add_settings(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type) -> None:
    """One option per field of the dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        cli = dict(field.metadata["cli"])
        default = cli.pop("default", field.default)
        if isinstance(field.default, bool):
            action = "store_true" if field.default is False else argparse.BooleanOptionalAction
            parser.add_argument(flag(field.name), action=action, default=default, help=field.metadata["help"], **cli)
            continue
        hint = hints[field.name]
        if typing.get_origin(hint) is typing.Literal:
            cli.setdefault("choices", typing.get_args(hint))
            hint = str
        cli.setdefault("type", _scalar(hint))
        parser.add_argument(flag(field.name), default=default, help=field.metadata["help"], **cli)


def from_args(cls: type[T], args: argparse.Namespace) -> T:
    """The dataclass ``cls`` from parsed arguments (its own checks raise ``ValueError``)."""
    return cls(**{field.name: getattr(args, field.name) for field in dataclasses.fields(cls)})


def _scalar(hint: Any) -> type:
    """``float | None`` → ``float``; ``str | Engine`` → ``str``: what a command-line word is parsed as."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(arg for arg in typing.get_args(hint) if arg in (int, float, str))
    return hint
