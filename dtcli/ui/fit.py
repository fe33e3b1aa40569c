"""Tables that fit the terminal: the columns a person scans, each cell on one line.

A view is a list of columns, each with a header, a way to turn a row into short text, and a
priority. The columns are taken by priority while they fit the width (then shown in their own
order); one column may be `flexible`: it takes what is left and ends in "…" when too long.
Nothing wraps: a row of the data is a line of the terminal. `wide` shows every column at its
full width, whatever the terminal (lines may then be longer than it is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

GAP = 2          # spaces between columns
ELLIPSIS = "…"


# One row as a command prints it: column -> value (a `dt show` row, a data test's result...).
Row = Mapping[str, object]


@dataclass(frozen=True)
class Col:
    header: str
    text: Callable[[Row], str]
    priority: int = 0            # lower is kept first when the terminal is narrow
    flexible: bool = False       # takes the width left over, cut with an ellipsis
    align: str = "left"
    style: Callable[[Row], str] | None = None   # rich style per cell
    min_width: int = 8           # a flexible column narrower than this is dropped


def _one_line(value: str) -> str:
    return " ".join(str(value).split())


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + ELLIPSIS


def choose(columns: Sequence[Col], rows: Sequence[Row], width: int | None) -> list[tuple[Col, int]]:
    """The columns to show, in their order, each with its width. `width=None`: all, in full."""
    cells = {id(c): [_one_line(c.text(r)) for r in rows] for c in columns}
    natural = {id(c): max([len(c.header)] + [len(v) for v in cells[id(c)]]) for c in columns}
    if width is None:
        return [(c, natural[id(c)]) for c in columns]
    kept: list[Col] = []
    used = 0
    for col in sorted(columns, key=lambda c: c.priority):
        need = (min(natural[id(col)], max(col.min_width, len(col.header))) if col.flexible
                else natural[id(col)])
        extra = need + (GAP if kept else 0)
        if used + extra <= width:
            kept.append(col)
            used += extra
    ordered = [c for c in columns if c in kept]
    widths = {id(c): natural[id(c)] for c in ordered if not c.flexible}
    fixed = sum(widths.values()) + GAP * (len(ordered) - 1)
    flexible = [c for c in ordered if c.flexible]
    for col in flexible:   # the room left, shared in order (one flexible column in practice)
        room = max(len(col.header), width - fixed - sum(widths.get(id(f), 0) for f in flexible))
        widths[id(col)] = min(natural[id(col)], room)
    return [(c, widths[id(c)]) for c in ordered]


def render(columns: Sequence[Col], rows: Sequence[Row], width: int | None) -> list[str]:
    """Rich markup lines: a bold header, a rule, one line per row."""
    from rich.markup import escape

    chosen = choose(columns, rows, width)

    def pad(text: str, w: int, align: str) -> str:
        return text.rjust(w) if align == "right" else text.ljust(w)

    gap = " " * GAP
    header = gap.join(f"[bold]{escape(pad(c.header, w, c.align))}[/]" for c, w in chosen)
    rule = gap.join("─" * w for _, w in chosen)
    lines = [header.rstrip(), rule]
    for row in rows:
        parts = []
        for col, w in chosen:
            text = escape(pad(_cut(_one_line(col.text(row)), w), w, col.align))
            style = col.style(row) if col.style else ""
            parts.append(f"[{style}]{text}[/]" if style else text)
        lines.append(gap.join(parts).rstrip())
    return lines


def plain_width(columns: Sequence[Col], rows: Sequence[Row], width: int | None) -> int:
    chosen = choose(columns, rows, width)
    return sum(w for _, w in chosen) + GAP * (len(chosen) - 1)
