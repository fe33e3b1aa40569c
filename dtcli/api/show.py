"""`dt show dynamic tables` and `dt show refresh-history`: state read from Delta logs, no JVM."""

from __future__ import annotations

import fnmatch

from dtcli.config_keys import listed
from dtcli.errors import UsageError, suggest
from dtcli.model import Project, RefreshRecord, TableDef
from dtcli.planning import lag_stats, on_demand, refresh_times, scheduler
from dtcli.planning.checked import Checked
from dtcli.planning.kinds.registry import kind_of
from dtcli.planning.lag import parse_target_lag
from dtcli.state import history, orphans, reconcile, scheduling
from dtcli.state.delta_log import Row, TableInfo, table_info

DISABLED, ORPHANED = "DISABLED", "ORPHANED"

# One row of `dt show dynamic tables` (its JSON with --format json: the keys users script
# against, built by `_row` and `show_tables`). Keys vary by row: a catalog adds
# `qualified_name`, an orphan `columns` and `warnings`.
ShowRow = dict[str, object]


def _like(name: str, like: str | None) -> bool:
    return not like or fnmatch.fnmatch(name, like.replace("%", "*").replace("_", "?").lower())


def show_tables(checked: Checked, like: str | None = None, *,
                records: list[RefreshRecord] | None = None, internal: bool = False) -> list[ShowRow]:
    """One row per DT of the project, then its disabled DTs, then one per orphan (a DT in the
    warehouse whose file is gone). `records`: the refresh history, settled and read already by
    a caller that needs it too (`dt docs`). `internal`: each DT's row lists the internal tables
    it keeps (`internal_tables`), which are never rows of their own."""
    project, snapshot, now = checked.project, checked.snapshot, checked.now
    if records is None:
        reconcile.settle(project, snapshot.tables)
        # the last hour (longer only for a DT with no entry in it): a `--watch` adds thousands
        # of entries an hour, and the lag figures need just that hour
        records, _ = history.read_recent(project.warehouse, _created(checked), now)
    rows_history = records
    last = history.latest_per_table(rows_history)
    events = scheduling.read_events(project.warehouse)
    states = scheduling.current(project.warehouse, events)
    stamps = scheduler.data_timestamps(snapshot, rows_history)
    stop = scheduler.blocked(checked.graph, states)
    suspended_on = _last_suspended(checked, events, states, stop)
    timings = refresh_times.measured(rows_history)
    periods = scheduler.periods(checked, timings)
    reach = refresh_times.reaches(timings, checked.graph.upstream, checked.effective_lags, project.threads)
    lags = lag_stats.lags(rows_history, {n: stamps.get(n) for n in checked.graph.order},
                          checked.effective_lags, now)
    rows = []
    for name in checked.graph.order:
        if not _like(name, like):
            continue
        table, info = project.tables[name], snapshot.tables.get(name)
        mode, effective = checked.modes[name], checked.effective_lags.get(name)
        due = scheduler.next_due_at(project, name, info is not None, checked.effective_lags, stamps, states,
                                    stop, now, periods)
        stamp = stamps.get(name)
        manual = on_demand.is_on_demand(table)
        behind = None if manual else refresh_times.cannot_meet(name, effective, reach.get(name))
        rows.append({
            **_row(project, name, table, info, last.get(name)),
            # an on-demand DT has no target lag (Snowflake shows none with SCHEDULER = DISABLE)
            "target_lag": None if manual else str(parse_target_lag(table.target_lag)),
            "effective_lag_seconds": effective,
            "period_seconds": periods.get(name) if effective else None,
            "refresh_mode": mode.mode, "refresh_mode_reason": mode.reason,
            "scheduling_state": scheduling.SUSPENDED if name in stop else scheduling.ACTIVE,
            "scheduling_state_reason": stop.get(name),
            "last_suspended_on": suspended_on.get(name),
            "next_due": due.isoformat() if due else None,
            "data_timestamp": stamp.isoformat() if stamp else None,
            **lags[name].to_dict(),
            "refresh_seconds": _round(reach[name].to_commit if name in reach else None),
            "can_meet_target_lag": None if manual or effective is None or name not in reach else behind is None,
            "columns": [c.to_dict() for c in checked.schemas.get(name, ())],
            "warnings": checked.warnings.get(name, []) + ([f"suspended: {stop[name]}"] if name in stop else [])
            + ([behind] if behind else []),
            **({"internal_tables": kind_of(table).internal_tables(checked, name)} if internal else {}),
        })
    for name, table in sorted(project.disabled.items()):
        if _like(name, like):
            info = snapshot.tables.get(name)
            rows.append({**_row(project, name, table, info, last.get(name)),
                         "scheduling_state": DISABLED,
                         "scheduling_state_reason": f"enabled: false in {table.file} or its config",
                         "columns": [c.to_dict() for c in info.schema] if info else [],
                         "warnings": [f"{name} is disabled: it is not refreshed and not validated"]})
    for name in orphans.orphans(project):
        if _like(name, like):
            rows.append(_orphan_row(project, name, last.get(name)))
    return rows


