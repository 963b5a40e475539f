"""Requests of the wrong shape answered with one sentence that says what to send, before any handler runs.

Gradio checks file inputs before a handler runs, and what fails there (a path as a string, a number, a list for one
file, a file never uploaded, too few values) reaches a program as ``{"error": null}``; one file where a list goes is
taken as a list of one here, since no handler would see it. A dict that is only ``{"path": ...}`` is worse: Gradio
does not see a file in it, so a ``gr.api`` handler would open that path on this server.
"""

import inspect
from typing import Any, get_args, get_origin, get_type_hints

import gradio as gr
from gradio import FileData
from gradio.block_function import BlockFunction
from gradio.exceptions import InvalidPathError
from gradio.state_holder import SessionState

FILE_META = {"_type": "gradio.FileData"}


class Space(gr.Blocks):
    """``gr.Blocks`` whose requests of the wrong shape fail with one sentence: files are checked here, then every
    remaining failure before the handler becomes a ``gr.Error``."""

    async def preprocess_data(
        self, block_fn: BlockFunction, inputs: list[Any], state: SessionState | None, explicit_call: bool = False
    ) -> list[Any]:
        where = f"/{block_fn.api_name or block_fn.name}"
        names = input_names(block_fn)
        missing = len(names) - len(inputs)
        if inputs and missing > 0:  # an older program's call, without the parameters added since
            inputs = [*inputs, *optional_defaults(block_fn)[-missing:]]
        if len(inputs) < len(names):
            raise request_error(
                f"{where} takes {len(names)} values ({', '.join(names)}), not {len(inputs)}: send None for one "
                "left out."
            )
        inputs = list(inputs)
        for i, (block, name) in enumerate(zip(block_fn.inputs, names, strict=False)):
            count = file_count(block, block_fn.fn, name)
            if count == "multiple" and is_file(inputs[i]):
                inputs[i] = [inputs[i]]  # one file where a list goes (the first release's /pdf_to_dataset call)
            if (problem := file_problem(count, inputs[i])) is not None:
                raise request_error(f"{where}: {name} must be {problem}.")
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except gr.Error:
            raise
        except InvalidPathError:
            raise request_error(
                f"{where}: a file in the request was never uploaded here; send each as handle_file(path), which "
                "uploads it."
            ) from None
        except Exception as exc:  # whatever else Gradio refuses: one sentence; the log keeps the traceback
            raise gr.Error(f"{where}: the request's values could not be read ({type(exc).__name__}).") from exc


def request_error(message: str) -> gr.Error:
    """A program's mistake: its message is the answer, nothing for the server log."""
    return gr.Error(message, title="Wrong request", print_exception=False)


def optional_defaults(block_fn: BlockFunction) -> list[Any]:
    """The defaults of the handler's last parameters that have one (``animal``, added to ``/classify`` later): an
    older program's request without them keeps working."""
    parameters = list(inspect.signature(block_fn.fn).parameters.values())[: len(block_fn.inputs)] if block_fn.fn else []
    defaults: list[Any] = []
    for parameter in reversed(parameters):
        if parameter.default is inspect.Parameter.empty:
            break
        defaults.insert(0, parameter.default)
    return defaults


def input_names(block_fn: BlockFunction) -> list[str]:
    """The handler's parameter names for its inputs, in order (what the API page calls them)."""
    parameters = list(inspect.signature(block_fn.fn).parameters) if block_fn.fn else []
    return [parameters[i] if i < len(parameters) else f"value {i + 1}" for i in range(len(block_fn.inputs))]


def file_count(block: gr.components.Component, fn: Any, name: str) -> str | None:
    """``single`` or ``multiple`` for an input that takes files (a ``gr.File``, or a ``gr.api`` parameter typed
    ``FileData`` or ``list[FileData]``), else ``None``."""
    if isinstance(block, gr.File):
        return "single" if block.file_count == "single" else "multiple"
    hint = get_type_hints(fn).get(name) if fn else None
    types = get_args(hint) or (hint,)
    if FileData in types:
        return "single"
    if any(get_origin(t) is list and get_args(t) == (FileData,) for t in types):
        return "multiple"
    return None


def file_problem(count: str | None, value: object) -> str | None:
    """What a file input needs, when ``value`` is not that (None is always fine: the handler says what is missing)."""
    if count is None or value is None:
        return None
    if count == "single":
        return None if is_file(value) else f"one file sent as handle_file(path), which uploads it, not {kind(value)}"
    if not isinstance(value, list):
        got = kind(value)
    elif wrong := [item for item in value if not is_file(item)]:
        got = f"a list holding {kind(wrong[0])}"
    else:
        return None
    return f"a list of files sent as [handle_file(path), ...], not {got}"


def is_file(value: object) -> bool:
    """A file as a client sends one after uploading it (``handle_file``, the browser): a path and Gradio's meta."""
    return isinstance(value, dict) and isinstance(value.get("path"), str) and value.get("meta") == FILE_META


def kind(value: object) -> str:
    """What was sent instead of a file, in a few words."""
    if value is None:
        return "nothing"
    if is_file(value):
        return "one file"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a dict without its path" if "path" not in value else "a dict without handle_file's meta"
    return type(value).__name__
