"""What `dt test --unit` prints: a line per unit test; under a failing one, its expected rows
against the rows the DT held, in one table (`-` expected and missing, `+` held and not expected,
blank: both)."""

from __future__ import annotations

_LABEL = {"pass": ("PASS", "green"), "fail": ("FAIL", "red"), "error": ("ERROR", "red")}


def unit_line(result) -> str:
    label, _ = _LABEL.get(result.status, (result.status.upper(), ""))
    kind = " (given_after: incremental)" if result.test.given_after is not None else ""
    head = f"{label:<5} {result.test.name} ({result.test.table}){kind}"
    return f"{head}: {result.message}" if result.message else head


def _value(value) -> str:
    return "NULL" if value is None else str(value)


def diff_table(result):
    """The expected rows against the actual ones, each row once per copy."""
    from collections import Counter

    from rich.table import Table

    table = Table()
    table.add_column("", no_wrap=True)
    for column in result.columns:
        table.add_column(column)
    missing = Counter(result.missing)
    for row in result.expected:
        if missing[row]:
            missing[row] -= 1
            table.add_row("-", *map(_value, row), style="red")
        else:
            table.add_row("", *map(_value, row))
    for row in result.unexpected:
        table.add_row("+", *map(_value, row), style="green")
    return table


def print_unit_result(result, out=None) -> None:
    from dtcli.ui.output import console

    out = out or console
    out.print(unit_line(result), style=_LABEL.get(result.status, ("", ""))[1], highlight=False, markup=False,
              soft_wrap=True)
    if result.status == "fail":
        # a line of its own: a table's title wraps to the table's width
        out.print(f"  {result.test.name}: expected (-) against actual (+)", highlight=False, markup=False)
        out.print(diff_table(result))


def unit_summary(results) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "error")}
    words = [("pass", "passed"), ("fail", "failed"), ("error", "errored")]
    text = ", ".join(f"{counts[k]} {w}" for k, w in words if counts[k]) or "no unit tests to run"
    return f"unit tests: {text}"
