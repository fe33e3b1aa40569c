"""Which DTs one scheduling pass of `dt run` refreshes, and when the next pass is due.

Pure functions over already-read state (snapshot, history, scheduling events), so every
decision is unit-testable with an injected `now` and needs no JVM. The planner then adds the
upstream DTs each chosen DT needs and decides each one's refresh action.

Each DT's period leaves room for its measured refresh time (schedule.lag_period over
refresh_times): `periods` turns the history's timings into one period per scheduled DT, which
`decide`, `next_due_at` and `next_wake` take (without it, every DT has the period of its lag
alone).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dtcli.model import FAILED, MANUAL, SUCCEEDED, Frontier, Project, RefreshRecord
from dtcli.model.refresh_terms import APPLICATION_NOT_STARTED
from dtcli.planning import on_demand
from dtcli.planning.checked import Checked
from dtcli.planning.graph import Graph
from dtcli.planning.kinds.registry import kind_of
from dtcli.planning.refresh_times import Timing, to_commit
from dtcli.planning.schedule import PASS_SHARE, is_due, lag_period, next_due, next_tick, period_seconds
from dtcli.planning.snapshot import Snapshot
from dtcli.state.scheduling import SUSPENDED, Event, TableState

AUTO_SUSPEND_AFTER = 5   # consecutive failed scheduled refreshes, as in Snowflake


def parse_ts(value: Any) -> datetime | None:
    if not value:
        return None
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def data_timestamps(snapshot: Snapshot, history_rows: list[RefreshRecord]) -> dict[str, datetime | None]:
    """Each DT's data timestamp: its frontier's, or a newer one from a NO_DATA refresh (which
    advances freshness without committing to the table)."""
    newest: dict[str, datetime] = {}
    for row in history_rows:
        stamp = parse_ts(row.data_timestamp) if row.state == SUCCEEDED else None
        if stamp and (row.name not in newest or stamp > newest[row.name]):
            newest[row.name] = stamp
    out: dict[str, datetime | None] = {}
    for name, info in snapshot.tables.items():
        if info is None:      # not created (or dropped and about to be recreated)
            out[name] = None
            continue
        own = parse_ts(info.frontier.data_timestamp) if info.frontier else None
        stamps = [s for s in (own, newest.get(name)) if s]
        out[name] = max(stamps) if stamps else None
    return out


def blocked(graph: Graph, states: Mapping[str, TableState]) -> dict[str, str]:
    """Suspended DTs and every DT downstream of one, with why: a DT cannot refresh from a
    consistent snapshot without refreshing its upstream, which the suspension forbids."""
    out: dict[str, str] = {}
    roots = sorted(n for n, s in states.items() if s.state == SUSPENDED and n in graph.upstream)
    for root in roots:
        out[root] = states[root].reason or "suspended"
    for root in roots:
        for name in graph.ordered(graph.downstream_closure({root}) - {root}):
            out.setdefault(name, f"upstream {root} is suspended ({out[root]})")
    return out


def periods(checked: Checked, timings: Mapping[str, Timing], short_passes: bool = False) -> dict[str, int]:
    """Each scheduled DT's period: the aligned period of its effective lag, shortened to leave
    room for the time its refreshes take from snapshot to commit (at least its upstreams') and,
    with `short_passes` (a watcher's), for the short pass it may wait for once due."""
    seconds = to_commit(timings, checked.graph.upstream)
    out = {}
    for name, lag in checked.effective_lags.items():
        if lag is None:
            continue
        measured = seconds.get(name)
        if measured is not None and short_passes:
            measured += lag * PASS_SHARE
        out[name] = lag_period(lag, measured)
    return out


def _period(name: str, lag: int, chosen: Mapping[str, int] | None) -> int:
    return (chosen or {}).get(name) or period_seconds(lag)


@dataclass
class Decision:
    refresh: set[str] = field(default_factory=set)        # handed to the planner as `selected`
    register: list[str] = field(default_factory=list)     # on_schedule DTs seen for the first time
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why it is not refreshed now
    not_due: dict[str, datetime] = field(default_factory=dict)  # name -> when it falls due
    stamps: dict[str, datetime | None] = field(default_factory=dict)  # data timestamps decided on
    timings: dict[str, Timing] = field(default_factory=dict)    # measured refresh times decided on


def decide(checked: Checked, stamps: Mapping[str, datetime | None], states: Mapping[str, TableState],
           candidates: set[str], *, all_tables: bool = False, now: datetime | None = None,
           asked: bool = False, timings: Mapping[str, Timing] | None = None,
           short_passes: bool = False, catch_up: bool = False) -> Decision:
    """Reconcile (create, reinitialize) and pick the due DTs among `candidates` at `now` (by
    default the moment of the checked snapshot). `asked`: the candidates are a user's
    selection, so `all_tables` refreshes the on-demand (`scheduler: disable`) DTs among them.
    `timings`: the DTs' measured refresh times, which shorten their periods (see `periods`, as
    `short_passes`). `catch_up`: every DT the schedule refreshes is refreshed now, due or not
    (the pass of a watcher that starts its Spark application)."""
    project, graph, snapshot = checked.project, checked.graph, checked.snapshot
    now = now or checked.now
    effective = checked.effective_lags
    chosen = periods(checked, timings or {}, short_passes)
    out = Decision(stamps=dict(stamps), timings=dict(timings or {}))
    stop = blocked(graph, states)
    manual_only = on_demand.on_demand(project)
    for name in graph.ordered(candidates):
        if name in stop:
            out.skipped[name] = f"suspended: {stop[name]}"
            continue
        table, info, lag = project.tables[name], snapshot.tables.get(name), effective.get(name)
        demanded = all_tables and (asked or name not in manual_only)
        if info is None:
            if table.config.initialize == "on_create" or demanded:
                out.refresh.add(name)
                continue
            if name in manual_only:
                out.skipped[name] = (f"scheduler: disable and initialize: on_schedule; created by "
                                     f"its first on-demand refresh (`dt refresh {name}`)")
                continue
            registered = parse_ts(states.get(name, TableState()).registered_on)
            if registered is None:
                out.register.append(name)
                out.skipped[name] = "initialize: on_schedule; created at its first scheduled tick"
            elif lag is not None and is_due(now, _period(name, lag, chosen), registered):
                out.refresh.add(name)
            else:
                out.skipped[name] = "initialize: on_schedule; waiting for its first scheduled tick"
        elif info.frontier is None or _rebuilds(checked, name, info.frontier):
            out.refresh.add(name)   # reconcile: a changed definition is applied now, due or not
        elif name in manual_only and not demanded:
            out.skipped[name] = (f"scheduler: disable; refreshed only on demand (`dt refresh {name}`, "
                                 f"or `dt run --select {name} --all`)")
        elif all_tables:
            out.refresh.add(name)
        elif lag is None:
            out.skipped[name] = "target_lag downstream and no time-lagged consumer: not scheduled"
        elif catch_up or is_due(now, _period(name, lag, chosen), stamps.get(name)):
            out.refresh.add(name)
        else:
            due = next_due(now, _period(name, lag, chosen), stamps.get(name))
            out.skipped[name] = f"not due until {due.isoformat()}"
            out.not_due[name] = due
    for name, gone in on_demand.missing_upstream(checked, out.refresh).items():
        out.refresh.discard(name)
        out.skipped[name] = f"not refreshed: {on_demand.missing_reason(gone)}"
    return out


def _rebuilds(checked: Checked, name: str, frontier: Frontier) -> bool:
    """Whether a changed definition must be applied at once (as the DT's kind says)."""
    if frontier.definition_hash == checked.hashes[name]:
        return False
    return kind_of(checked.project.tables[name]).redefined_now(checked, name)


def next_due_at(project: Project, name: str, exists: bool, effective: Mapping[str, int | None],
                stamps: Mapping[str, datetime | None], states: Mapping[str, TableState],
                stop: Mapping[str, str], now: datetime, chosen: Mapping[str, int] | None = None) -> datetime | None:
    """When the schedule will next refresh `name` (None: never by schedule); `chosen`: the
    periods of `periods` (default: each lag's own)."""
    lag = effective.get(name)
    if name in stop or lag is None:
        return None
    period = _period(name, lag, chosen)
    if not exists:
        registered = parse_ts(states.get(name, TableState()).registered_on)
        if project.tables[name].config.initialize == "on_create" or registered is None:
            return now
        return next_due(now, period, registered)
    return next_due(now, period, stamps.get(name))


def next_wake(checked: Checked, stamps: Mapping[str, datetime | None], states: Mapping[str, TableState],
              now: datetime, created: set[str] = frozenset(),
              chosen: Mapping[str, int] | None = None, ready: Collection[str] = frozenset()) -> datetime | None:
    """When `--watch` should run its next pass: the earliest next due time. `now` again only
    for a DT in `ready` (one the pass just refreshed, whose period ran out while the pass ran, or
    one not due when the pass began): passes then follow one another. Any other DT due now (it
    failed, or cannot run) is retried at the next tick of its lag's own period, not in a busy
    loop. `created`: DTs created since the snapshot was taken; `chosen`: the periods of `periods`."""
    project, effective = checked.project, checked.effective_lags
    stop = blocked(checked.graph, states)
    wakes = []
    for name in project.tables:
        exists = checked.snapshot.tables.get(name) is not None or name in created
        due = next_due_at(project, name, exists, effective, stamps, states, stop, now, chosen)
        if due is None:
            continue
        if due > now or name in ready:
            wakes.append(max(due, now))
        else:
            wakes.append(next_tick(now, period_seconds(effective[name])))
    return min(wakes) if wakes else None


def failure_streaks(history_rows: list[RefreshRecord], resumed: Mapping[str, str]) -> dict[str, dict]:
    """Consecutive failed non-manual refreshes per DT, newest first, since its last success or
    resume. Manual failures, UPSTREAM_FAILED and runs whose application did not start neither
    count nor break a streak."""
    rows = sorted(history_rows, key=lambda r: (r.refresh_end_time or "", r.refresh_start_time or ""),
                  reverse=True)
    streaks: dict[str, dict] = {}
    done: set[str] = set()
    for row in rows:
        name = row.name
        if name in done or row.state_code == APPLICATION_NOT_STARTED:
            continue
        since = resumed.get(name)
        if row.state == SUCCEEDED or (since and (row.refresh_end_time or "") <= since):
            done.add(name)
        elif row.state == FAILED and row.refresh_trigger != MANUAL:
            streak = streaks.setdefault(name, {"count": 0, "last_error": row.state_message})
            streak["count"] += 1
    return streaks


def auto_suspensions(streaks: Mapping[str, dict], states: Mapping[str, TableState],
                     at: str) -> list[Event]:
    """SUSPENDED events for DTs that reached the failure threshold (their downstream DTs are
    then blocked by `blocked`, which records them as suspended because of this one)."""
    events = []
    for name in sorted(streaks):
        streak = streaks[name]
        if streak["count"] >= AUTO_SUSPEND_AFTER and states.get(name, TableState()).state != SUSPENDED:
            why = (f"auto-suspended after {AUTO_SUSPEND_AFTER} consecutive failed scheduled refreshes"
                   + (f"; last error: {streak['last_error']}" if streak.get("last_error") else ""))
            events.append(Event(name, SUSPENDED, why, name, at))
    return events
