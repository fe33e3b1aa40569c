"""`dt docs generate`: the facts of the documentation site, gathered without a JVM.

One document (written as `target/docs/project.json`, documented in docs/docs-site.md) holds
everything the site shows, so that the pages and other tools read the same facts: per DT its
`dt show dynamic tables` row, its `dt explain` document and its `dt show refresh-history` rows,
unchanged, plus the sources, the edges of the DAG and an overview. Its types (and schema_version)
are dtcli/artifacts/manifest.py; the HTML is rendered from them by `dtcli.ui.site`.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TypedDict

from dtcli import __version__
from dtcli.api.lineage_static import JobEventsWritten
from dtcli.api.show import DISABLED, ORPHANED, ShowRow, show_tables
from dtcli.api.test_results import CheckRow, last_results
from dtcli.artifacts.explain import ColumnType, ExplainReport
from dtcli.artifacts.manifest import (
    SCHEMA_VERSION,
    CheckPoint,
    DayTotals,
    ExpectationCounts,
    Freshness,
    HistoryRow,
    Lag,
    LastCheck,
    Manifest,
    ManifestMetadata,
    Overview,
    RecordedCheck,
    SourceFacts,
    TableFacts,
    TableStatus,
    TableTestResults,
)
from dtcli.artifacts.run_results import Statistics
from dtcli.artifacts.typed_json import JSON, from_json, to_json
from dtcli.data_tests import KEEP_OUT, RECORD, STOP
from dtcli.model import RefreshRecord
from dtcli.model.refresh_terms import FAILURE_STATES
from dtcli.planning import selectors
from dtcli.planning.checked import Checked
from dtcli.planning.explain import explain
from dtcli.state import history, reconcile, scheduling, test_results

HISTORY_PER_TABLE = 100     # newest refreshes kept per DT: a --watch of months stays a small site
PER_DAY_DAYS = 14           # the overview's refresh time per day covers the last two weeks
ACTIVE, FAILED = scheduling.ACTIVE, "FAILED"
_STATISTICS = frozenset(("num_inserted_rows", "num_deleted_rows", "num_copied_rows"))   # to_row's statistics
# a history row's fields: the record's, its statistics nested (RefreshRecord.to_row)
_ROW_FIELDS = tuple(f.name for f in dataclasses.fields(HistoryRow) if f.name not in ("statistics", "data_tests"))


def facts(checked: Checked, select: list[str] | None = None, *,
          history_per_table: int = HISTORY_PER_TABLE) -> Manifest:
    """The project.json document: DTs (selected, or all with the disabled and orphaned ones),
    the sources they read, the edges between them and the overview."""
    project, graph, now = checked.project, checked.graph, checked.now
    chosen = selectors.select(project, graph, select) if select else None
    records = _settled_history(checked)
    status = {row["name"]: row for row in show_tables(checked, records=records)}
    per_table: dict[str, list[RefreshRecord]] = {}
    for record in records:
        per_table.setdefault(record.name, []).append(record)
    # each defined check's newest result, from a refresh's audit or from dt test / dt build
    checks = last_results(checked, [r for r in records if r.data_tests], test_results.latest(project.warehouse))

    tables: dict[str, TableFacts] = {}
    for name in graph.order:
        if chosen is None or name in chosen:
            mine = per_table.get(name, [])
            tables[name] = _table(checked, name, status[name], explain(checked, name, mine),
                                  mine[:history_per_table], checks.get(name, []))
    if chosen is None:   # the disabled and orphaned DTs belong to no selection
        for name, row in status.items():
            if row["scheduling_state"] in (DISABLED, ORPHANED):
                tables[name] = _table(checked, name, row, None, per_table.get(name, [])[:history_per_table])

    read = {i for name in tables for i in _inputs(checked, name)}
    sources = {name: _source(checked, name, tables) for name in sorted(project.sources)
               if chosen is None or name in read}
    edges = [[i, name] for name in tables for i in _inputs(checked, name) if i in tables or i in sources]
    return Manifest(
        metadata=ManifestMetadata(
            format_version=SCHEMA_VERSION, schema_version=SCHEMA_VERSION, dt_version=__version__,
            generated_at=now.isoformat(), project=project.name, project_version=project.version,
            target=project.target, dialect=project.dialect, warehouse=project.warehouse,
            select=list(select) if select else None, history_per_table=history_per_table),
        sources=sources,
        dynamic_tables=tables,
        edges=edges,
        # from the whole history, not the newest entries kept per DT
        overview=_overview(tables, [r for r in records if r.name in tables], now),
    )


def parse_ts(value: str | None) -> datetime | None:
    """An ISO timestamp of the state; one without an offset is UTC, as dt writes every time."""
    if not value:
        return None
    when = datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _settled_history(checked: Checked) -> list[RefreshRecord]:
    """The refresh history, newest first, read once (it is the slow read of a big warehouse),
    with the refreshes of an interrupted run recorded first, as `dt show` settles them."""
    project = checked.project
    records = history.read(project.warehouse)
    new, dead = reconcile.missing(project, checked.snapshot.tables, records)
    if new or dead:
        reconcile.settle(project, checked.snapshot.tables)
        records = history.read(project.warehouse)
    return records


def _history_row(record: RefreshRecord) -> HistoryRow:
    """`record.to_row()` (the JSON of `dt show refresh-history`) without dataclasses.asdict's deep
    copy, which took seconds over the 20,000 rows of a big site."""
    checks = None if record.data_tests is None else [from_json(RecordedCheck, t) for t in record.data_tests]
    return HistoryRow(**{f: getattr(record, f) for f in _ROW_FIELDS}, data_tests=checks,
                      statistics=Statistics(record.num_inserted_rows, record.num_deleted_rows, record.num_copied_rows))


class SiteWritten(TypedDict, total=False):
    """What `generate` wrote, for the command's summary line."""

    path: str
    index: str                # the site's index.html
    pages: int
    dynamic_tables: int
    sources: int
    openlineage: JobEventsWritten     # with --openlineage only
    seconds: float


