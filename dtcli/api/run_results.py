"""`target/run_results.json`: what one `dt run` / `dt refresh` did, for CI and other tools.

One entry per DT the run planned (NO_DATA ones included), in the order they finished, shaped
after dbt's run_results.json (metadata, results with timing and a message, elapsed time, args)
with dt's own names for what a refresh is: `state`, `refresh_action`, `refresh_trigger`,
`statistics`, `state_message`, as `dt show refresh-history --format json` names them. A refresh
of a DT with data tests or expectations carries one result per check in `data_tests`, as dbt
spells a test's result (`unique_id`, `status` pass | fail | warn | error, `failures`,
`message`) with the failing rows it sampled; `summary.data_tests` counts them by status.
The file is replaced atomically: a reader sees the previous run's document or this one. Its
types, schema_version and published JSON Schema: dtcli/artifacts/run_results.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

from dtcli.api.lineage_ids import refresh_uuid
from dtcli.artifacts.run_results import (
    SCHEMA_VERSION,
    CheckResult,
    DataTestResult,
    DataTestResults,
    DataTestSummary,
    Document,
    Metadata,
    NotRefreshed,
    RefreshResult,
    RunResults,
    RunSummary,
    Statistics,
    Suspension,
    Timing,
    UnitSummary,
    UnitTestResult,
    UnitTestResults,
)
from dtcli.artifacts.typed_json import JSON, dumps
from dtcli.model import SKIPPED, SUCCEEDED, Project, RefreshRecord
from dtcli.redact import scrub

FILE_NAME = "run_results.json"


def _seconds(start: str | None, end: str | None) -> float | None:
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)
    except (TypeError, ValueError):
        return None


def result_entry(record: RefreshRecord) -> RefreshResult:
    return RefreshResult(
        name=record.name, state=record.state, refresh_action=record.refresh_action,
        refresh_trigger=record.refresh_trigger,
        timing=[Timing("refresh", record.refresh_start_time, record.refresh_end_time)],
        execution_time=_seconds(record.refresh_start_time, record.refresh_end_time),
        statistics=Statistics(**record.statistics),
        state_message=record.state_message, state_code=record.state_code, reinit_reason=record.reinit_reason,
        data_timestamp=record.data_timestamp, query_id=record.query_id,
        openlineage_run_id=refresh_uuid(record.run_id, record.name), table_version=record.table_version,
        inputs_with_changed_data=list(record.inputs_with_changed_data),
        source_versions=dict(record.source_versions), target_lag_sec=record.target_lag_sec,
        completion_target=record.completion_target,
        data_tests=[test_entry(t) for t in record.data_tests or ()])


_CHECK_KEYS = ("unique_id", "name", "status", "failures", "message", "kind", "test", "table", "column",
               "action", "samples")


def test_entry(result: dict[str, JSON]) -> CheckResult:
    """One check's result (a dtcli.data_tests.CheckResult as the history stores it), dbt's keys
    first; a key an older record lacks is null."""
    return CheckResult(**{k: result.get(k) for k in _CHECK_KEYS})


def test_summary(records: Iterable[RefreshRecord]) -> dict[str, int]:
    """The checks the refreshes ran, counted by status."""
    out: dict[str, int] = {}
    for record in records:
        for result in record.data_tests or ():
            out[result.get("status")] = out.get(result.get("status"), 0) + 1
    return dict(sorted(out.items()))


def document(project: Project, result, *, command: str, args: dict[str, JSON],
             started_at: datetime, finished_at: datetime | None = None) -> RunResults:
    """The run's results (`result`: an api RunResult)."""
    finished_at = finished_at or datetime.now(timezone.utc)
    plan, decision = result.plan, result.decision
    records = list(result.records)
    skipped = decision.skipped if decision else {}
    return RunResults(
        metadata=_metadata(project, command, plan.run_id, finished_at),
        run_id=plan.run_id, data_timestamp=plan.data_timestamp,
        success=result.success, interrupted=result.interrupted,
        elapsed_time=_elapsed(started_at, finished_at), args=args,
        results=[result_entry(r) for r in records],
        summary=RunSummary(succeeded=sum(r.state == SUCCEEDED for r in records),
                           failed=sum(r.failed for r in records),
                           skipped=sum(r.state == SKIPPED for r in records),
                           not_refreshed=len(skipped), data_tests=test_summary(records)),
        not_refreshed=[NotRefreshed(n, why) for n, why in skipped.items()],
        suspended=[Suspension(s["name"], s.get("reason"), list(s.get("downstream") or ()))
                   for s in result.suspended],
        spark_log=result.log_path)


