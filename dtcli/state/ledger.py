"""The refresh ledger: the one place that writes a refresh's row into the history table
(`<warehouse>/_dt/refresh_history`), and the one place that builds such a row and says its
state_code.

Four writers need rows, in two processes: the Spark driver (a refresh that ran, one append per
refresh as it finishes), `dt` itself without a JVM (NO_DATA steps; the steps of an application
that did not start or died), `dt build` (DTs held back by a failing source test) and reconcile
(a committed refresh whose row was lost with its process, the steps of a dt that is gone). Each
builder below is one of those stories; every row carries the step's fields the same way, so
history, `dt show`, run_results and auto-suspension read them alike. Reading: state/history.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from dtcli.model import FAILED, SKIPPED, SUCCEEDED, UPSTREAM_FAILED, Frontier, Plan, RefreshRecord, RefreshStep
from dtcli.model.refresh_terms import APPLICATION_NOT_STARTED, DT_PROCESS_GONE
from dtcli.redact import scrub
from dtcli.state import storage
from dtcli.state.history import JSON_FIELDS, compact_now_and_then, history_path, record_schema

# state_code of a row whose state says it all (a FAILED refresh carries its error's condition)
STATE_CODES = {SUCCEEDED: "SUCCESS", UPSTREAM_FAILED: "UPSTREAM_FAILED", SKIPPED: "RUN_STOPPED",
               FAILED: "REFRESH_FAILED"}
METASTORE_UNREACHABLE = "METASTORE_UNREACHABLE"       # a DT by name, its metastore down
APPLICATION_EXITED = "SPARK_APPLICATION_EXITED"       # spark-submit ended before the refresh did


class Outcome(Protocol):
    """What a refresh that ran reports (the engine's RefreshResult)."""

    inserted: int
    deleted: int
    copied: int
    updated: int
    table_version: int | None
    strategy: str | None
    fallback_action: str | None
    message: str | None
    reinit_reason: str | None


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class _NotRun:
    """The outcome of a step that did not run: nothing written, the planned action."""

    inserted: int = 0
    deleted: int = 0
    copied: int = 0
    updated: int = 0
    table_version: int | None = None
    strategy: str | None = None
    fallback_action: str | None = None
    message: str | None = None
    reinit_reason: str | None = None


def refreshed(plan: Plan, step: RefreshStep, state: str, start: str, outcome: Outcome | None = None, *,
              message: str | None = None, versions: dict[str, int] | None = None, code: str | None = None,
              query_id: str | None = None) -> RefreshRecord:
    """The row of a step the driver ran (or stopped, skipped, failed before it ran)."""
    done = outcome or _NotRun()
    previous = step.previous.source_versions if step.previous else {}
    versions = versions or {}
    return RefreshRecord(
        name=step.name, state=state, refresh_action=done.fallback_action or step.action,
        refresh_trigger=step.trigger, data_timestamp=plan.data_timestamp if state == SUCCEEDED else None,
        refresh_start_time=start, refresh_end_time=now(), run_id=plan.run_id,
        state_message=message or done.message, reinit_reason=done.reinit_reason or step.reinit_reason,
        num_inserted_rows=done.inserted, num_deleted_rows=done.deleted, num_copied_rows=done.copied,
        num_updated_rows=done.updated,
        inputs_with_changed_data=[n for n, v in versions.items() if previous.get(n) != v],
        source_versions=versions, table_version=done.table_version, definition_hash=step.definition_hash,
        # a strategy that fell back (INCREMENTAL -> FULL) says why; else the planner's reason
        refresh_action_reason=done.message or step.options.estimate.action_reason,
        change_rows=step.options.estimate.change_rows, input_rows=step.options.estimate.input_rows,
        state_code=code or STATE_CODES.get(state), query_id=query_id,
        target_lag_sec=step.options.lag.target_lag_sec, completion_target=step.options.lag.completion_target,
        refresh_strategy=done.strategy)


def planned(step: RefreshStep, run_id: str, state: str, at: str, *, message: str | None = None,
            code: str | None = None, data_timestamp: str | None = None, **fields: Any) -> RefreshRecord:
    """The row of a planned step that no refresh of the engine wrote (NO_DATA, an application that
    did not start or died, a dt process that is gone)."""
    return RefreshRecord(name=step.name, state=state, refresh_action=fields.pop("refresh_action", step.action),
                         refresh_trigger=step.trigger, data_timestamp=data_timestamp, refresh_start_time=at,
                         refresh_end_time=at, run_id=run_id, state_message=message,
                         definition_hash=step.definition_hash, state_code=code,
                         target_lag_sec=step.options.lag.target_lag_sec,
                         completion_target=step.options.lag.completion_target, **fields)


def not_started(step: RefreshStep, run_id: str, why: str, at: str) -> RefreshRecord:
    """A step of an application that could not start: no refresh ran, so the row neither counts
    toward auto-suspension nor breaks a streak (APPLICATION_NOT_STARTED)."""
    return planned(step, run_id, FAILED, at, code=APPLICATION_NOT_STARTED, message=f"the run failed to start: {why}")


def exited(step: RefreshStep, run_id: str, why: str, at: str) -> RefreshRecord:
    """A step the Spark application did not finish: it died (killed, out of memory)."""
    return planned(step, run_id, FAILED, at, code=APPLICATION_EXITED, message=why)


def gone(step: RefreshStep, run_id: str, why: str, at: str) -> RefreshRecord:
    """A step of a run whose dt process is gone, found by reconcile."""
    return planned(step, run_id, FAILED, at, code=DT_PROCESS_GONE, message=why)


def no_data(plan: Plan, step: RefreshStep, at: str) -> RefreshRecord:
    return planned(step, plan.run_id, SUCCEEDED, at, code=STATE_CODES[SUCCEEDED], data_timestamp=plan.data_timestamp,
                   source_versions=step.previous.source_versions if step.previous else {},
                   refresh_action_reason="no input changed since the last refresh")


def held_back(name: str, run_id: str, message: str, at: str) -> RefreshRecord:
    """`dt build`: a DT not refreshed because a data test of a source it reads failed."""
    return RefreshRecord(name=name, state=UPSTREAM_FAILED, refresh_action="NO_DATA", refresh_trigger="MANUAL",
                         data_timestamp=None, refresh_start_time=at, refresh_end_time=at, run_id=run_id,
                         state_message=message, state_code=UPSTREAM_FAILED)


def recovered(name: str, frontier: Frontier, start: str, end: str, version: int, counts: tuple[int, int, int],
              changed: list[str], trigger: str) -> RefreshRecord:
    """The row a refresh would have written, from the commits it left (reconcile):
    `counts` = (inserted, deleted, copied) rows, from the commits' metrics."""
    inserted, deleted, copied = counts
    return RefreshRecord(
        name=name, state=SUCCEEDED, refresh_action=frontier.refresh_action or "UNKNOWN", refresh_trigger=trigger,
        data_timestamp=frontier.data_timestamp, refresh_start_time=start, refresh_end_time=end,
        run_id=frontier.run_id or "",
        state_message=(f"committed at version {version} by run {frontier.run_id}, which was interrupted "
                       "before it recorded this refresh (recorded later from the table's commit)"),
        num_inserted_rows=inserted, num_deleted_rows=deleted, num_copied_rows=copied,
        inputs_with_changed_data=changed, source_versions=frontier.source_versions, table_version=version,
        definition_hash=frontier.definition_hash, state_code=STATE_CODES[SUCCEEDED],
        refresh_action_reason="recorded from the table's commit: its run was interrupted")


def append(warehouse: str, records: list[RefreshRecord]) -> None:
    """Append rows to the history table (one commit), secrets scrubbed from every text."""
    if not records:
        return
    import pyarrow as pa
    from deltalake import write_deltalake

    rows = []
    for record in records:
        row = {k: (scrub(v) if isinstance(v, str) else v) for k, v in record.to_dict().items()}
        for key in JSON_FIELDS:
            row[key] = scrub(json.dumps(row[key], sort_keys=True, default=str))
        rows.append(row)
    table = pa.Table.from_pylist(rows, schema=record_schema())
    path = history_path(warehouse)
    if not storage.is_remote(path):
        import os

        os.makedirs(path, exist_ok=True)
    # merge: a history written before a field existed gains the column (older rows: null)
    write_deltalake(storage.uri(path), table, mode="append", schema_mode="merge",
                    storage_options=storage.options(path))
    compact_now_and_then(path)
