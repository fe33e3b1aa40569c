"""The library facade the CLI (and notebooks) call. Planning and reading never start a JVM;
only `execute` launches one spark-submit application, and only when there is Spark work."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from dtcli.errors import UsageError, suggest
from dtcli.graph import Graph
from dtcli.lag import parse_target_lag, resolve_lags
from dtcli.model import (FAILED, MANUAL, NO_DATA, SCHEDULED, SUCCEEDED, UPSTREAM_FAILED, Plan,
                         Project, RefreshRecord)
from dtcli.plan import build_plan
from dtcli.project import load_project
from dtcli.refresh_mode import analyses, resolve_modes
from dtcli.snapshot import Snapshot, take_snapshot
from dtcli.state import history
from dtcli.state.delta_log import table_info

Events = Callable[[dict[str, Any]], None]


def load(project_dir: str | Path = ".", target: str | None = None, *, check_sources: bool = False) -> Project:
    return load_project(project_dir, target, check_sources=check_sources)


@dataclass
class Validation:
    project: Project
    graph: Graph
    effective_lags: dict[str, int | None]
    warnings: dict[str, list[str]]
    modes: dict[str, Any]


def validate(project: Project, snapshot: Snapshot | None = None) -> Validation:
    """Everything that can be checked without Spark: names, cycles, lags, refresh modes."""
    graph = Graph.of(project)
    lags = {n: parse_target_lag(t.target_lag, file=t.file) for n, t in project.tables.items()}
    resolution = resolve_lags(lags, graph.upstream, {n: t.file for n, t in project.tables.items()})
    snapshot = snapshot or take_snapshot(project)
    cdf = {n: i.change_data_feed for n, i in snapshot.sources.items()}
    modes = resolve_modes(project, graph, cdf, analyses(project))
    return Validation(project, graph, resolution.effective_seconds, dict(resolution.warnings), modes)


def select(project: Project, graph: Graph, names: list[str] | None) -> set[str]:
    if not names:
        return set(project.tables)
    chosen: set[str] = set()
    for name in names:
        key = name.lower()
        if key not in project.tables:
            raise UsageError(f"no dynamic table named '{name}'",
                             hint=suggest(key, project.tables) or "see `dt show dynamic tables`")
        chosen.add(key)
    return chosen


def plan_run(project: Project, names: list[str] | None = None, *, trigger: str = SCHEDULED,
             full_refresh: bool = False, now: datetime | None = None) -> tuple[Plan, Validation]:
    snapshot = take_snapshot(project, with_stats=True, now=now)
    checked = validate(project, snapshot)
    selected = select(project, checked.graph, names)
    plan = build_plan(project, checked.graph, snapshot, selected, trigger, checked.modes,
                      full_refresh=full_refresh)
    return plan, checked


@dataclass
class RunResult:
    plan: Plan
    records: list[dict[str, Any]] = field(default_factory=list)
    launched: bool = False
    log_path: str | None = None

    @property
    def ok(self) -> bool:
        return all(r["state"] == SUCCEEDED for r in self.records)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def no_data_records(plan: Plan) -> list[RefreshRecord]:
    stamp = _now()
    return [RefreshRecord(name=s.name, state=SUCCEEDED, refresh_action=NO_DATA, refresh_trigger=s.trigger,
                          data_timestamp=plan.data_timestamp, refresh_start_time=stamp,
                          refresh_end_time=stamp, run_id=plan.run_id,
                          source_versions=(s.previous or {}).get("source_versions", {}),
                          definition_hash=s.definition_hash)
            for s in plan.steps if s.action == NO_DATA]


def execute(project: Project, plan: Plan, on_event: Events = lambda e: None) -> RunResult:
    """Record NO_DATA steps without a JVM; run the rest in one spark-submit application."""
    result = RunResult(plan)
    quiet = no_data_records(plan)
    history.append(project.warehouse, quiet)
    for record in quiet:
        result.records.append(record.to_dict())
        on_event({"event": "finished", "record": record.to_dict()})
    if not plan.spark_steps:
        return result
    from dtcli.engine.launcher import launch

    launched = launch(project, plan, on_event)
    result.launched, result.log_path = True, str(launched.log_path)
    result.records.extend(launched.records)
    finished = {r["name"] for r in launched.records}
    lost = [s for s in plan.spark_steps if s.name not in finished]
    if lost:
        # The application died (killed, out of memory): those refreshes did not commit.
        why = f"spark-submit exited with code {launched.returncode} before this refresh finished; see {launched.log_path}"
        stamp = _now()
        records = [RefreshRecord(name=s.name, state=FAILED, refresh_action=s.action, refresh_trigger=s.trigger,
                                 data_timestamp=None, refresh_start_time=stamp, refresh_end_time=stamp,
                                 run_id=plan.run_id, state_message=why, definition_hash=s.definition_hash)
                   for s in lost]
        history.append(project.warehouse, records)
        for record in records:
            result.records.append(record.to_dict())
            on_event({"event": "finished", "record": record.to_dict()})
    return result


def run(project: Project, names: list[str] | None = None, *, full_refresh: bool = False,
        trigger: str = SCHEDULED, on_event: Events = lambda e: None) -> RunResult:
    plan, _ = plan_run(project, names, trigger=trigger, full_refresh=full_refresh)
    return execute(project, plan, on_event)


def refresh(project: Project, name: str, on_event: Events = lambda e: None) -> RunResult:
    return run(project, [name], trigger=MANUAL, on_event=on_event)


# ---- reading state -------------------------------------------------------------------------

def show_tables(project: Project, like: str | None = None) -> list[dict[str, Any]]:
    checked = validate(project)
    last = history.latest_per_table(history.read(project.warehouse))
    succeeded = {}
    for row in history.read(project.warehouse):
        if row["state"] == SUCCEEDED and row["data_timestamp"]:
            succeeded.setdefault(row["name"], row["data_timestamp"])
    rows = []
    for name in checked.graph.order:
        if like and not fnmatch.fnmatch(name, like.replace("%", "*").replace("_", "?").lower()):
            continue
        table = project.tables[name]
        info = table_info(project.table_path(name))
        frontier = (info.frontier if info else None) or {}
        stamps = [s for s in (frontier.get("data_timestamp"), succeeded.get(name)) if s]
        mode = checked.modes[name]
        recent = last.get(name, {})
        rows.append({
            "name": name, "target_lag": str(parse_target_lag(table.target_lag)),
            "effective_lag_seconds": checked.effective_lags.get(name),
            "refresh_mode": mode.mode, "refresh_mode_reason": mode.reason,
            "scheduling_state": "ACTIVE", "data_timestamp": max(stamps) if stamps else None,
            "immutable_where": table.config.get("frozen_where"),
            "rows": info.rows if info else None, "bytes": info.bytes if info else None,
            "text": table.sql.strip(), "created_on": info.created_on if info else None,
            "last_refresh_action": recent.get("refresh_action"),
            "last_refresh_state": recent.get("state"),
            "version": info.version if info else None, "path": project.table_path(name),
            "file": table.file, "warnings": checked.warnings.get(name, []),
        })
    return rows


def show_history(project: Project, name: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    if name and name.lower() not in project.tables:
        raise UsageError(f"no dynamic table named '{name}'", hint=suggest(name.lower(), project.tables))
    return history.read(project.warehouse, name.lower() if name else None, limit)


def failed(records: list[dict[str, Any]]) -> bool:
    return any(r["state"] in (FAILED, UPSTREAM_FAILED) for r in records)
