"""Human output: Rich on a terminal, plain lines when captured; the same words either way."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from studiolo.faces.cli._output import PlainPrinter, Rows, escape_markup, printer, strip_markup

# Text with the characters that make markup: brackets, slashes, backslashes, tag words.
_MARKUPISH = st.text(
    alphabet=st.sampled_from(list("[]/\\ab #@=x\n")) | st.characters(blacklist_categories=("Cc", "Cs")),
    max_size=60,
)


@given(_MARKUPISH)
def test_escaped_text_is_shown_as_is_by_both_printers(text: str) -> None:
    escaped = escape_markup(text)
    assert strip_markup(escaped) == text
    assert Text.from_markup(escaped).plain == text


@given(st.lists(st.sampled_from(["[bold]", "[/]", "[red]", "[/red]", "plain ", "x", "[1, 2]", '["a"]'])))
def test_stripping_shows_what_rich_shows(parts: list[str]) -> None:
    markup = "".join(parts)
    try:
        shown = Text.from_markup(markup).plain
    except Exception:  # unbalanced closing tags: Rich refuses them; nothing to compare
        return
    assert strip_markup(markup) == shown


def test_a_table_is_tab_separated_lines_when_captured() -> None:
    out = io.StringIO()
    rows = Rows(columns=["id", "note"], rows=[["a1", "two\nlines\tand a tab"]], title="attempts")
    PlainPrinter(out).print(rows)
    assert out.getvalue() == "attempts\nid\tnote\na1\ttwo lines and a tab\n"


def test_a_record_has_no_header_line() -> None:
    out = io.StringIO()
    PlainPrinter(out).print(Rows(columns=["field", "value"], rows=[["id", "x"]], header=False))
    assert out.getvalue() == "id\tx\n"


def test_rich_draws_the_same_rows_on_a_terminal() -> None:
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=80).print(
        Rows(columns=["identifier"], rows=[["a1"]], title="tasks")
    )
    drawn = out.getvalue()
    assert "tasks" in drawn and "a1" in drawn and "┃" in drawn


def test_captured_output_gets_the_plain_printer() -> None:
    # pytest captures stdout: not a terminal
    assert isinstance(printer(), PlainPrinter)
