"""Helpers for scheduling and lifecycle tests: JVM-free sources and DTs, fake snapshots, an
in-process launcher, and a scheduling simulator driven by an injected clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake

from dtcli.engine.launch.contract import LaunchResult
from dtcli.model import Column, Frontier, Project
from dtcli.planning import scheduler
from dtcli.planning.checked import Checked, check
from dtcli.planning.definition import definition_hash
from dtcli.planning.graph import Graph
from dtcli.planning.lag import parse_target_lag, resolve_lags
from dtcli.planning.snapshot import Snapshot
from dtcli.project import load_project
from dtcli.state.delta_log import TableInfo, frontier_metadata, table_version
from tests.helpers import write_project

# A moment (early 2024) on a tick of every aligned period up to 48 s x 2^10, so tests reason in
# whole periods from it.
T0 = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=48 * 1024 * 34670)
SRC_CONFIG = "sources:\n  src: {path: data/src}\n"


def chain_project(tmp_path: Path, lags: dict[str, str], reads: dict[str, str], *, extra_yml: dict[str, str] | None = None) -> Project:
    """A project where each DT in `lags` reads `reads[name]` (a DT or the source `src`)."""
    tables = {n: f"SELECT x FROM {reads[n]}" for n in lags}
    yml = {n: f"target_lag: {lag}\n" + (extra_yml or {}).get(n, "") for n, lag in lags.items()}
    root = write_project(tmp_path / "proj", tables, config=SRC_CONFIG, table_yml=yml)
    return load_project(root)


def write_source(project: Project, rows: list[int], mode: str = "append") -> int:
    path = project.sources["src"].path
    write_deltalake(path, pa.table({"x": pa.array(rows, pa.int64())}), mode=mode,
                    configuration={"delta.enableChangeDataFeed": "true"})
    return table_version(path)


def fake_dt(project: Project, name: str, data_timestamp: datetime, definition: str | None = None) -> None:
    """A DT as dt would have left it, written without Spark: current with its inputs as of now."""
    table = project.tables[name]
    versions = {i: table_version(project.input_path(i)) for i in table.inputs}
    # no run id: no dt run wrote it, so history reconciliation has no refresh to record for it
    frontier = Frontier(versions, definition or definition_hash(table), data_timestamp.isoformat(),
                        None, "FULL", "FULL")
    write_deltalake(project.table_path(name), pa.table({"x": pa.array([1], pa.int64())}), mode="overwrite",
                    configuration={"delta.enableChangeDataFeed": "true"},
                    commit_properties=CommitProperties(custom_metadata={"userMetadata": frontier_metadata(frontier)}))


def in_process(spark):
    """A launcher for `api.execute` that runs the plan in this process's SparkSession."""
    from dtcli.engine.runtime.executor import execute_plan

    def launch(project, plan, on_event, lock=None):
        records = execute_plan(spark, plan, on_event)
        return LaunchResult(returncode=0, records=records, done=True, started=True)
    return launch


def info(project: Project, name: str, *, definition: str | None = None) -> TableInfo:
    frontier = Frontier({}, definition or definition_hash(project.tables[name]))
    return TableInfo(version=0, rows=0, bytes=0, change_data_feed=True, created_on=None, frontier=frontier,
                     frontier_version=0, schema=(Column("x", "BIGINT"),))


def checked_at(project: Project, tables: dict[str, TableInfo | None], now: datetime = None) -> Checked:
    """The project checked against a made-up snapshot of its DTs (no Delta table is read)."""
    return check(project, Snapshot(now or T0, {}, tables))


def effective_lags(project: Project, graph: Graph) -> dict[str, int | None]:
    lags = {n: parse_target_lag(t.target_lag) for n, t in project.tables.items()}
    return resolve_lags(lags, graph.upstream).effective_seconds