def generate(checked: Checked, select: list[str] | None = None, out: Path | None = None, *,
             openlineage: bool = False) -> SiteWritten:
    """Write the site to `out` (default `target/docs/`); returns what was written and how long
    it took. `openlineage`: also the DTs as OpenLineage job events (dtcli/api/lineage_static.py)."""
    from dtcli.ui.site import write_site

    started = time.monotonic()
    doc = facts(checked, select)
    out = out or checked.project.target_dir / "docs"
    pages = write_site(doc, out)
    done = SiteWritten(path=str(out), index=str(out / "index.html"), pages=pages,
                       dynamic_tables=len(doc.dynamic_tables), sources=len(doc.sources))
    if openlineage:
        from dtcli.api.lineage_static import write_job_events

        done["openlineage"] = write_job_events(checked, list(doc.dynamic_tables), out)
    return SiteWritten(**done, seconds=round(time.monotonic() - started, 3))


def _inputs(checked: Checked, name: str) -> tuple[str, ...]:
    project = checked.project
    table = project.tables.get(name) or project.disabled.get(name)
    return table.inputs if table else ()


def _table(checked: Checked, name: str, row: ShowRow, explained: ExplainReport | None,
           records: list[RefreshRecord], checks: list[CheckRow] | None = None) -> TableFacts:
    project = checked.project
    table = project.tables.get(name) or project.disabled.get(name)
    sql_as_written = None
    if table is not None:
        try:
            sql_as_written = (project.root / table.file).read_text(encoding="utf-8")
        except OSError:
            sql_as_written = table.sql
    status: TableStatus = from_json(TableStatus, row)     # dt show's row, as its JSON has it
    target = status.effective_lag_seconds
    stamp = parse_ts(status.data_timestamp)
    lag = (checked.now - stamp).total_seconds() if stamp else None
    return TableFacts(
        name=name,
        state=_state(status),
        frozen=bool(status.immutable_where),
        file=status.file,
        sql=sql_as_written,
        compiled_sql=_compiled(checked, name),
        config=_config(table.config) if table else {},
        lag=Lag(target_seconds=target, current_seconds=round(lag, 3) if lag is not None else None,
                behind=bool(target and lag is not None and lag > target),
                data_timestamp=status.data_timestamp,
                # the last hour's peak and whether it stayed within target (dt show's figures)
                peak_seconds=status.peak_lag_seconds, target_met=status.target_lag_met,
                refresh_seconds=status.refresh_seconds, can_meet_target=status.can_meet_target_lag),
        status=status,
        explain=explained,
        refresh_history=[_history_row(r) for r in records],
        data_tests=_test_results(records, checks),
    )


def _config(config) -> dict[str, JSON]:
    """The table's config as merged, as JSON values: its data tests, expectations and column notes
    as objects (written before as their Python repr, a string no tool could read)."""
    return to_json(config.as_written())


_RESULT_KEYS = ("name", "kind", "test", "column", "status", "failures", "message", "action", "at", "by")
# an expectation's violating rows, named by what its on_violation did with them
_COUNTED = {KEEP_OUT: "dropped", RECORD: "warned", STOP: "failed"}


