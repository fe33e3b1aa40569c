"""Unit tests checked against the DT's inputs and columns, with the rest of the project (no Spark).

Each `given` names an input the DT reads, and every input is given (a seed not given is read
from its CSV, as dbt does); each row names only columns its input has, and `expect` only columns
of the DT; a CSV fixture exists and its rows match its header; `given_after` needs a DT that
refreshes incrementally. All of that is an error at the YAML's line with the fix, before any
Spark work (`dt validate`, `dt test --unit`).
"""

from __future__ import annotations

from pathlib import Path

from dtcli.errors import ValidationError, suggest
from dtcli.model import FULL, Column, Project
from dtcli.planning.kinds.registry import kind_of
from dtcli.planning.resolved_mode import ResolvedMode
from dtcli.unit_tests import Given, Rows, UnitTest


def check_unit_tests(project: Project, schemas: dict[str, tuple[Column, ...]], order: list[str],
                     modes: dict[str, ResolvedMode]) -> dict[str, list[UnitTest]]:
    """DT -> its unit tests, checked (`modes`: the resolved refresh modes)."""
    out: dict[str, list[UnitTest]] = {}
    for name in order:
        table = project.tables[name]
        cases = list(table.config.unit_tests)
        if not cases:
            continue
        kind_of(table).check_unit_tests(table, cases)
        for case in cases:
            given = {g.input for g in case.given}
            for key, entries in (("given", case.given), ("given_after", case.given_after or [])):
                for entry in entries:
                    _check_input(project, table.inputs, case, entry, schemas, key)
            missing = [i for i in table.inputs if i not in given and not _is_seed(project, i)]
            if missing:
                raise ValidationError(f"unit test {case.name}: no rows given for {', '.join(missing)}, which {name} "
                                      "reads", file=case.file, line=case.line,
                                      hint=f"add - input: ref('{missing[0]}') with rows: [] for none")
            _check_rows(project.root, case, case.expect, schemas.get(name, ()), f"{name} (expect)", "expect")
            if case.given_after and modes.get(name) is not None and modes[name].mode == FULL:
                raise ValidationError(f"unit test {case.name}: given_after needs an incremental refresh, and {name} "
                                      f"refreshes FULL: {modes[name].reason}", file=case.file, line=case.line,
                                      hint="drop given_after (it tests the incremental refresh), or let the DT "
                                           "refresh incrementally (dt explain NAME says what stops it)")
        out[name] = list(cases)
    return out


def _is_seed(project: Project, name: str) -> bool:
    source = project.sources.get(name)
    return source is not None and source.origin == "seed"


def seed_rows(project: Project, name: str) -> Rows:
    """A seed input a unit test does not give: its CSV, as dbt does."""
    return Rows(fixture=str(Path(project.sources[name].file).resolve()))


def _check_input(project: Project, inputs: tuple[str, ...], case: UnitTest, entry: Given,
                 schemas: dict[str, tuple[Column, ...]], key: str) -> None:
    if entry.input not in inputs:
        raise ValidationError(f"unit test {case.name}: {key} input '{entry.input}' is not read by {case.table}",
                              file=case.file, line=entry.line,
                              hint=suggest(entry.input, inputs) or f"{case.table} reads {', '.join(inputs)}")
    _check_rows(project.root, case, entry.rows, schemas.get(entry.input, ()), entry.input, key)


def _check_rows(root: Path, case: UnitTest, rows: Rows, columns: tuple[Column, ...], what: str, key: str) -> None:
    if rows.fixture is not None:
        path = rows.fixture_path(root)
        if not path.is_file():
            raise ValidationError(f"unit test {case.name}: {key} fixture '{rows.fixture}' not found ({path})",
                                  file=rows.file or case.file, line=rows.line,
                                  hint="fixture: NAME reads tests/fixtures/NAME.csv; a path ending .csv is "
                                       "read from the project's folder")
        try:
            found = rows.read(root)
        except ValueError as exc:
            raise ValidationError(f"unit test {case.name}: {key} fixture {path.name}: {exc}",
                                  file=rows.file or case.file, line=rows.line) from None
    else:
        found = rows.rows or []
    names = {c.name.lower() for c in columns}
    if not names:           # columns only Spark will know: checked when the test runs
        return
    for k, row in enumerate(found):
        unknown = [c for c in row if c not in names]
        if unknown:
            raise ValidationError(f"unit test {case.name}: {key} row {k + 1} of {what} names column "
                                  f"'{unknown[0]}', which {what.split(' ')[0]} does not have",
                                  file=rows.file or case.file, line=rows.line if rows.fixture else rows.line_of_row(k),
                                  hint=suggest(unknown[0], names)
                                  or f"its columns are {', '.join(c.name for c in columns)}")