def _elapsed(started_at: datetime, finished_at: datetime) -> float:
    return round((finished_at - started_at).total_seconds(), 3)


def _metadata(project: Project, command: str, run_id: str, finished_at: datetime) -> Metadata:
    from dtcli import __version__

    return Metadata(dt_version=__version__, schema_version=SCHEMA_VERSION, generated_at=finished_at.isoformat(),
                    invocation_id=run_id, command=command, project=project.name,
                    project_version=project.version, target=project.target)


def tested_entries(records: Iterable[RefreshRecord]) -> list[DataTestResult]:
    """`dt test`'s results, one per test as dbt's run_results has them (with the table's
    timing); a table whose tests did not run at all is one `error` result."""
    out = []
    for record in records:
        timing = [Timing("execute", record.refresh_start_time, record.refresh_end_time)]
        if not record.data_tests:
            out.append(DataTestResult(unique_id=None, name=record.name, status="error", failures=None,
                                      message=record.state_message, kind=None, test=None, table=record.name,
                                      column=None, action=None, samples=None, timing=timing))
        for test in record.data_tests or ():
            out.append(DataTestResult(**{k: test.get(k) for k in _CHECK_KEYS}, timing=timing))
    return out


def _counted(statuses: Iterable[str | None]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return dict(sorted(counts.items()))


def test_document(project: Project, result, *, command: str, args: dict[str, JSON],
                  started_at: datetime, finished_at: datetime | None = None) -> DataTestResults:
    """`dt test`'s results (`result`: an api TestResult)."""
    finished_at = finished_at or datetime.now(timezone.utc)
    results = tested_entries(result.records)
    return DataTestResults(
        metadata=_metadata(project, command, result.plan.run_id, finished_at), run_id=result.plan.run_id,
        success=not result.failed and not result.interrupted, interrupted=result.interrupted,
        elapsed_time=_elapsed(started_at, finished_at), args=args, results=results,
        summary=DataTestSummary(_counted(r.status for r in results)),
        not_created=list(result.not_created), spark_log=result.log_path)


def unit_entry(result, project: str) -> UnitTestResult:
    """One unit test case's result (an api/unit_tests.py UnitResult), its rows by column name."""
    def rows(found):
        return [dict(zip(result.columns, r)) for r in found]

    case = result.test
    return UnitTestResult(
        unique_id=case.unique_id(project), name=case.name, table=case.table, status=result.status,
        failures=len(result.missing) + len(result.unexpected), message=result.message,
        given_after=case.given_after is not None, refresh_action=result.refresh_action,
        columns=list(result.columns), expected=rows(result.expected), actual=rows(result.actual),
        missing=rows(result.missing), unexpected=rows(result.unexpected))


def unit_document(project: Project, results, *, args: dict[str, JSON], started_at: datetime,
                  finished_at: datetime | None = None) -> UnitTestResults:
    """`dt test --unit`'s results (api/unit_tests.py UnitResult), one per unit test, as dbt
    reports unit tests (`unique_id` unit_test.<project>.<table>.<name>)."""
    finished_at = finished_at or datetime.now(timezone.utc)
    entries = [unit_entry(r, project.name) for r in results]
    run_id = finished_at.strftime("unit-%Y%m%dT%H%M%S")
    return UnitTestResults(
        metadata=_metadata(project, "test --unit", run_id, finished_at), run_id=run_id,
        success=all(e.status == "pass" for e in entries), interrupted=False,
        elapsed_time=_elapsed(started_at, finished_at), args=args, results=entries,
        summary=UnitSummary(_counted(e.status for e in entries)))


def write(project: Project, doc: Document) -> Path:
    """Replace target/run_results.json with `doc` (write aside, then rename)."""
    path = project.target_dir / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{FILE_NAME}.{os.getpid()}")
    aside.write_text(scrub(dumps(doc, indent=2)) + "\n", encoding="utf-8")
    os.replace(aside, path)
    return path
