"""The planner: from project, graph and a pinned snapshot to a plan (pure data, no Spark).

For each selected DT (and every DT upstream of it, so a run reads one consistent snapshot;
an on-demand DT that is not selected is read as it is, see on_demand.py),
in DAG order, it decides the refresh action: FULL on creation, REINITIALIZE when the definition
changed, NO_DATA when no input moved since the DT's frontier, else INCREMENTAL or FULL by the
DT's resolved refresh mode.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from dtcli.config_keys import listed
from dtcli.data_tests import AuditSpec
from dtcli.model import (
    ADAPTIVE,
    CREATION,
    FULL,
    INCREMENTAL,
    MANUAL,
    NO_DATA,
    REINITIALIZE,
    Plan,
    RefreshRecord,
    RefreshStep,
    StepOptions,
)
from dtcli.model.plan import StepInput
from dtcli.plan_parts import Backfill, Estimate, LagTarget, Layout, Regions
from dtcli.planning import adaptive, catalog, completion, frozen, internal, on_demand, refresh_times, scheduler
from dtcli.planning.checked_project import Checked
from dtcli.planning.critical_path import critical_path_first
from dtcli.planning.data_tests import compile_checks
from dtcli.planning.kinds.registry import kind_of
from dtcli.planning.resolved_mode import ResolvedMode
from dtcli.sql.columns_read import columns_read
from dtcli.sql.output_names import needs_column_mapping
from dtcli.state.catalog import Event as CatalogEvent


def build_plan(checked: Checked, selected: set[str], trigger: str, *, full_refresh: bool = False,
               run_id: str | None = None, history: list[RefreshRecord] = (),
               catalog_events: Mapping[str, CatalogEvent] | None = None, spare: Sequence[str] = ()) -> Plan:
    """The run's plan, finished: each selected DT's step (and its upstream's) built whole, in
    the order that starts the longest measured chain first, with the metastore work and the
    sources to ask again. `history`: the refresh history, from which ADAPTIVE DTs learn what
    their refreshes cost, lags their completion targets and the order its measured times;
    `catalog_events`: what dt recorded of earlier metastore work (with `catalog:` only);
    `spare`: DTs planned too, as the plan's spares: each stands alone in the plan of every due DT
    (pass_budget.spares), so in this one too."""
    project, snapshot = checked.project, checked.snapshot
    steps = _steps(checked, selected | set(spare), trigger, full_refresh, history)
    work = {n: t.work for n, t in refresh_times.measured(history).items()}
    plan = Plan(run_id=run_id or uuid.uuid4().hex[:12], project=project.name,
                warehouse=project.warehouse, data_timestamp=snapshot.taken_at.isoformat(),
                source_versions=snapshot.source_versions, steps=critical_path_first(steps, work),
                threads=project.threads, spare=list(spare))
    registrations, unregistrations = [], []
    if project.catalog is not None:
        existing = {n for n, info in snapshot.tables.items() if info is not None}
        registrations, unregistrations = catalog.catalog_work(project, plan, existing, catalog_events or {})
    return replace(plan, registrations=registrations, unregistrations=unregistrations,
                   resolutions=catalog.rechecks(project, snapshot, plan))


def _steps(checked: Checked, selected: set[str], trigger: str, full_refresh: bool,
           history: list[RefreshRecord]) -> list[RefreshStep]:
    project, graph, snapshot = checked.project, checked.graph, checked.snapshot
    names = graph.ordered(on_demand.needed(project, graph, selected))
    stamps = scheduler.data_timestamps(snapshot, history)
    manual_only = on_demand.on_demand(project)
    refreshed: dict[str, tuple[str, int]] = {}   # DTs that commit in this plan: action, change rows
    steps: list[RefreshStep] = []
    for name in names:
        table = project.tables[name]
        kind = kind_of(table)
        info = snapshot.tables.get(name)
        frontier = info.frontier if info else None
        digest = checked.hashes[name]
        mode = checked.modes.get(name, ResolvedMode(FULL))
        inputs: list[StepInput] = []
        changed: list[str] = []
        previous_versions = frontier.source_versions if frontier else {}
        for inp in table.inputs:
            if inp in refreshed:
                read = None             # the version this run commits, known to the driver
            else:
                read = snapshot.sources[inp] if inp in project.sources else snapshot.tables.get(inp)
            version = read.version if read else None
            inputs.append(StepInput(inp, project.input_kind(inp), project.input_path(inp), version,
                                    read.table_id if read else None))
            if version is None or previous_versions.get(inp) != version:
                changed.append(inp)

        changed = kind.changed_inputs(table, changed)
        change_rows, input_rows = input_sizes(checked, name, previous_versions, refreshed)
        # an on-demand DT refreshes only because someone asked for it: MANUAL, as Snowflake records it
        step_trigger, reinit, why = (MANUAL if name in manual_only else trigger), None, None
        predicate = checked.frozen.get(name)
        regions = frozen.plan_refresh(predicate, frontier, snapshot.taken_at, project.dialect) \
            if frontier else frozen.initial(predicate, snapshot.taken_at)
        decided = decide_action(Situation(
            exists=info is not None, has_frontier=frontier is not None, custom=kind.keeps_history,
            manual=trigger == MANUAL,
            replaced=_replaced_source(project, snapshot, table.inputs, frontier) if frontier else None,
            definition_changed=frontier is not None and frontier.definition_hash != digest,
            keep_frozen=regions.keep_frozen, frozen_reinit=regions.reinit_reason,
            same_columns=partial(_same_columns, checked, name), full_refresh=full_refresh,
            changed=bool(changed), mode=mode,
            custom_action=partial(kind.own_action, checked, name, changed, full_refresh),
            adaptive_action=partial(_adaptive, change_rows, input_rows, history, name)))
        action, reinit, why = decided.action, decided.reinit, decided.why
        if decided.creation:
            step_trigger = CREATION
        if regions.keep_frozen and not decided.keep_frozen:
            regions = replace(regions, keep_frozen=False)
        if action != NO_DATA:
            refreshed[name] = (action, change_rows)
        steps.append(RefreshStep(
            name=name, path=project.table_path(name), action=action, trigger=step_trigger,
            sql=table.spark_sql, inputs=inputs, definition_hash=digest, refresh_mode=mode.mode,
            refresh_mode_reason=mode.reason, reinit_reason=reinit, previous=frontier,
            upstream=[u for u in graph.upstream[name] if u in names],
            options=_step_options(checked, name, info, regions, set(names),
                                  Estimate(action_reason=why, change_rows=change_rows, input_rows=input_rows),
                                  completion.target(checked.effective_lags.get(name), stamps.get(name)))))
    return steps


def _step_options(checked: Checked, name: str, info, regions, planned: set[str], estimate: Estimate,
                  lag: LagTarget) -> StepOptions:
    """What the engine needs of a DT's config and current table beyond its action (`info`: the
    table's state, None before it exists; `regions`: its frozen regions at this refresh;
    `planned`: the DTs of the plan)."""
    project, table = checked.project, checked.project.tables[name]
    kind = kind_of(table)
    config = table.config
    audit = audit_spec(checked, name)
    return StepOptions(
        previous_rows=info.rows if info else 0,
        source_ids=_source_ids(project, checked.snapshot, table.inputs),
        file=table.file,
        delta_sql=checked.delta_sql(name),
        read_columns=columns_read(checked.qualified[name], table.inputs)
        if checked.qualified.bound(name) else None,
        read_by_tables=bool(checked.graph.downstream.get(name)),
        columns=listed(config.columns),
        names=kind.given_names(checked, name),
        layout=_layout(checked, name, info),
        regions=Regions(where=regions.predicate,
                        active=regions.active if info is not None and regions.keep_frozen else None,
                        frozen=regions.frozen),
        backfill=Backfill(spec=config.backfill,
                          copy=checked.backfills[name].copy if name in checked.backfills else None),
        estimate=estimate,
        lag=lag,
        custom=kind.custom_spec(checked, name),
        audit=audit,
        after=_after(checked, name, audit, planned),
        top_n=internal.top_n_spec(checked, name),
        totals=internal.totals_spec(checked, name),
        kept=internal.kept_specs(checked, name) or None)


def _layout(checked: Checked, name: str, info) -> Layout:
    config = checked.project.tables[name].config
    return Layout(
        partition_by=listed(config.partition_by),
        cluster_by=listed(config.cluster_by),
        sort_by=kind_of(checked.project.tables[name]).write_order(checked, name),
        max_rows_per_file=config.max_rows_per_file,
        small_table_rows=config.small_table_rows,
        deletion_vectors=config.deletion_vectors,
        column_mapping=needs_column_mapping(c.name for c in checked.schemas.get(name, ())),
        comment=config.comment,
        comment_outdated=info is not None and (info.description or None) != (config.comment or None),
        deletion_vectors_outdated=info is not None and info.deletion_vectors_differ(config.deletion_vectors))


def _after(checked: Checked, name: str, spec: AuditSpec | None, planned: set[str]) -> list[str] | None:
    """A step whose checks read another DT of the plan (not one upstream or downstream of it)
    starts after that DT's refresh, so that it checks against what this run commits there."""
    if spec is None:
        return None
    graph = checked.graph
    read = [c.to["name"] for c in spec.checks if c.to] + [n for c in spec.checks for n in (c.reads or {})]
    after = [n for n in dict.fromkeys(read) if n in planned and n != name and n not in graph.upstream[name]
             and name not in graph.upstream_closure({n})]
    return after or None


