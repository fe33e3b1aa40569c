"""Printing rows as a rich table or as JSON."""

from __future__ import annotations

import json
import sys
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table

# Outside a terminal (CI logs, pipes) rich would wrap at 80 columns; logs read better wide.
console = Console() if Console().is_terminal else Console(width=200)
err_console = Console(stderr=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _cell(value: Any) -> str:
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


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str | None = None) -> None:
    table = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*[_cell(row.get(c)) for c in columns])
    console.print(table)
