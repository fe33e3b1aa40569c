"""The library facade the CLI (and notebooks) call. Planning and reading never start a JVM;
only `execute` launches one spark-submit application, and only when there is Spark work."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from dtcli.planning import scheduler, selectors
from dtcli.state import orphans
from dtcli.errors import UsageError, suggest
from dtcli.planning.graph import Graph
from dtcli.planning.lag import parse_target_lag, resolve_lags
from dtcli.model import (FAILED, MANUAL, NO_DATA, SCHEDULED, SUCCEEDED, UPSTREAM_FAILED, Plan,
                         Project, RefreshRecord)
from dtcli.planning.plan import build_plan
from dtcli.project import load_project
from dtcli.planning.refresh_mode import analyses, resolve_modes
from dtcli.planning.schedule import period_seconds
from dtcli.planning.snapshot import Snapshot, take_snapshot
from dtcli.state.lock import warehouse_lock
from dtcli.state import history, scheduling
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
    """DTs named by dbt-style selectors (`name`, `+name`, `name+`, `tag:x`); none: every DT."""
    return selectors.select(project, graph, names)


def plan_run(project: Project, names: list[str] | None = None, *, trigger: str = SCHEDULED,
             full_refresh: bool = False, now: datetime | None = None) -> tuple[Plan, Validation]:
    """A plan for the selected DTs and their upstream, whatever their schedule (`dt refresh`,
    `dt run --all`); `plan_scheduled` is the lag-aware pass of a plain `dt run`."""
    snapshot = take_snapshot(project, with_stats=True, now=now)
    checked = validate(project, snapshot)
    selected = select(project, checked.graph, names)
    plan = build_plan(project, checked.graph, snapshot, selected, trigger, checked.modes,
                      full_refresh=full_refresh)
    return plan, checked


@dataclass
class ScheduledPlan:
    plan: Plan
    checked: Validation
    decision: scheduler.Decision


def plan_scheduled(project: Project, names: list[str] | None = None, *, all_tables: bool = False,
                   full_refresh: bool = False, now: datetime | None = None) -> ScheduledPlan:
    """Reconcile + one scheduling pass: new and redefined DTs, plus the selected DTs whose own
    schedule is due (all selected ones with `all_tables`), with the upstream DTs they need."""
    now = now or datetime.now(timezone.utc)
    snapshot = take_snapshot(project, with_stats=True, now=now)
    checked = validate(project, snapshot)
    candidates = select(project, checked.graph, names)
    states = scheduling.current(project.warehouse)
    stamps = scheduler.data_timestamps(snapshot, history.read(project.warehouse))
    decision = scheduler.decide(project, checked.graph, snapshot, checked.effective_lags, stamps, states,
                                now, candidates, all_tables=all_tables or full_refresh)
    plan = build_plan(project, checked.graph, snapshot, decision.refresh, SCHEDULED, checked.modes,
                      full_refresh=full_refresh)
    return ScheduledPlan(plan, checked, decision)


@dataclass
class RunResult:
    plan: Plan
    records: list[dict[str, Any]] = field(default_factory=list)
    launched: bool = False
    log_path: str | None = None
    decision: scheduler.Decision | None = None
    suspended: list[dict[str, Any]] = field(default_factory=list)   # auto-suspensions of this run

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


def spark_submit(project: Project, plan: Plan, on_event: Events):
    """The default launcher: one spark-submit application for the whole plan."""
    from dtcli.engine.launcher import launch

    return launch(project, plan, on_event)


def execute(project: Project, plan: Plan, on_event: Events = lambda e: None,
            launcher: Callable[..., Any] = spark_submit) -> RunResult:
    """Record NO_DATA steps without a JVM; run the rest in one spark-submit application
    (`launcher` is injectable: tests and notebooks run the plan in-process)."""
    result = RunResult(plan)
    quiet = no_data_records(plan)
    history.append(project.warehouse, quiet)
    for record in quiet:
        result.records.append(record.to_dict())
        on_event({"event": "finished", "record": record.to_dict()})
    if not plan.spark_steps:
        return result
    launched = launcher(project, plan, on_event)
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
    if failed(result.records):
        result.suspended = _auto_suspend(project, on_event)
    return result


def _auto_suspend(project: Project, on_event: Events) -> list[dict[str, Any]]:
    """Suspend DTs whose scheduled refreshes failed five times in a row (their downstream DTs
    are then held back too, see scheduler.blocked)."""
    events = scheduling.read_events(project.warehouse)
    streaks = scheduler.failure_streaks(history.read(project.warehouse), scheduling.resumed_at(events))
    new = scheduler.auto_suspensions(streaks, scheduling.current(project.warehouse, events), _now())
    scheduling.append(project.warehouse, new)
    graph = Graph.of(project)
    out = []
    for event in new:
        down = graph.ordered(graph.downstream_closure({event.name}) - {event.name}) if event.name in graph.upstream else []
        out.append({"name": event.name, "reason": event.reason, "downstream": down})
        on_event({"event": "suspended", **out[-1]})
    return out


def run(project: Project, names: list[str] | None = None, *, full_refresh: bool = False,
        trigger: str = SCHEDULED, on_event: Events = lambda e: None, all_tables: bool = False,
        now: datetime | None = None, wait: float = 0.0, launcher: Callable[..., Any] = spark_submit,
        on_plan: Callable[[Plan], None] = lambda plan: None) -> RunResult:
    """One `dt run` pass under the warehouse lock (planning included, so a queued run plans
    from what the previous one committed). `all_tables=False` is the lag-aware pass."""
    validate(project)   # a project that does not validate writes nothing, not even the lock file
    with warehouse_lock(project, "run" if trigger != MANUAL else "refresh", wait):
        if trigger == MANUAL:
            plan, decision = plan_run(project, names, trigger=trigger, full_refresh=full_refresh, now=now)[0], None
        else:
            scheduled = plan_scheduled(project, names, all_tables=all_tables, full_refresh=full_refresh, now=now)
            plan, decision = scheduled.plan, scheduled.decision
            register(project, decision, plan.data_timestamp)
        on_plan(plan)
        result = execute(project, plan, on_event, launcher)
    result.decision = decision
    return result


def register(project: Project, decision: scheduler.Decision, at: str) -> None:
    """Remember when `on_schedule` DTs were first seen (on the run's clock): they are created at
    the first tick after that."""
    scheduling.append(project.warehouse, [scheduling.Event(n, scheduling.REGISTERED, at=at)
                                          for n in decision.register])


def refresh(project: Project, name: str, on_event: Events = lambda e: None, *, wait: float = 0.0,
            now: datetime | None = None, launcher: Callable[..., Any] = spark_submit,
            on_plan: Callable[[Plan], None] = lambda plan: None) -> RunResult:
    """MANUAL refresh of one DT now, with the upstream DTs it needs, suspended or not."""
    return run(project, [project.table_key(name)], trigger=MANUAL, on_event=on_event, wait=wait, now=now,
               launcher=launcher, on_plan=on_plan)


# ---- scheduling state and lifecycle --------------------------------------------------------

def suspend(project: Project, name: str, *, reason: str | None = None, wait: float = 0.0) -> list[str]:
    """Stop scheduling NAME (and so every DT downstream of it); returns the DTs held back."""
    key, graph = project.table_key(name), Graph.of(project)
    with warehouse_lock(project, f"suspend {key}", wait):
        if scheduling.current(project.warehouse).get(key, scheduling.TableState()).state != scheduling.SUSPENDED:
            scheduling.append(project.warehouse, [scheduling.Event(
                key, scheduling.SUSPENDED, reason or "suspended by `dt suspend`", key, _now())])
    return graph.ordered(graph.downstream_closure({key}))


def resume(project: Project, name: str, *, wait: float = 0.0) -> list[str]:
    """Schedule NAME again (with the DTs it held back); an upstream suspension must go first."""
    key, graph = project.table_key(name), Graph.of(project)
    with warehouse_lock(project, f"resume {key}", wait):
        states = scheduling.current(project.warehouse)
        held = [u for u in graph.ordered(graph.upstream_closure({key}) - {key})
                if states.get(u, scheduling.TableState()).state == scheduling.SUSPENDED]
        if held:
            raise UsageError(f"{key} is held back because its upstream {held[0]} is suspended",
                             hint=f"resume it with `dt resume {held[0]}`")
        if states.get(key, scheduling.TableState()).state == scheduling.SUSPENDED:
            scheduling.append(project.warehouse, [scheduling.Event(key, scheduling.RESUMED, at=_now())])
    stop = scheduler.blocked(graph, scheduling.current(project.warehouse))
    return [n for n in graph.ordered(graph.downstream_closure({key})) if n not in stop]


def drop(project: Project, name: str, *, wait: float = 0.0) -> str:
    """Delete an orphaned DT's data and metadata; returns the path removed."""
    with warehouse_lock(project, f"drop {name}", wait):
        return orphans.drop(project, name)


# ---- reading state -------------------------------------------------------------------------

def _like(name: str, like: str | None) -> bool:
    return not like or fnmatch.fnmatch(name, like.replace("%", "*").replace("_", "?").lower())


def show_tables(project: Project, like: str | None = None, now: datetime | None = None) -> list[dict[str, Any]]:
    """One row per DT of the project, then one per orphan (a DT in the warehouse whose file is gone)."""
    now = now or datetime.now(timezone.utc)
    snapshot = take_snapshot(project, with_stats=True, now=now)
    checked = validate(project, snapshot)
    rows_history = history.read(project.warehouse)
    last = history.latest_per_table(rows_history)
    states = scheduling.current(project.warehouse)
    stamps = scheduler.data_timestamps(snapshot, rows_history)
    stop = scheduler.blocked(checked.graph, states)
    rows = []
    for name in checked.graph.order:
        if not _like(name, like):
            continue
        table, info = project.tables[name], snapshot.tables.get(name)
        mode, recent, effective = checked.modes[name], last.get(name, {}), checked.effective_lags.get(name)
        due = scheduler.next_due_at(project, name, info is not None, checked.effective_lags, stamps, states,
                                    stop, now)
        stamp = stamps.get(name)
        rows.append({
            "name": name, "target_lag": str(parse_target_lag(table.target_lag)),
            "effective_lag_seconds": effective,
            "period_seconds": period_seconds(effective) if effective else None,
            "refresh_mode": mode.mode, "refresh_mode_reason": mode.reason,
            "scheduling_state": scheduling.SUSPENDED if name in stop else scheduling.ACTIVE,
            "scheduling_state_reason": stop.get(name),
            "next_due": due.isoformat() if due else None,
            "data_timestamp": stamp.isoformat() if stamp else None,
            "immutable_where": table.config.get("frozen_where"),
            "rows": info.rows if info else None, "bytes": info.bytes if info else None,
            "text": table.sql.strip(), "created_on": info.created_on if info else None,
            "last_refresh_action": recent.get("refresh_action"),
            "last_refresh_state": recent.get("state"),
            "version": info.version if info else None, "path": project.table_path(name),
            "file": table.file, "orphaned": False,
            "warnings": checked.warnings.get(name, []) + ([f"suspended: {stop[name]}"] if name in stop else []),
        })
    for name in orphans.orphans(project):
        if _like(name, like):
            rows.append(_orphan_row(project, name, last.get(name, {})))
    return rows


def _orphan_row(project: Project, name: str, recent: dict[str, Any]) -> dict[str, Any]:
    info = table_info(project.table_path(name))
    frontier = (info.frontier if info else None) or {}
    return {"name": name, "target_lag": None, "effective_lag_seconds": None, "period_seconds": None,
            "refresh_mode": frontier.get("refresh_mode"), "refresh_mode_reason": None,
            "scheduling_state": "ORPHANED",
            "scheduling_state_reason": "its .sql file was removed; `dt drop` deletes the table",
            "next_due": None, "data_timestamp": frontier.get("data_timestamp"), "immutable_where": None,
            "rows": info.rows if info else None, "bytes": info.bytes if info else None, "text": None,
            "created_on": info.created_on if info else None,
            "last_refresh_action": recent.get("refresh_action"), "last_refresh_state": recent.get("state"),
            "version": info.version if info else None, "path": project.table_path(name), "file": None,
            "orphaned": True,
            "warnings": [f"{name} is orphaned: no tables/{name}.sql defines it any more; it is no "
                         f"longer refreshed; drop it with `dt drop {name}`"]}


def show_history(project: Project, name: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    if name and name.lower() not in project.tables and name.lower() not in orphans.orphans(project):
        raise UsageError(f"no dynamic table named '{name}'", hint=suggest(name.lower(), project.tables))
    return history.read(project.warehouse, name.lower() if name else None, limit)


def failed(records: list[dict[str, Any]]) -> bool:
    return any(r["state"] in (FAILED, UPSTREAM_FAILED) for r in records)
