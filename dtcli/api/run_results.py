"""`target/run_results.json`: what one `dt run` / `dt refresh` did, for CI and other tools.

One entry per DT the run planned (NO_DATA ones included), in the order they finished, shaped
after dbt's run_results.json (metadata, results with timing and a message, elapsed time, args)
with dt's own names for what a refresh is: `state`, `refresh_action`, `refresh_trigger`,
`statistics`, `state_message`, as `dt show refresh-history --format json` names them. A refresh
of a DT with data tests or expectations carries one result per check in `data_tests`, as dbt
spells a test's result (`unique_id`, `status` pass | fail | warn | error, `failures`,
`message`) with the failing rows it sampled; `summary.data_tests` counts them by status.
The file is replaced atomically: a reader sees the previous run's document or this one.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dtcli.api.lineage_ids import refresh_uuid
from dtcli.model import SKIPPED, SUCCEEDED, Project, RefreshRecord
from dtcli.redact import scrub

FILE_NAME = "run_results.json"
SCHEMA_VERSION = 1


def _seconds(start: str | None, end: str | None) -> float | None:
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)
    except (TypeError, ValueError):
        return None


def result_entry(record: RefreshRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "state": record.state,
        "refresh_action": record.refresh_action,
        "refresh_trigger": record.refresh_trigger,
        "timing": [{"name": "refresh", "started_at": record.refresh_start_time,
                    "completed_at": record.refresh_end_time}],
        "execution_time": _seconds(record.refresh_start_time, record.refresh_end_time),
        "statistics": record.statistics,
        "state_message": record.state_message,
        "state_code": record.state_code,
        "reinit_reason": record.reinit_reason,
        "data_timestamp": record.data_timestamp,
        "query_id": record.query_id,
        "openlineage_run_id": refresh_uuid(record.run_id, record.name),
        "table_version": record.table_version,
        "inputs_with_changed_data": list(record.inputs_with_changed_data),
        "source_versions": dict(record.source_versions),
        "target_lag_sec": record.target_lag_sec,
        "completion_target": record.completion_target,
        "data_tests": [test_entry(t) for t in record.data_tests or ()],
    }


def test_entry(result: dict[str, Any]) -> dict[str, Any]:
    """One check's result (a dtcli.data_tests.CheckResult as a dict), dbt's keys first."""
    keys = ("unique_id", "name", "status", "failures", "message", "kind", "test", "table", "column",
            "action", "samples")
    return {k: result.get(k) for k in keys}


def test_summary(records) -> dict[str, int]:
    """The checks the refreshes ran, counted by status."""
    out: dict[str, int] = {}
    for record in records:
        for result in record.data_tests or ():
            out[result.get("status")] = out.get(result.get("status"), 0) + 1
    return dict(sorted(out.items()))


def document(project: Project, result, *, command: str, args: dict[str, Any],
             started_at: datetime, finished_at: datetime | None = None) -> dict[str, Any]:
    """The run's results as one JSON-serialisable document (`result`: an api RunResult)."""
    finished_at = finished_at or datetime.now(timezone.utc)
    plan, decision = result.plan, result.decision
    records = list(result.records)
    return {
        "metadata": _metadata(project, command, plan.run_id, finished_at),
        "run_id": plan.run_id,
        "data_timestamp": plan.data_timestamp,
        "success": result.success,
        "interrupted": result.interrupted,
        "elapsed_time": round((finished_at - started_at).total_seconds(), 3),
        "args": args,
        "results": [result_entry(r) for r in records],
        "summary": {"succeeded": sum(r.state == SUCCEEDED for r in records),
                    "failed": sum(r.failed for r in records),
                    "skipped": sum(r.state == SKIPPED for r in records),
                    "not_refreshed": len(decision.skipped) if decision else 0,
                    "data_tests": test_summary(records)},
        "not_refreshed": [{"name": n, "reason": why} for n, why in (decision.skipped.items() if decision else ())],
        "suspended": list(result.suspended),
        "spark_log": result.log_path,
    }


def _metadata(project: Project, command: str, run_id: str, finished_at: datetime) -> dict[str, Any]:
    from dtcli import __version__

    return {"dt_version": __version__, "schema_version": SCHEMA_VERSION, "generated_at": finished_at.isoformat(),
            "invocation_id": run_id, "command": command, "project": project.name,
            "project_version": project.version, "target": project.target}


def tested_entries(records) -> list[dict[str, Any]]:
    """`dt test`'s results, one per test as dbt's run_results has them (with the table's
    timing); a table whose tests did not run at all is one `error` result."""
    out = []
    for record in records:
        timing = [{"name": "execute", "started_at": record.refresh_start_time,
                   "completed_at": record.refresh_end_time}]
        if not record.data_tests:
            out.append({"unique_id": None, "name": record.name, "status": "error", "failures": None,
                        "message": record.state_message, "table": record.name, "timing": timing})
        for test in record.data_tests or ():
            out.append({**test_entry(test), "timing": timing})
    return out


def test_document(project: Project, result, *, command: str, args: dict[str, Any],
                  started_at: datetime, finished_at: datetime | None = None) -> dict[str, Any]:
    """`dt test`'s results as one document (`result`: an api TestResult)."""
    finished_at = finished_at or datetime.now(timezone.utc)
    results = tested_entries(result.records)
    counts: dict[str, int] = {}
    for entry in results:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    return {"metadata": _metadata(project, command, result.plan.run_id, finished_at),
            "run_id": result.plan.run_id, "success": not result.failed and not result.interrupted,
            "interrupted": result.interrupted, "elapsed_time": round((finished_at - started_at).total_seconds(), 3),
            "args": args, "results": results, "summary": {"data_tests": dict(sorted(counts.items()))},
            "not_created": list(result.not_created), "spark_log": result.log_path}


def unit_document(project: Project, results, *, args: dict[str, Any], started_at: datetime,
                  finished_at: datetime | None = None) -> dict[str, Any]:
    """`dt test --unit`'s results (api/unit_tests.py UnitResult), one per unit test, as dbt
    reports unit tests (`unique_id` unit_test.<project>.<table>.<name>)."""
    finished_at = finished_at or datetime.now(timezone.utc)
    entries = [r.to_dict(project.name) for r in results]
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    run_id = finished_at.strftime("unit-%Y%m%dT%H%M%S")
    return {"metadata": _metadata(project, "test --unit", run_id, finished_at), "run_id": run_id,
            "success": all(e["status"] == "pass" for e in entries), "interrupted": False,
            "elapsed_time": round((finished_at - started_at).total_seconds(), 3), "args": args,
            "results": entries, "summary": {"unit_tests": dict(sorted(counts.items()))}}


def write(project: Project, doc: dict[str, Any]) -> Path:
    """Replace target/run_results.json with `doc` (write aside, then rename)."""
    path = project.target_dir / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{FILE_NAME}.{os.getpid()}")
    aside.write_text(scrub(json.dumps(doc, indent=2, default=str)) + "\n", encoding="utf-8")
    os.replace(aside, path)
    return path
