"""Where a command's human output goes: Rich on a terminal, plain lines when the output is
captured (an agent, a pipe, a file).

Captured output has no colours, no markup and no box drawing: a table is a title line, a
header line and one line per row, cells separated by tabs (`cut -f`, `awk -F'\\t'`). It also
skips importing Rich, which is a fifth of what a worker command costs to start.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["PlainPrinter", "Printer", "Rows", "escape_markup", "printer", "strip_markup"]

# Rich's own tag syntax (rich.markup.RE_TAGS): `[bold]`, `[/]`, `[red]`; `\[` escapes one.
_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")


class Printer(Protocol):
    def print(self, *objects: Any, **options: Any) -> None: ...


@dataclass(frozen=True)
class Rows:
    """A table, printed by either printer (Rich builds its `Table` through `__rich__`)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    title: str | None = None
    header: bool = True

    def __rich__(self) -> Table:
        from rich.table import Table

        if self.header:
            t = Table(title=self.title)
            for col in self.columns:
                t.add_column(col, overflow="fold")
        else:  # a record: bold keys, values folded
            t = Table(title=self.title, show_header=False, box=None, pad_edge=False)
            t.add_column(style="bold")
            t.add_column(overflow="fold")
        for row in self.rows:
            t.add_row(*row)
        return t

    def lines(self) -> list[str]:
        head = [self.title] if self.title else []
        if self.header:
            head.append("\t".join(self.columns))
        return [*head, *("\t".join(_one_line(c) for c in row) for row in self.rows)]


def _one_line(cell: str) -> str:
    return cell.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def escape_markup(text: str) -> str:
    """`text` shown as is by either printer, whatever brackets it holds (rich.markup.escape)."""
    return _TAG.sub(lambda m: f"{m.group(1)}{m.group(1)}\\[{m.group(2)}]", text)


def strip_markup(text: str) -> str:
    """`text` as Rich would show it, without its style: tags dropped, `\\[` unescaped."""

    def keep(m: re.Match[str]) -> str:
        slashes, tag = m.group(1), m.group(2)
        if len(slashes) % 2:  # an escaped bracket: the tag is text
            return slashes[:-1] + f"[{tag}]"
        return slashes

    return _TAG.sub(keep, text)


class PlainPrinter:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def print(self, *objects: Any, **options: Any) -> None:
        """Rich's `print` signature; only `sep` and `end` mean anything here."""
        parts: list[str] = []
        for obj in objects:
            if isinstance(obj, Rows):
                parts.append("\n".join(obj.lines()))
            else:
                parts.append(strip_markup(obj) if isinstance(obj, str) else str(obj))
        self.stream.write(str(options.get("sep", " ")).join(parts) + str(options.get("end", "\n")))


def printer(*, stderr: bool = False, soft_wrap: bool = False) -> Printer:
    """Rich for a terminal, else plain lines."""
    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty():
        return PlainPrinter(stream)
    from rich.console import Console

    return Console(file=stream, soft_wrap=soft_wrap)
