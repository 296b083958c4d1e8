"""Printing: tables with ``rich`` on a terminal, aligned plain text otherwise; JSON; progress.

Every command builds its result as plain data (printed with ``--json``) and shows it
through a :class:`Printer`, so what a person reads and what a machine reads come from
the same values. ``rich`` and ``tqdm`` are optional (``pip install "litedelegate[cli]"``):
without them the output is the plain-text form and the progress bar a counter.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence, TextIO

import numpy as np


@dataclass(frozen=True)
class Styled:
    """A table cell or line with a rich style (``"green"``, ``"bold red"``); plain text ignores it."""

    text: str
    style: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass
class Table:
    """Rows of cells under column headers. ``right`` names the right-aligned columns."""

    columns: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    title: str | None = None
    right: frozenset[str] = frozenset()

    def add(self, *cells: Any) -> None:
        self.rows.append(cells)


def use_rich(stream: TextIO) -> bool:
    """Rich output when ``stream`` is a terminal, ``rich`` is installed and NO_COLOR is unset
    (``LITEDELEGATE_RICH=1`` forces it, ``=0`` turns it off)."""
    forced = os.environ.get("LITEDELEGATE_RICH")
    if forced in ("0", "1"):
        wanted = forced == "1"
    else:
        wanted = stream.isatty() and "NO_COLOR" not in os.environ
    if not wanted:
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


class Printer:
    """Writes lines, headings and tables to ``stream`` (rich or plain)."""

    def __init__(self, stream: TextIO | None = None, rich: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.rich = use_rich(self.stream) if rich is None else rich
        self._console = None
        if self.rich:
            from rich.console import Console

            self._console = Console(file=self.stream, highlight=False, soft_wrap=False, force_terminal=True)

    def line(self, text: str | Styled = "", style: str = "") -> None:
        if isinstance(text, Styled):
            text, style = text.text, style or text.style
        if self._console is not None:
            from rich.text import Text

            self._console.print(Text(text, style=style or ""))
        else:
            self.stream.write(f"{text}\n")

    def heading(self, text: str) -> None:
        if self._console is not None:
            self._console.rule(f"[bold]{_escape_markup(text)}[/bold]", align="left")
        else:
            self.stream.write(f"\n== {text} ==\n")

    def table(self, table: Table) -> None:
        if self._console is not None:
            self._console.print(_rich_table(table))
        else:
            self.stream.write(render_plain(table))

    def flush(self) -> None:
        self.stream.flush()


def _escape_markup(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _rich_table(table: Table):
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    result = RichTable(title=table.title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in table.columns:
        result.add_column(column, justify="right" if column in table.right else "left", overflow="fold")
    for row in table.rows:
        result.add_row(*(Text(cell.text, style=cell.style) if isinstance(cell, Styled) else Text(_cell(cell)) for cell in row))
    return result


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_plain(table: Table) -> str:
    """The table as aligned text (two spaces between columns, no trailing spaces)."""
    cells = [[_cell(c) for c in row] for row in table.rows]
    widths = [len(c) for c in table.columns]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], max((len(part) for part in cell.split("\n")), default=0))

    def fmt(row: Sequence[str]) -> str:
        parts = []
        for i, cell in enumerate(row):
            column = table.columns[i]
            parts.append(cell.rjust(widths[i]) if column in table.right else cell.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    lines = [table.title] if table.title else []
    lines.append(fmt(list(table.columns)))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(fmt(row) for row in cells)
    return "\n".join(lines) + "\n"


# -- JSON ---------------------------------------------------------------------------------------

def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def print_json(data: Any, stream: TextIO | None = None) -> None:
    """``data`` as indented JSON (numpy values converted) on one stream."""
    stream = stream if stream is not None else sys.stdout
    json.dump(data, stream, indent=2, default=_json_default)
    stream.write("\n")


# -- progress -----------------------------------------------------------------------------------

def progress(iterable: Iterable[Any], total: int, description: str, stream: TextIO | None = None) -> Iterator[Any]:
    """A progress bar on ``stream`` (stderr) when it is a terminal: tqdm if installed,
    else a counter. Nothing is drawn when the stream is not a terminal."""
    stream = stream if stream is not None else sys.stderr
    if not stream.isatty():
        yield from iterable
        return
    try:
        from tqdm import tqdm
    except ImportError:
        width = 0
        for done, item in enumerate(iterable, 1):
            yield item
            text = f"{description}: {done}/{total}"
            width = len(text)
            stream.write(f"\r{text}")
            stream.flush()
        stream.write("\r" + " " * width + "\r")  # leave no counter behind, as tqdm(leave=False)
        return
    yield from tqdm(iterable, total=total, desc=description, file=stream, unit="run", leave=False)


def format_shape(shape: Sequence[int] | None) -> str:
    return "?" if shape is None else "[" + ",".join(str(int(d)) for d in shape) + "]"


def format_bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"  # pragma: no cover