def audit_spec(checked: Checked, name: str) -> AuditSpec | None:
    """The checks a refresh of the DT runs on what it is about to commit (None: it has none)."""
    checks = checked.data_tests.get(name)
    if not checks:
        return None
    return compile_checks(checked.project, name, checks, columns=[c.name for c in checked.schemas.get(name, ())],
                          query=checked.qualified.get(name) if checked.qualified.bound(name) else None,
                          frozen=name in checked.frozen)


def _same_columns(checked: Checked, name: str) -> bool:
    """Whether a redefined DT still has the columns its table has (then frozen rows can stay)."""
    info = checked.snapshot.tables.get(name)
    derived = checked.schemas.get(name, ())
    if info is None or not derived:
        return False
    def spelt(kind: str | None) -> str:
        return (kind or "").replace(" ", "").upper()
    return [(c.name.lower(), spelt(c.type)) for c in info.schema] == \
        [(c.name.lower(), spelt(c.type or t.type)) for c, t in zip(derived, info.schema)]


def input_sizes(checked: Checked, name: str, previous: dict[str, int],
           refreshed: dict[str, tuple[str, int]]) -> tuple[int, int]:
    """(changed input rows since the DT's frontier, input rows) from Delta logs. An input
    refreshed earlier in this plan changes by what it read (a recompute: all its rows, twice)."""
    snapshot = checked.snapshot
    change = rows = 0
    for inp in checked.project.tables[name].inputs:
        info = snapshot.sources.get(inp) or snapshot.tables.get(inp)
        size = (info.rows or 0) if info else 0
        rows += size
        if inp in refreshed:
            action, upstream_change = refreshed[inp]
            change += 2 * size if action in (FULL, REINITIALIZE) else upstream_change
        elif info is not None and previous.get(inp) is not None:
            change += snapshot.change_rows(inp, previous[inp], info.version)
        else:
            change += size
    return change, rows


