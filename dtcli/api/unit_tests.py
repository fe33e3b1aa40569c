"""`dt test --unit`: each unit test of the selected DTs run on its given rows, touching no warehouse.

A case becomes a scratch project in a temporary folder: the DT as defined, its inputs as Delta
tables holding the given rows (planning/unit_tests.py checked them already), its own warehouse
there. The DT is created by dt's own plan and engine (`execute` with the in-process launcher
below), as a run creates it; with `given_after`, the inputs then change to the next rows and the
DT refreshes INCREMENTAL through the change compiler, as a scheduled refresh would, and `expect`
is compared with what that refresh left. One local Spark session (one JVM) serves every case;
the folder is removed after each case. The DT's data tests and its warn / fail expectations are
not run (a unit test checks the query's logic); `drop` expectations are part of its
definition, so they apply.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dtcli.api.runs import execute, plan_run
from dtcli.engine.launch.contract import LaunchResult
from dtcli.errors import EXIT_REFRESH_FAILED, DtError
from dtcli.model import INCREMENTAL, MANUAL, SUCCEEDED, Project, SourceDef, TableDef
from dtcli.planning import selectors
from dtcli.planning.checked import Checked
from dtcli.planning.checked import check as check_project
from dtcli.planning.snapshot import take_snapshot
from dtcli.planning.unit_tests import seed_rows
from dtcli.unit_tests import Given, GivenRow, UnitTest

PASS, FAIL, ERROR = "pass", "fail", "error"
LOG_FILE = "unit_tests_spark.log"      # under target/: the local session's JVM output


class SessionNotStarted(DtError):
    exit_code = EXIT_REFRESH_FAILED
# config a scratch copy of the DT drops: how it is scheduled, created or checked (not what it holds)
_DROPPED = ("backfill", "initialize", "scheduler", "data_tests", "column_notes", "unit_tests", "target_lag",
            "tags", "comment")


@dataclass
class UnitResult:
    test: UnitTest
    status: str                                 # pass | fail | error
    message: str | None = None
    columns: list[str] = field(default_factory=list)
    expected: list[tuple] = field(default_factory=list)
    actual: list[tuple] = field(default_factory=list)
    missing: list[tuple] = field(default_factory=list)       # expected rows the DT did not hold
    unexpected: list[tuple] = field(default_factory=list)    # rows it held that were not expected
    refresh_action: str | None = None           # of the refresh `expect` was compared after


def selected_cases(checked: Checked, names: list[str] | None = None) -> list[UnitTest]:
    tables = selectors.select(checked.project, checked.graph, names)
    return [case for name in checked.graph.ordered(tables) for case in checked.unit_tests.get(name, ())]


def run_unit_tests(checked: Checked, names: list[str] | None = None, *,
                   session: Callable[[Project, str], Any] | None = None,
                   on_result: Callable[[UnitResult], None] = lambda r: None) -> list[UnitResult]:
    """Run the unit tests of the selected DTs (`names`: selectors; none: all). `session(project,
    scratch_dir)` gives the Spark session (default: an in-process local one, started once, and
    only when there is a case to run)."""
    cases = selected_cases(checked, names)
    if not cases:
        return []
    scratch = Path(tempfile.mkdtemp(prefix="dt-unit-"))
    try:
        spark = _session(checked.project, scratch, session)
        out = []
        for k, case in enumerate(cases):
            result = _run_case(spark, checked, case, scratch / f"case{k}")
            on_result(result)
            out.append(result)
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _session(project: Project, scratch: Path, session: Callable[[Project, str], Any] | None):
    if session is not None:
        return session(project, str(scratch / "spark-warehouse"))
    from dtcli.engine.launch.session import scratch_session
    from dtcli.engine.runtime.spark_errors import SPARK_ERRORS

    log = project.target_dir / LOG_FILE
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    try:
        return scratch_session(project, str(scratch / "spark-warehouse"), log)
    except (*SPARK_ERRORS, OSError, DtError) as exc:     # no Java, a jar missing (ConfigError), a setting Spark rejects
        raise SessionNotStarted(f"the local Spark session for the unit tests did not start: "
                                f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}",
                                hint=f"its output is in {log}") from exc


def _run_case(spark, checked: Checked, case: UnitTest, folder: Path) -> UnitResult:
    from dtcli.engine.runtime.unit_rows import compare, write_input

    project, table = checked.project, checked.project.tables[case.table]
    folder.mkdir(parents=True)
    try:
        scratch = _scratch_project(project, table, folder, incremental=case.given_after is not None)
        given = _given_rows(checked, case, case.given)
        after = _given_rows(checked, case, case.given_after, partial=True) if case.given_after else {}
        columns = {name: _columns(checked, name, [*rows, *after.get(name, [])]) for name, rows in given.items()}
        for name, rows in given.items():
            write_input(spark, scratch.sources[name].path, rows, columns[name])
        record = _refresh(spark, scratch, case.table)
        if record.state == SUCCEEDED and case.given_after is not None:
            for name, rows in after.items():
                write_input(spark, scratch.sources[name].path, rows, columns[name], before=given[name])
            record = _refresh(spark, scratch, case.table)
            if record.state == SUCCEEDED and record.refresh_action != INCREMENTAL:
                return UnitResult(case, ERROR, f"given_after: the refresh was {record.refresh_action}, not INCREMENTAL"
                                  f" ({record.refresh_action_reason or record.state_message or 'no reason given'})",
                                  refresh_action=record.refresh_action)
        if record.state != SUCCEEDED:
            return UnitResult(case, ERROR, f"the refresh failed: {record.state_message}",
                              refresh_action=record.refresh_action)
        found = compare(spark, scratch.table_path(case.table), case.expect.read(project.root))
    except DtError as exc:
        return UnitResult(case, ERROR, str(exc))
    except Exception as exc:    # broad: one case's boundary, whatever it raises is its ERROR (Spark's own above all)
        from dtcli.engine.runtime.spark_errors import error_message

        return UnitResult(case, ERROR, error_message(exc)[:500])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    status = PASS if found.equal else FAIL
    message = None if found.equal else (f"{len(found.missing)} expected row(s) missing, "
                                        f"{len(found.unexpected)} row(s) not expected")
    return UnitResult(case, status, message, found.columns, found.expected, found.actual, found.missing,
                      found.unexpected, record.refresh_action)


def _given_rows(checked: Checked, case: UnitTest, given: list[Given], partial: bool = False
                ) -> dict[str, list[GivenRow]]:
    """Input -> its rows; every input the DT reads unless `partial` (given_after: only those
    that change); a seed not given is its CSV."""
    root = checked.project.root
    out = {g.input: g.rows.read(root) for g in given}
    if not partial:
        for name in checked.project.tables[case.table].inputs:
            if name not in out:
                out[name] = seed_rows(checked.project, name).read(root)
    return out


def _columns(checked: Checked, name: str, rows: list[GivenRow]) -> list[tuple[str, str | None]]:
    """The input's columns and Spark SQL types as dt knows them; when it knows none (left to
    Spark), the columns the rows name, as text."""
    known = checked.schemas.get(name) or ()
    if known:
        return [(c.name, c.type) for c in known]
    return [(c, None) for c in dict.fromkeys(k for row in rows for k in row)]


def _scratch_project(project: Project, table: TableDef, folder: Path, *, incremental: bool) -> Project:
    """The DT alone in a project of its own under `folder`, its inputs as sources there."""
    sources = {}
    for name in table.inputs:
        declared = project.sources.get(name)
        sources[name] = SourceDef(name, str(folder / "inputs" / name),
                                  primary_key=declared.primary_key if declared else (),
                                  rely=declared.rely if declared else False)
    config = table.config.without_keys(*_DROPPED).with_keys(
        expectations=tuple(e for e in table.config.expectations if e.on_violation == "drop"))
    if incremental:
        config = config.with_keys(refresh_mode="incremental")
    copy = dataclasses.replace(table, config=config)
    return dataclasses.replace(project, root=folder, warehouse=str(folder / "warehouse"), sources=sources,
                               tables={table.name: copy}, disabled={}, singular_tests=[], catalog=None,
                               openlineage=None, threads=1, target=None)


def _refresh(spark, project: Project, name: str):
    """One refresh of the scratch DT as `dt refresh` plans it, run in `spark`."""
    from dtcli.engine.runtime.executor import execute_plan

    checked = check_project(project, take_snapshot(project, now=datetime.now(timezone.utc), use_cache=False),
                            use_cache=False)
    plan = plan_run(checked, [name], trigger=MANUAL)

    def launcher(project, plan, on_event, lock=None):
        return LaunchResult(returncode=0, records=execute_plan(spark, plan, on_event), done=True, started=True)

    result = execute(checked, plan, launcher=launcher)
    return next(r for r in result.records if r.name == name)