def simulate(project: Project, seconds: int, step: int = 8, start: datetime = T0) -> list[tuple[int, set[str]]]:
    """Scheduling passes every `step` seconds from `start` (every DT created at `start`); each
    pass refreshes what `scheduler.decide` picks plus the upstream DTs the planner would add.
    Returns (offset seconds, refreshed DTs) for the passes that refreshed something."""
    checked = checked_at(project, {n: info(project, n) for n in project.tables}, start)
    graph = checked.graph
    stamps: dict[str, datetime | None] = {n: start for n in project.tables}
    log = []
    for offset in range(step, seconds + 1, step):
        now = start + timedelta(seconds=offset)
        decision = scheduler.decide(checked, stamps, {}, set(project.tables), now=now)
        refreshed = graph.upstream_closure(decision.refresh)
        for name in refreshed:
            stamps[name] = now
        if refreshed:
            log.append((offset, refreshed))
    return log


def frontier_json(project: Project, name: str) -> dict:
    from dtcli.state.delta_log import table_info

    found = table_info(project.table_path(name), with_stats=False)
    return found.frontier.to_dict() if found and found.frontier else {}


@dataclass
class WatchLog:
    passes: list[tuple[float, set[str]]] = field(default_factory=list)  # (offset s, DTs refreshed)
    lags: dict[str, list[float]] = field(default_factory=dict)   # per DT, its lag just before each commit
    records: list = field(default_factory=list)                 # every refresh, newest first

    def peak(self, name: str, skip: int = 0) -> float:
        return max(self.lags[name][skip:])


def simulate_watch(project: Project, seconds: float, to_commit, start: datetime = T0, *,
                   work=None, short_pass: bool = False, threads: int = 1) -> WatchLog:
    """`dt run --watch` over `seconds` on an injected clock, as api/watch.py drives it: each
    pass refreshes what `scheduler.decide` picks (with the refresh times measured so far) plus
    the upstream DTs the planner adds; `to_commit(name, refreshed)` says how long each refresh
    takes from the pass's snapshot to its commit (`work(name, refreshed)`: how long it runs
    itself, by default the same); the next pass starts at `scheduler.next_wake`, or when the
    pass ends if that is later. Every DT is created at `start`. `short_pass`: passes keep to
    pass_budget's share of the lag, with `threads` refreshes side by side."""
    from dtcli.model import INCREMENTAL, SCHEDULED, SUCCEEDED, RefreshRecord, RefreshStep
    from dtcli.planning import pass_budget, refresh_times

    checked = checked_at(project, {n: info(project, n) for n in project.tables}, start)
    graph = checked.graph
    stamps: dict[str, datetime | None] = {n: start for n in project.tables}
    timings: dict = {}
    log = WatchLog()
    now = start
    while now < start + timedelta(seconds=seconds):
        decision = scheduler.decide(checked, stamps, {}, set(project.tables), now=now, timings=timings,
                                    short_passes=short_pass)
        if short_pass:
            planned = graph.upstream_closure(decision.refresh)
            steps = [RefreshStep(name=n, path="", action=INCREMENTAL, trigger=SCHEDULED, sql="", inputs=[],
                                 definition_hash="", refresh_mode=INCREMENTAL,
                                 upstream=[u for u in graph.upstream[n] if u in planned])
                     for n in graph.ordered(planned)]
            pass_budget.defer(checked, decision, steps, threads)
        refreshed = graph.upstream_closure(decision.refresh)
        records = []
        for name in graph.ordered(refreshed):
            end = now + timedelta(seconds=to_commit(name, refreshed))
            began = end - timedelta(seconds=(work or to_commit)(name, refreshed))
            log.lags.setdefault(name, []).append((end - stamps[name]).total_seconds())
            records.append(RefreshRecord(name, SUCCEEDED, INCREMENTAL, SCHEDULED, now.isoformat(), began.isoformat(),
                                         end.isoformat(), "r", target_lag_sec=checked.effective_lags[name],
                                         completion_target=(stamps[name] + timedelta(
                                             seconds=checked.effective_lags[name])).isoformat()))
        if refreshed:
            log.passes.append(((now - start).total_seconds(), refreshed))
        log.records = sorted(records, key=lambda r: r.refresh_end_time, reverse=True) + log.records
        ended = max([now] + [datetime.fromisoformat(r.refresh_end_time) for r in records])
        for name in refreshed:
            stamps[name] = now
        timings = refresh_times.measured(records, timings)
        wake = scheduler.next_wake(checked, stamps, {}, ended, chosen=scheduler.periods(checked, timings, short_pass),
                                   ready=refreshed | set(decision.not_due))
        now = max(wake, ended)
    return log
