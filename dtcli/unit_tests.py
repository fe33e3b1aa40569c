"""Unit tests of a DT (dbt 1.8's `unit_tests:`) as plain data, shared by every layer.

A unit test gives rows for each input of a DT and the rows the DT must then hold (`expect`); an
optional `given_after` gives the inputs' next rows, and `expect` is then what the DT must hold
after its incremental refresh from the first inputs to these. Parsed from the table's YAML by
dtcli/project/unit_tests.py, checked against the inputs' and the DT's columns by
dtcli/planning/unit_tests.py, run by dtcli/api/unit_tests.py (`dt test --unit`).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

FIXTURES_DIR = Path("tests") / "fixtures"     # dbt's place for `fixture:` CSV files

# One row of a unit test's given or expected rows, as the YAML (a scalar per column) or a CSV
# fixture (text, None for an empty field) gives it: column (lower case) -> value.
GivenRow = dict[str, object]


@dataclass
class Rows:
    """Rows as the YAML gives them: inline (a list of mappings, or CSV text with `format: csv`),
    or a CSV file (`fixture:`: a name in tests/fixtures/, or a path from the project root)."""

    rows: list[GivenRow] | None = None     # inline, keys lowercased; None: read `fixture`
    fixture: str | None = None
    file: str | None = None
    line: int | None = None
    row_lines: list[int] | None = None           # inline: each row's line in the YAML

    def line_of_row(self, k: int) -> int | None:
        return self.row_lines[k] if self.row_lines and k < len(self.row_lines) else self.line

    def fixture_path(self, root: Path) -> Path:
        name = str(self.fixture)
        if "/" in name or name.endswith(".csv"):
            return root / name
        return root / FIXTURES_DIR / f"{name}.csv"

    def read(self, root: Path) -> list[GivenRow]:
        """The rows, a fixture's read from its file (an empty CSV field is NULL)."""
        if self.rows is not None:
            return self.rows
        return csv_rows(self.fixture_path(root).read_text(encoding="utf-8"))


def csv_rows(text: str) -> list[GivenRow]:
    """CSV text with a header line as rows (names lowercased, spaces around values dropped, an
    empty field NULL)."""
    reader = csv.reader(io.StringIO(text.strip("\n")))
    lines = [line for line in reader if line]
    if not lines:
        return []
    header = [h.strip().lower() for h in lines[0]]
    out = []
    for k, line in enumerate(lines[1:], start=2):
        if len(line) != len(header):
            raise ValueError(f"CSV row {k} has {len(line)} values for {len(header)} columns ({', '.join(header)})")
        out.append({h: (v.strip() if v.strip() != "" else None) for h, v in zip(header, line)})
    return out


@dataclass
class Given:
    input: str                 # the DT or source read, by its name in the project
    rows: Rows
    line: int | None = None


@dataclass
class UnitTest:
    name: str
    table: str
    given: list[Given]
    expect: Rows
    given_after: list[Given] | None = None   # the inputs' next rows: `expect` is after the incremental refresh
    description: str | None = None
    file: str | None = None
    line: int | None = None

    def unique_id(self, project: str) -> str:
        return f"unit_test.{project}.{self.table}.{self.name}"