def _source_ids(project, snapshot, inputs) -> dict[str, str] | None:
    """The Delta table id of each source the DT reads by table name, kept in its frontier."""
    ids = {i: snapshot.sources[i].table_id for i in inputs
           if i in project.sources and project.sources[i].table and i in snapshot.sources}
    return ids or None


def _replaced_source(project, snapshot, inputs, frontier) -> str | None:
    """Why a DT must be reinitialized because a source it reads by table name is another table
    now (dropped and created again, or the name given to another table): its Delta table id is
    not the one the DT last refreshed from."""
    before = frontier.source_ids or {}
    for name, table_id in (_source_ids(project, snapshot, inputs) or {}).items():
        if name in before and before[name] != table_id:
            source = project.sources[name]
            return (f"source {name} ({source.table}) is another table now: Delta table id {table_id} "
                    f"at {source.path}, was {before[name]}")
    return None


@dataclass(frozen=True)
class Situation:
    """What decides a DT's refresh action, gathered by build_plan (the callables are asked only
    when the decision reaches them: a custom table's statement, ADAPTIVE's estimate)."""

    exists: bool                    # the DT's table exists
    has_frontier: bool              # ... and carries dt's frontier
    custom: bool                    # its kind keeps its history: a custom table (REFRESH USING)
    manual: bool                    # `dt refresh`, not a scheduled run
    replaced: str | None            # why a source read by name is another table now
    definition_changed: bool
    keep_frozen: bool               # the frozen region's rows are to be kept
    frozen_reinit: str | None       # why the frozen region forces a REINITIALIZE
    same_columns: Callable[[], bool]
    full_refresh: bool              # --full-refresh
    changed: bool                   # an input it reads changed since its frontier
    mode: ResolvedMode
    custom_action: Callable[[], tuple[str, str | None]]
    adaptive_action: Callable[[], tuple[str, str | None]]


