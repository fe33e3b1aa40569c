"""`dt show test-results`: the last result of each data test and expectation, per table (no JVM).

Two places hold results: the refresh history (what each refresh's audit found on the rows it
was about to commit: tests and expectations) and `_dt/test_results` (what `dt test` and `dt
build` found over whole tables: tests only). A check's last result is the newer of the two.
Only the checks the project defines now are listed, matched by dbt's `unique_id` (a test whose
definition changed is a new test): one defined but never run shows with no status.
"""

from __future__ import annotations

from typing import TypedDict

from dtcli.data_tests import DROP, ERROR, FAIL, KEEP_OUT, RECORD, STOP, SampleRow
from dtcli.errors import UsageError, suggest
from dtcli.model import RefreshRecord
from dtcli.planning.checked import Checked
from dtcli.planning.test_plan import tests_by_table
from dtcli.state import history, reconcile, test_results

REFRESH = "refresh"


class DefinedCheck(TypedDict):
    """A test or expectation as the project defines it now."""

    table: str
    name: str
    kind: str                 # "test" | "expectation"
    test: str
    column: str | None
    action: str
    unique_id: str


class CheckRow(DefinedCheck):
    """One row of `dt show test-results` (and of a DT's page in the docs site): the check and
    its newest result (all None, "not run yet", when it never ran)."""

    status: str | None
    failures: int | None
    message: str | None
    samples: list[SampleRow]
    at: str | None            # when it was found
    by: str | None            # "refresh INCREMENTAL", "dt test", ...
    run_id: str | None


class _Found(test_results.TestedResult, total=False):
    """A result from either place, with when and by what it was found."""

    at: str | None
    by: str
    refresh_state: str


def show_test_results(checked: Checked, name: str | None = None) -> list[CheckRow]:
    """One row per test and expectation the project defines (of table `name` only, when given),
    sources and seeds first, then the DTs in DAG order, each table's checks as defined."""
    project = checked.project
    key = name.lower() if name else None
    known = [*project.tables, *project.sources]
    if key and key not in known:
        raise UsageError(f"no dynamic table, source or seed named '{name}'", hint=suggest(key, known))
    reconcile.settle(project, checked.snapshot.tables)      # a killed run's refreshes are recorded first
    found = last_results(checked, history.audited(project.warehouse), test_results.latest(project.warehouse))
    order = [*sorted(project.sources), *checked.graph.order]
    return [row for table in order if not key or table == key for row in found.get(table, [])]


def last_results(checked: Checked, refreshes: list[RefreshRecord], tested: list[test_results.TestedResult]
                 ) -> dict[str, list[CheckRow]]:
    """Table -> a row per check it defines, with that check's newest result from `refreshes`
    (records carrying audits, any order) or `tested` (`_dt/test_results`' latest rows); only the
    tables that define checks. The docs site shows the same rows per DT."""
    last = _last_results(refreshes, tested)
    out: dict[str, list[CheckRow]] = {}
    for table, checks in tests_by_table(checked).items():
        rows = []
        for defined in _defined(checked.project.name, table, checks):
            found = last.get((table, defined["unique_id"]))
            rows.append(CheckRow(**{**defined, **_result(found)}) if found else
                        CheckRow(**defined, status=None, failures=None, message="not run yet", samples=[],
                                 at=None, by=None, run_id=None))
        if rows:
            out[table] = rows
    return out


def _defined(project: str, table: str, checks) -> list[DefinedCheck]:
    out = []
    for test in [*checks.tests, *checks.singular]:
        out.append(DefinedCheck(table=table, name=test.name, kind="test", test=test.kind, column=test.column,
                                action=STOP if test.severity == ERROR else RECORD,
                                unique_id=test.unique_id(project)))
    for expectation in checks.expectations:
        action = {FAIL: STOP, DROP: KEEP_OUT}.get(expectation.on_violation, RECORD)
        out.append(DefinedCheck(table=table, name=expectation.name, kind="expectation", test="expectation",
                                column=None, action=action, unique_id=expectation.unique_id(project, table)))
    return out


def _last_results(refreshes: list[RefreshRecord], tested: list[test_results.TestedResult]
                  ) -> dict[tuple[str | None, str | None], _Found]:
    """(table, unique_id) -> the newest result of that check, from either place; a result that
    says the check could not be evaluated (skipped) yields to an older one that has a status."""
    found: dict[tuple[str | None, str | None], _Found] = {}

    def offer(result: _Found) -> None:
        key = (result.get("table"), result.get("unique_id"))
        old = found.get(key)
        if old is None or _rank(result) > _rank(old):
            found[key] = result

    for record in refreshes:                  # newest first
        for result in record.data_tests or ():
            offer(_Found(**{**result, "table": result.get("table") or record.name, "at": record.refresh_end_time,
                            "by": f"{REFRESH} {record.refresh_action}", "run_id": record.run_id,
                            "refresh_state": record.state}))
    for result in tested:
        offer(_Found(**{**result, "at": result.get("tested_at"), "by": f"dt {result.get('command') or 'test'}"}))
    return found


def _rank(result: _Found) -> tuple[bool, str]:
    return (result.get("status") != "skipped", result.get("at") or "")


def _result(found: _Found) -> dict[str, object]:
    """The result columns of a `CheckRow`, from what was found."""
    keys = ("status", "failures", "message", "samples", "at", "by", "run_id")
    return {k: found.get(k) for k in keys}
