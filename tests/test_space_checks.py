"""``space/checks.py`` without the page: what a file input needs, and what was sent instead, in words.

The whole path (a request of the wrong shape answered with one sentence before any handler) is driven through the
real app in tests/test_app.py; these pin the sentences' parts on their own.
"""

from __future__ import annotations

import pytest
from gradio import FileData

from space import checks

FILE = {"path": "/tmp/gradio/cow.jpg", "meta": checks.FILE_META}


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (None, "nothing"),
        (FILE, "one file"),
        (True, "true/false"),
        (3, "a number"),
        (2.5, "a number"),
        ("cow.jpg", "a string"),
        ([FILE], "a list"),
        ({"meta": checks.FILE_META}, "a dict without its path"),
        ({"path": "/etc/passwd"}, "a dict without handle_file's meta"),
        (b"bytes", "bytes"),
    ],
)
def test_what_was_sent_instead_of_a_file_in_a_few_words(value: object, said: str) -> None:
    assert checks.kind(value) == said


def test_a_file_is_a_path_with_gradios_meta() -> None:
    assert checks.is_file(FILE)
    assert not checks.is_file({"path": FILE["path"]}), "a bare path would be opened on the server"
    assert not checks.is_file({"path": 3, "meta": checks.FILE_META})
    assert not checks.is_file(FILE["path"])


def test_what_a_file_input_needs() -> None:
    one = "one file sent as handle_file(path), which uploads it, not "
    many = "a list of files sent as [handle_file(path), ...], not "
    assert checks.file_problem("single", FILE) is None
    assert checks.file_problem("single", None) is None, "None: the handler says what is missing"
    assert checks.file_problem(None, "anything") is None, "not a file input"
    assert checks.file_problem("single", "cow.jpg") == one + "a string"
    assert checks.file_problem("single", [FILE]) == one + "a list"
    assert checks.file_problem("multiple", [FILE, FILE]) is None
    assert checks.file_problem("multiple", []) is None
    assert checks.file_problem("multiple", 5) == many + "a number"
    assert checks.file_problem("multiple", [FILE, "cow.jpg"]) == many + "a list holding a string"
    assert checks.file_problem("multiple", [None]) == many + "a list holding nothing"


def test_which_inputs_take_files() -> None:
    import gradio as gr

    def handler(photo: FileData | None, more: list[FileData] | None = None, note: str = "") -> None: ...

    assert checks.file_count(gr.File(file_count="multiple"), handler, "photo") == "multiple", "the component says"
    assert checks.file_count(gr.File(), handler, "note") == "single"
    textbox = gr.Textbox()
    assert checks.file_count(textbox, handler, "photo") == "single", "a gr.api parameter: its type hint says"
    assert checks.file_count(textbox, handler, "more") == "multiple"
    assert checks.file_count(textbox, handler, "note") is None