@dataclass(frozen=True)
class Decision:
    action: str
    reinit: str | None = None       # why a REINITIALIZE
    why: str | None = None          # the action's reason, as the history records it
    creation: bool = False          # the refresh creates the table (trigger CREATION)
    keep_frozen: bool = True        # False: the frozen rows are recomputed too


def decide_action(s: Situation) -> Decision:
    """The refresh action of one DT, in order of precedence: creation, a table dt cannot trust,
    a replaced source, a custom table's own rule, a changed definition, the frozen region, an
    asked-for full refresh, no change, ADAPTIVE's estimate, the resolved mode."""
    if not s.exists:
        # A `dt refresh` of a DT not created yet stays MANUAL: what the user asked for, and
        # (unlike scheduled creation) never counted toward auto-suspension.
        return Decision(FULL, why="the table is created", creation=not s.manual)
    if not s.has_frontier:
        why = ("the table has no dt frontier (its creation did not finish): it is created again" if s.custom
               else "the table has no dt frontier (created or rewritten outside dt)")
        return Decision(REINITIALIZE, why, why)
    if s.replaced:
        return Decision(REINITIALIZE, s.replaced, s.replaced)
    if s.custom:
        action, why = s.custom_action()
        return Decision(action, why=why)
    if s.definition_changed:
        why, keep = "the definition changed (query, columns or refresh mode)", s.keep_frozen
        if s.keep_frozen and not s.same_columns():
            why, keep = why + "; its columns changed, so the rows frozen_where froze are recomputed too", False
        elif s.keep_frozen:
            why += "; the active region is recomputed, frozen rows are kept"
        return Decision(REINITIALIZE, why, why, keep_frozen=keep)
    if s.frozen_reinit:
        return Decision(REINITIALIZE, s.frozen_reinit, s.frozen_reinit)
    if s.full_refresh:
        return Decision(FULL, why="a full refresh was asked for (--full-refresh)")
    if not s.changed:
        return Decision(NO_DATA)
    if s.mode.mode == ADAPTIVE:
        action, why = s.adaptive_action()
        return Decision(action, why=why)
    return Decision(INCREMENTAL if s.mode.incremental else FULL,
                    why=f"refresh_mode is {s.mode.mode}" + (f": {s.mode.reason}" if s.mode.reason else ""))


def _adaptive(change_rows: int, input_rows: int, history, name: str) -> tuple[str, str]:
    guess = adaptive.estimate(change_rows, input_rows, adaptive.learn([r for r in history if r.name == name]))
    return guess.action, guess.reason
