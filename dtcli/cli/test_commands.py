"""`dt test` (data tests over the tables as they are) and `dt build` (a run, then the tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.cli.app import NoCache, ProjectDir, RunFormat, Target, Threads, Wait, app, check_format
from dtcli.errors import EXIT_REFRESH_FAILED

Select = Annotated[Optional[list[str]], typer.Option("--select", "-s", help="dbt-style selectors, as for dt run; a source's or seed's name selects its tests.")]


@app.command()
def test(project_dir: ProjectDir = Path("."), target: Target = None, select: Select = None,
         format: RunFormat = "table", no_cache: NoCache = False,
         unit: Annotated[bool, typer.Option("--unit", help="Run the DTs' unit_tests: (given rows, expected rows) instead, in a local Spark session, touching no warehouse.")] = False) -> None:
    """Run the data tests of the dynamic tables, sources and seeds over the tables as they are.

    Every test in the tables' YAML (not_null, unique, accepted_values, relationships,
    expression_is_true, unique_combination_of_columns) and every singular test in tests/*.sql
    runs over the whole table, in DAG order, in one Spark application; no table is written.
    Each test prints PASS, FAIL (with the failing row count and a few rows), WARN (severity:
    warn) or ERROR; target/run_results.json gets one result per test, and the warehouse's
    _dt/test_results too (dt show test-results lists each test's last result). A
    refresh already runs the tests on what it writes before it commits (see dt run). Exit code
    1 when an error-severity test failed, 2 on bad input.

    --unit runs the DTs' unit tests instead (unit_tests: in a table's YAML, dbt's syntax): each
    DT created by dt's own engine from its given rows in a temporary folder, in one local Spark
    session, and compared with its expected rows; with given_after, refreshed INCREMENTAL to the
    next rows first. A failing case prints its expected rows against the actual ones.

    Example: dt test --select orders+
    """
    from dtcli import api
    from dtcli.api import run_results
    from dtcli.api.testing import test as run_tests
    from dtcli.artifacts.typed_json import to_json
    from dtcli.ui.output import err_console, print_json
    from dtcli.ui.test_view import print_tests

    fmt = check_format(format)
    if unit:
        _unit(project_dir, target, select, fmt, no_cache)
        return
    checked = api.check(project_dir, target, check_sources=True, use_cache=not no_cache)
    started = _utcnow()
    result = run_tests(checked, select)
    doc = run_results.test_document(checked.project, result, command="test", args={"select": select or []},
                                    started_at=started)
    run_results.write(checked.project, doc)
    if fmt == "json":
        print_json(to_json(doc))
        print_tests(result, out=err_console)
    else:
        print_tests(result)
    if result.not_started:
        err_console.print(f"error: the Spark application did not start: {result.not_started}", highlight=False,
                          markup=False, soft_wrap=True)
    if result.failed:
        raise typer.Exit(EXIT_REFRESH_FAILED)


def _unit(project_dir: Path, target: str | None, select: list[str] | None, fmt: str, no_cache: bool) -> None:
    """`dt test --unit`: the unit tests of the selected DTs (their config is checked first, with
    the project's, before any JVM starts)."""
    from dtcli import api
    from dtcli.api import run_results
    from dtcli.api.unit_tests import run_unit_tests
    from dtcli.artifacts.typed_json import to_json
    from dtcli.ui.output import console, err_console, print_json
    from dtcli.ui.unit_test_view import print_unit_result, unit_summary

    checked = api.check(project_dir, target, use_cache=not no_cache)
    out = err_console if fmt == "json" else console
    started = _utcnow()
    results = run_unit_tests(checked, select, on_result=lambda r: print_unit_result(r, out=out))
    out.print(unit_summary(results), highlight=False)
    doc = run_results.unit_document(checked.project, results, args={"select": select or [], "unit": True},
                                    started_at=started)
    run_results.write(checked.project, doc)
    if fmt == "json":
        print_json(to_json(doc))
    if not doc.success:
        raise typer.Exit(EXIT_REFRESH_FAILED)


@app.command()
def build(project_dir: ProjectDir = Path("."), target: Target = None, select: Select = None,
          all_tables: Annotated[bool, typer.Option("--all", help="Refresh every selected table now, ignoring target lag.")] = False,
          full_refresh: Annotated[bool, typer.Option("--full-refresh", help="Recompute the selected tables FULL now (implies --all).")] = False,
          threads: Threads = None, wait: Wait = 0.0, format: RunFormat = "table", no_cache: NoCache = False) -> None:
    """Test the sources, run, then test the dynamic tables: dbt build for dynamic tables.

    First the data tests of the sources and seeds the selected tables read; a DT downstream of
    one whose error-severity test failed is not refreshed (UPSTREAM_FAILED). Then `dt run` over
    the rest (each refresh checks what it writes before it commits, and a DT whose check fails
    holds its downstream DTs back), then `dt test` over the selected DTs as they now are.
    target/run_results.json holds the refreshes (`results`) and every test (`data_tests`).
    Exit code 1 when a refresh or an error-severity test failed.

    Example: dt build --select +customer_rank --all
    """
    from dtcli import api
    from dtcli.api import run_results
    from dtcli.api.testing import build as run_build
    from dtcli.artifacts.typed_json import to_json
    from dtcli.cli.run_commands import _set_threads
    from dtcli.ui.output import console, err_console, print_json
    from dtcli.ui.run_view import RunView, print_summary
    from dtcli.ui.test_view import print_tests

    fmt = check_format(format)
    checked = api.check(project_dir, target, check_sources=True, with_stats=True, use_cache=not no_cache)
    _set_threads(checked, threads)
    started = _utcnow()
    progress = RunView()
    try:
        result = run_build(checked, select, all_tables=all_tables, full_refresh=full_refresh, wait=wait,
                           on_event=progress, on_plan=progress.plan)
    finally:
        progress.close()
    args = {"select": select or [], "all": all_tables, "full_refresh": full_refresh}
    doc = run_results.document(checked.project, result.run, command="build", args=args, started_at=started)
    tested = [t for t in (result.sources, result.tables) if t is not None]
    doc.data_tests = [e for t in tested for e in run_results.tested_entries(t.records)]
    doc.success = doc.success and not result.failed
    run_results.write(checked.project, doc)
    out = err_console if fmt == "json" else console
    if fmt == "json":
        print_json(to_json(doc))
    for phase in tested:
        print_tests(phase, out=out)
    print_summary(result.run, out=out)
    if result.failed:
        raise typer.Exit(EXIT_REFRESH_FAILED)


def _utcnow():
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)