def _test_results(records: list[RefreshRecord], checks: list[CheckRow] | None) -> TableTestResults:
    """What the DT's checks found. `last`: each check it defines with its newest result, from a
    refresh's audit or from `dt test` / `dt build` (`dt show test-results`' rows; `checks`); a DT
    not defined now (orphaned, disabled) shows its last audited refresh's results. `over_time`:
    each check's count per audited refresh of the kept history, oldest first; `expectations`: per
    expectation, its violating rows over that history by what happened to them."""
    audited = [r for r in records if r.data_tests]          # newest first
    over: dict[str, list[CheckPoint]] = {}
    expectations: dict[str, ExpectationCounts] = {}
    for record in reversed(audited):
        for test in record.data_tests:
            over.setdefault(test["name"], []).append(CheckPoint(record.refresh_end_time, test.get("status"),
                                                                test.get("failures"), test.get("action")))
            if test.get("kind") == "expectation":
                counts = expectations.setdefault(test["name"], ExpectationCounts(0, 0, 0, 0))
                counts.refreshes += 1
                counted = _COUNTED.get(test.get("action"))
                if counted and test.get("status") in ("fail", "warn"):
                    setattr(counts, counted, getattr(counts, counted) + int(test.get("failures") or 0))
    if checks is None:
        newest = audited[0] if audited else None
        checks = [{**t, "at": newest.refresh_end_time, "by": f"refresh {newest.refresh_action}"}
                  for t in newest.data_tests] if newest else []
    last = [LastCheck(**{k: c.get(k) for k in _RESULT_KEYS}) for c in checks]
    return TableTestResults(last=last, last_at=max((c.at for c in last if c.at), default=None),
                            over_time=over, expectations=expectations)


def _compiled(checked: Checked, name: str) -> str | None:
    """The query as Spark runs it: every column bound to its input (laid out one clause per
    line), or the Spark SQL of the file where dt leaves binding to Spark (REFRESH USING)."""
    query = checked.qualified.get(name)
    if query is not None:
        return query.sql(dialect="spark", pretty=True)
    table = checked.project.tables.get(name) or checked.project.disabled.get(name)
    return table.spark_sql if table else None


def _state(status: TableStatus) -> str:
    """The graph's colour: ORPHANED, DISABLED, SUSPENDED (held back too), FAILED (the last
    refresh failed), else ACTIVE."""
    scheduled = status.scheduling_state
    if scheduled in (ORPHANED, DISABLED, scheduling.SUSPENDED):
        return scheduled
    if status.last_refresh_state in FAILURE_STATES:
        return FAILED
    return ACTIVE


def _source(checked: Checked, name: str, tables: dict[str, TableFacts]) -> SourceFacts:
    source = checked.project.sources[name]
    info = checked.snapshot.sources.get(name)
    return SourceFacts(
        name=name, kind="seed" if source.origin == "seed" else "source",
        path=source.path, file=_relative(checked.project.root, source.file), line=source.line,
        primary_key=list(source.primary_key), rely=source.rely, table=source.table,
        description=source.description,
        change_data_feed=info.change_data_feed if info else None,
        version=info.version if info else None, rows=info.rows if info else None,
        columns=[ColumnType(c.name, c.type) for c in checked.schemas.get(name, ())],
        downstream=[t for t in tables if name in _inputs(checked, t)],
    )


def _relative(root: Path, file: str | None) -> str | None:
    """A file of the project as its tables' files are named: relative to the project."""
    if not file:
        return file
    try:
        return Path(file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return file


def _overview(tables: dict[str, TableFacts], records: list[RefreshRecord], now: datetime) -> Overview:
    freshness = [Freshness(name=n, state=t.state, **vars(t.lag)) for n, t in tables.items()
                 if t.state not in (DISABLED, ORPHANED)]
    # behind first, the furthest behind (as a share of the target) at the top
    freshness.sort(key=lambda f: (not f.behind, -(f.current_seconds or 0) / (f.target_seconds or float("inf")),
                                  f.name))
    day_ago = now - timedelta(days=1)
    failures = [_history_row(r) for r in records   # newest first, as read
                if r.failed and (parse_ts(r.refresh_end_time) or now) >= day_ago]
    modes = Counter(t.status.refresh_mode or "NOT CREATED" for t in tables.values()
                    if t.state not in (DISABLED, ORPHANED))
    return Overview(freshness=freshness, failures_last_day=failures, refresh_mode_mix=dict(sorted(modes.items())),
                    refresh_time_per_day=_per_day(records, now))


def _per_day(records: list[RefreshRecord], now: datetime) -> list[DayTotals]:
    """Total refresh time (seconds between start and end), refreshes and failures per UTC day,
    for each of the last PER_DAY_DAYS days, oldest first."""
    today = now.date()
    days = {str(today - timedelta(days=k)): DayTotals(str(today - timedelta(days=k)), 0, 0.0, 0)
            for k in range(PER_DAY_DAYS - 1, -1, -1)}
    for r in records:
        start, end = parse_ts(r.refresh_start_time), parse_ts(r.refresh_end_time)
        if start is None or str(start.date()) not in days:
            continue
        day = days[str(start.date())]
        day.refreshes += 1
        day.seconds += max(0.0, (end - start).total_seconds()) if end else 0.0
        day.failed += r.failed
    for day in days.values():
        day.seconds = round(day.seconds, 3)
    return list(days.values())
