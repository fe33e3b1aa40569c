"""`dt show test-results`: the last result of each data test and expectation, per table (no JVM).

Two places hold results: the refresh history (what each refresh's audit found on the rows it
was about to commit: tests and expectations) and `_dt/test_results` (what `dt test` and `dt
build` found over whole tables: tests only). A check's last result is the newer of the two.
Only the checks the project defines now are listed, matched by dbt's `unique_id` (a test whose
definition changed is a new test): one defined but never run shows with no status.
"""

from __future__ import annotations

from typing import Any

from dtcli.data_tests import DROP, ERROR, FAIL, KEEP_OUT, RECORD, STOP
from dtcli.errors import UsageError, suggest
from dtcli.model import RefreshRecord
from dtcli.planning.checked import Checked
from dtcli.planning.test_plan import tests_by_table
from dtcli.state import history, reconcile, test_results

REFRESH = "refresh"


def show_test_results(checked: Checked, name: str | None = None) -> list[dict[str, Any]]:
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


def last_results(checked: Checked, refreshes: list[RefreshRecord], tested: list[dict[str, Any]]
                 ) -> dict[str, list[dict[str, Any]]]:
    """Table -> a row per check it defines, with that check's newest result from `refreshes`
    (records carrying audits, any order) or `tested` (`_dt/test_results`' latest rows); only the
    tables that define checks. The docs site shows the same rows per DT."""
    last = _last_results(refreshes, tested)
    out: dict[str, list[dict[str, Any]]] = {}
    for table, checks in tests_by_table(checked).items():
        rows = []
        for defined in _defined(checked.project.name, table, checks):
            found = last.get((table, defined["unique_id"]))
            rows.append({**defined, **_result(found)} if found else
                        {**defined, "status": None, "failures": None, "message": "not run yet", "samples": [],
                         "at": None, "by": None, "run_id": None})
        if rows:
            out[table] = rows
    return out


def _defined(project: str, table: str, checks) -> list[dict[str, Any]]:
    out = []
    for test in [*checks.tests, *checks.singular]:
        out.append({"table": table, "name": test.name, "kind": "test", "test": test.kind, "column": test.column,
                    "action": STOP if test.severity == ERROR else RECORD, "unique_id": test.unique_id(project)})
    for expectation in checks.expectations:
        action = {FAIL: STOP, DROP: KEEP_OUT}.get(expectation.on_violation, RECORD)
        out.append({"table": table, "name": expectation.name, "kind": "expectation", "test": "expectation",
                    "column": None, "action": action, "unique_id": expectation.unique_id(project, table)})
    return out


def _last_results(refreshes: list[RefreshRecord], tested: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """(table, unique_id) -> the newest result of that check, from either place; a result that
    says the check could not be evaluated (skipped) yields to an older one that has a status."""
    found: dict[tuple, dict[str, Any]] = {}

    def offer(result: dict[str, Any]) -> None:
        key = (result.get("table"), result.get("unique_id"))
        old = found.get(key)
        if old is None or _rank(result) > _rank(old):
            found[key] = result

    for record in refreshes:                  # newest first
        for result in record.data_tests or ():
            offer({**result, "table": result.get("table") or record.name, "at": record.refresh_end_time,
                   "by": f"{REFRESH} {record.refresh_action}", "run_id": record.run_id,
                   "refresh_state": record.state})
    for result in tested:
        offer({**result, "at": result.get("tested_at"), "by": f"dt {result.get('command') or 'test'}"})
    return found


def _rank(result: dict[str, Any]) -> tuple:
    return (result.get("status") != "skipped", result.get("at") or "")


def _result(found: dict[str, Any]) -> dict[str, Any]:
    keys = ("status", "failures", "message", "samples", "at", "by", "run_id")
    return {k: found.get(k) for k in keys}