def _created(checked: Checked) -> list[str]:
    """The DTs in the warehouse whose newest history entry `show` lists."""
    return [n for n, info in checked.snapshot.tables.items() if info is not None] + orphans.orphans(checked.project)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _last_suspended(checked: Checked, events, states, stop) -> dict[str, str]:
    """Snowflake's `last_suspended_on`: a DT's own newest suspension, or, while a suspended
    upstream DT holds it back, that suspension if it is newer."""
    own = scheduling.last_suspended(events)
    graph = checked.graph
    roots = [r for r, st in states.items() if st.state == scheduling.SUSPENDED and r in graph.upstream]
    out = dict(own)
    for root in roots:
        for name in graph.downstream_closure({root}) & set(stop):
            if root in own and own[root] > out.get(name, ""):
                out[name] = own[root]
    return out


_EMPTY = dict.fromkeys(("target_lag", "effective_lag_seconds", "period_seconds", "refresh_mode",
                        "refresh_mode_reason", "scheduling_state", "scheduling_state_reason",
                        "last_suspended_on", "next_due", "data_timestamp", "lag_seconds", "peak_lag_seconds",
                        "peak_lag_at", "target_lag_met", "refreshes_last_hour", "refresh_seconds",
                        "can_meet_target_lag"))


def _row(project: Project, name: str, table: TableDef | None, info: TableInfo | None,
         recent: RefreshRecord | None) -> ShowRow:
    """The columns every kind of row has: what the table is and what its log says."""
    config = table.config if table else None
    frontier = info.frontier if info else None
    return {
        "name": name, **_EMPTY,
        **({"qualified_name": project.qualified_name(name)} if project.catalog else {}),
        "refresh_mode": frontier.refresh_mode if frontier else None,
        "data_timestamp": frontier.data_timestamp if frontier else None,
        "immutable_where": config.frozen_where if config else None,
        "rows": info.rows if info else None, "bytes": info.bytes if info else None,
        "text": table.sql.strip() if table else None,
        "created_on": info.created_on if info else None,
        "last_refresh_action": recent.refresh_action if recent else None,
        "last_refresh_state": recent.state if recent else None,
        "comment": (info.description if info else None) or (config.comment if config else None),
        "cluster_by": listed(config.cluster_by) if config else None,
        "tags": list(table.tags) if table else [],
        "scheduler": on_demand.scheduler_value(table) if table else None,
        "deletion_vectors": config.deletion_vectors if config else None,
        "version": info.version if info else None, "path": project.table_path(name),
        "file": table.file if table else None, "orphaned": table is None,
    }


def _orphan_row(project: Project, name: str, recent: RefreshRecord | None) -> ShowRow:
    info = table_info(project.table_path(name))
    return {**_row(project, name, None, info, recent),
            "scheduling_state": ORPHANED,
            "scheduling_state_reason": "its .sql file was removed; `dt drop` deletes the table",
            "columns": [c.to_dict() for c in info.schema] if info else [],
            "warnings": [f"{name} is orphaned: no tables/{name}.sql defines it any more; it is no "
                         f"longer refreshed; drop it with `dt drop {name}`"]}


def show_history(checked: Checked, name: str | None = None, limit: int | None = None) -> list[dict[str, object]]:
    """`dt show refresh-history`: the DT's (or every DT's) history rows, newest first, as
    `RefreshRecord.to_row` writes them."""
    project = checked.project
    key = name.lower() if name else None
    if key and key not in project.tables and key not in project.disabled \
            and key not in orphans.orphans(project):
        raise UsageError(f"no dynamic table named '{name}'", hint=suggest(key, project.tables))
    reconcile.settle(project, checked.snapshot.tables)
    return [r.to_row() for r in history.read(project.warehouse, key, limit)]


def show_rows(checked: Checked, name: str, *, where: str | None = None, limit: int = 10,
              count: bool = False) -> list[Row] | dict[str, int]:
    """`dt show rows`: a DT's rows with `is_frozen` (as of its last refresh), or with `count`
    how many rows are frozen and active. Read without a JVM."""
    from dtcli.state import rows as reader

    project = checked.project
    key = project.table_key(name)
    info = checked.snapshot.tables.get(key)
    if info is None:
        raise UsageError(f"{key} has not been created yet", hint="run `dt run` first")
    predicate = reader.frozen_as_refreshed(info, project.dialect)
    condition = None
    if where:
        import sqlglot
        from sqlglot import exp
        from sqlglot.errors import SqlglotError

        try:
            condition = sqlglot.parse_one(where, read=project.dialect, into=exp.Condition)
        except (SqlglotError, ValueError):
            raise UsageError(f"--where is not one SQL condition: {where}",
                             hint="e.g. --where \"order_date >= '2025-01-01'\"") from None
    if count:
        return reader.counts(project.table_path(key), list(info.columns), predicate, condition)
    return reader.rows(project.table_path(key), list(info.columns), predicate, condition, limit)
