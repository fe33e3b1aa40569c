"""Printing rows as a rich table or as JSON."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from dtcli.ui.fit import Row

# Outside a terminal (CI logs, pipes) rich would wrap at 80 columns; logs read better wide.
console = Console() if Console().is_terminal else Console(width=200)
err_console = Console(stderr=True)


def terminal_width() -> int:
    """The width to fit: the terminal's; outside one, $COLUMNS if set, else 200 (CI logs)."""
    if console.is_terminal:
        return console.size.width
    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return 200


def print_fitted(columns, rows: Sequence[Row], *, wide: bool = False,
                 width: int | None = None) -> None:
    """Rows as a table that fits the terminal (`dtcli.ui.fit`); `wide`: every column in full."""
    from dtcli.ui.fit import plain_width, render

    fit = None if wide else (width or terminal_width())
    out = Console(width=max(plain_width(columns, rows, fit), 20), soft_wrap=True,
                  force_terminal=console.is_terminal, no_color=not console.is_terminal,
                  highlight=False)
    for line in render(columns, rows, fit):
        out.print(line, overflow="ignore", crop=False)


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dict) and "num_inserted_rows" in value:
        return f"+{value['num_inserted_rows']} -{value['num_deleted_rows']}"
    if isinstance(value, str) and len(value) > 19 and value[4:5] == "-" and value[10:11] == "T":
        return value[:19].replace("T", " ")  # ISO timestamps, to the second
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)        # e.g. explain's considerations: one per line
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return str(value)


def print_table(rows: Sequence[Row], columns: Sequence[str], title: str | None = None) -> None:
    table = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*[_cell(row.get(c)) for c in columns])
    console.print(table)
