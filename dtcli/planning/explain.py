"""`dt explain NAME`: how a DT refreshes and why, before anything runs (no JVM)."""

from __future__ import annotations

from dtcli.artifacts.explain import (
    SCHEMA_VERSION,
    AdaptiveChoice,
    ColumnLineage,
    ColumnType,
    DataTestPlan,
    ExplainReport,
    Frozen,
    IgnoredProperty,
    Input,
    InternalTable,
    LineageColumn,
    LineageInput,
    LineageTransformation,
    Operator,
    RuleRewrite,
    SortOrder,
    TopN,
)
from dtcli.config_keys import listed
from dtcli.model import ADAPTIVE, Column, RefreshRecord
from dtcli.planning import internal, refresh_times, scheduler
from dtcli.planning.checked_project import Checked
from dtcli.planning.column_lineage import column_lineage
from dtcli.planning.kinds.registry import kind_of
from dtcli.planning.lag import parse_target_lag
from dtcli.planning.on_demand import is_on_demand, scheduler_value


def explain(checked: Checked, name: str, history: list[RefreshRecord] = ()) -> ExplainReport:
    """`history`: the refresh history, for an ADAPTIVE DT's current estimate."""
    project, snapshot, graph = checked.project, checked.snapshot, checked.graph
    key = project.table_key(name)
    table = project.tables[key]
    kind = kind_of(table)
    mode = checked.modes[key]
    analysis = checked.analyses[key]
    warnings = list(checked.warnings.get(key, []))
    inputs = []
    for inp in table.inputs:
        path = project.input_path(inp)
        if inp in project.sources:
            info = snapshot.sources[inp]
            cdf, version = info.change_data_feed, info.version
        else:
            info = snapshot.tables.get(inp)
            cdf, version = True, (info.version if info else None)  # dt writes DTs with the feed on
        inputs.append(Input(name=inp, kind=project.input_kind(inp), path=path, change_data_feed=cdf,
                            version=version, columns=_columns(checked.schemas.get(inp, ()))))
    custom_section, more = kind.explain(checked, key)
    warnings += more
    lag = parse_target_lag(table.target_lag)
    effective = checked.effective_lags.get(key)
    timings = refresh_times.measured(history)
    measured = refresh_times.reaches(timings, graph.upstream, checked.effective_lags,
                                     checked.project.threads).get(key)
    behind = None if is_on_demand(table) else refresh_times.cannot_meet(key, effective, measured)
    if behind:
        warnings.append(behind)
    manual = is_on_demand(table)
    if manual:
        origin = table.config_origin.get("target_lag")
        if origin is not None and origin.file and not origin.file.endswith("dt_project.yml"):
            warnings.append(f"target_lag is ignored: {key} has scheduler: disable, so it is refreshed "
                            f"only on demand (dt refresh {key}); remove target_lag from {origin.file}")
    rewritten_sql, rewrites = _rewritten(checked, key)
    return ExplainReport(
        schema_version=SCHEMA_VERSION, name=key, file=table.file,
        qualified_name=project.qualified_name(key) if project.catalog else None,
        refresh_mode=mode.mode, refresh_mode_reason=mode.reason, configured_refresh_mode=table.refresh_mode,
        columns=_columns(checked.schemas.get(key, ())),
        operators=[Operator(o.operator, o.strategy, list(o.considerations), o.line, o.incremental)
                   for o in analysis.operators] + _shape_row(mode) + _totals_row(checked, key)
                   + _kept_rows(checked, key),
        rewritten_sql=rewritten_sql, rewrites=rewrites,
        inputs=inputs,
        column_lineage=_column_lineage(checked, key),
        target_lag=None if manual else str(lag), effective_lag=effective,
        scheduler=scheduler_value(table),
        period_seconds=scheduler.periods(checked, timings).get(key) if effective else None,
        refresh_seconds=None if measured is None else round(measured.to_commit, 1),
        adaptive=_adaptive(checked, key, history) if mode.mode == ADAPTIVE else None,
        custom=custom_section,
        top_n=_top_n(checked, key),
        # intermediate results the DT keeps under <warehouse>/_dt/internal/ (planning/internal.py)
        internal_tables=[InternalTable(**t) for t in kind.internal_tables(checked, key)],
        frozen_where=table.config.frozen_where,
        frozen=_frozen(checked, key),
        cluster_by=listed(table.config.cluster_by), partition_by=listed(table.config.partition_by),
        comment=table.config.comment, tags=list(table.tags),
        upstream=list(graph.upstream[key]), downstream=sorted(graph.downstream[key]),
        depth=graph.depth(key),
        # CREATE DYNAMIC TABLE properties with no meaning in dt (WAREHOUSE, retention, tags, ...)
        ignored_properties=[IgnoredProperty(p["property"], p.get("value"), p.get("line")) for p in table.ignored],
        data_tests=_checks(checked, key),
        warnings=warnings,
    )


def _columns(columns: tuple[Column, ...] | list[Column]) -> list[ColumnType]:
    return [ColumnType(c.name, c.type) for c in columns]


_READS = {"row": "the rows each refresh writes", "key": "the keys each refresh writes, against the DT's rows of them",
          "link": "the values each refresh writes, against {to}", "query": "the whole DT, at every refresh"}


def _checks(checked: Checked, name: str) -> list[DataTestPlan]:
    """The DT's data tests and expectations, what a failure does and what a refresh reads to
    check them (docs/configuration.md, Data tests and expectations)."""
    from dtcli.planning.plan import audit_spec

    spec = audit_spec(checked, name)
    return [DataTestPlan(name=c.name, kind=c.kind, test=c.test, column=c.column or ", ".join(c.columns or []),
                         on_failure={"fail": "fails the refresh", "warn": "counted", "drop": "rows kept out"}[c.action],
                         reads=f"nothing: {c.proven}" if c.proven
                         else _READS[c.shape].format(to=(c.to or {}).get("name")))
            for c in (spec.checks if spec else [])]


def _rewritten(checked: Checked, name: str) -> tuple[str | None, list[RuleRewrite]]:
    """The query as dt refreshes it when its rules rewrote constructs of it (subqueries as
    joins...): the rewritten SQL, and what each rewrite replaced. The top_n rule's note is no
    rewrite (it splits the query: `top_n`)."""
    rewrites = [r for r in checked.qualified.rewrites(name) if r.rule != "top_n"]
    if not rewrites:
        return None, []
    return (checked.qualified[name].sql(dialect="spark", pretty=True),
            [RuleRewrite(r.rule, r.construct, r.rewritten_as, r.strategy) for r in rewrites])


def _top_n(checked: Checked, name: str) -> TopN | None:
    """How an incremental top-N is split: the query under it (whose change is computed), its
    sort keys (columns of that query), n and the offset, where its rows are kept."""
    spec = internal.top_n_spec(checked, name)
    if spec is None:
        return None
    from sqlglot import parse_one

    return TopN(inner_sql=parse_one(spec.inner_sql, read="spark").sql(dialect="spark", pretty=True),
                order=[SortOrder(k.position, k.desc, k.nulls_first) for k in spec.order],
                limit=spec.limit, offset=spec.offset, hidden_sort_columns=spec.hidden,
                recomputed_from=spec.state.path if spec.state else "its input")


def _column_lineage(checked: Checked, name: str) -> ColumnLineage | None:
    """Each output column's input columns and how it is made of them, and the columns every row
    depends on (filters, joins, grouping): what the DT's OpenLineage events carry."""
    lineage = column_lineage(checked, name)
    if lineage is None:
        return None

    def inputs(deps) -> list[LineageInput]:
        return [LineageInput(f.input, f.column, [LineageTransformation(t.type, t.subtype, t.masking)
                                                 for t in sorted(ts)])
                for f, ts in sorted(deps.items())]

    return ColumnLineage(columns=[LineageColumn(n, inputs(deps)) for n, deps in lineage.columns.items()],
                         dataset=inputs(lineage.dataset))


def _shape_row(mode) -> list[Operator]:
    """The query's shape as a row of its own when it, not one operator, makes the DT refresh FULL,
    so that the operator table and the refresh mode never disagree."""
    if not mode.shape_reason:
        return []
    return [Operator(operator="(the query as a whole)", strategy="recompute in full",
                     considerations=[mode.shape_reason], line=None, incremental=False)]


def _totals_row(checked: Checked, name: str) -> list[Operator]:
    """The outermost aggregate refreshed over running totals kept as an internal table
    (sql/rules/aggregate_totals.py): how, as a row of its own."""
    spec = internal.totals_spec(checked, name)
    if spec is None:
        return []
    return [Operator(operator="COUNT / SUM / AVG of the outermost SELECT",
                     strategy="instead of recomputing its groups: running totals per group (internal "
                              "table aggregate_totals) adjusted by the change's own rows, the table's rows "
                              "of the groups that moved computed from them (HAVING filtering them)",
                     considerations=["exact for integer and decimal arguments: with a FLOAT or DOUBLE "
                                     "argument the refresh recomputes the groups a change touches instead",
                                     "the totals are a second copy of the groups (one more commit per "
                                     "refresh); `aggregate_totals: false` keeps none"],
                     line=None, incremental=True)]


def _kept_rows(checked: Checked, name: str) -> list[Operator]:
    """Each aggregate inside the query kept as running totals (sql/rules/kept_aggregates.py): how
    the query reads it, as a row of its own."""
    from dtcli.sql.rules.kept_aggregates import label

    return [Operator(operator=f"aggregate kept as {k.state.role}: {label(k.block_sql)}",
                     strategy=f"instead of recomputing its groups at both versions: running totals per group "
                              f"(internal table {k.state.role}) adjusted by the change's own rows; the query reads "
                              f"it as an input ({k.name}), whose change is the groups that moved",
                     considerations=["exact for integer and decimal arguments: with a FLOAT or DOUBLE "
                                     "argument the refresh recomputes the groups a change touches instead",
                                     "the totals are a copy of the aggregate's groups (one more commit per "
                                     "refresh); `aggregate_totals: false` keeps none"],
                     line=None, incremental=True)
            for k in internal.kept_specs(checked, name)] + [
        Operator(operator=f"aggregate recomputed by key: {label(b.block.sql(dialect='spark'))}",
                 strategy=f"not kept as running totals: it groups by the leading columns of {b.table}'s primary "
                          f"key ({', '.join(b.key)}), so each group is a few rows, found by key; the groups a "
                          f"change touches are recomputed at both versions",
                 considerations=[f"a guess from the declared key: if {b.table} is not laid out by it, that "
                                 f"recompute reads it whole"],
                 line=None, incremental=True)
        for b in internal.recomputed_by_key(checked, name)]


def _frozen(checked: Checked, name: str) -> Frozen | None:
    """The frozen region: its predicate, the columns it reads, the RELY constraints it was checked
    against, and how many rows it froze at the last refresh (read without Spark)."""
    predicate = checked.frozen.get(name)
    table = checked.project.tables[name]
    rely = [c for c in table.config.constraints if c["rely"]]
    if predicate is None:
        return None
    out = Frozen(predicate=predicate.text, columns=list(predicate.columns),
                 rely_constraints=[{c["kind"]: c["columns"]} for c in rely],
                 rely_check=("every predicate column is in every RELY constraint" if rely
                             else "no RELY constraint: any of the table's columns may be used"),
                 frozen_rows=None, active_rows=None, as_of=None)
    info = checked.snapshot.tables.get(name)
    if info is not None and info.frontier is not None and info.frontier.frozen_where:
        from dtcli.errors import DtError
        from dtcli.state import rows

        try:
            counted = rows.counts(checked.project.table_path(name), list(info.columns),
                                  rows.frozen_as_refreshed(info, checked.project.dialect))
            out.frozen_rows, out.active_rows = counted["frozen_rows"], counted["active_rows"]
            out.as_of = info.frontier.data_timestamp
        except DtError:
            pass        # counted when the table can be read; explain still answers
    return out


def _adaptive(checked: Checked, name: str, history: list[RefreshRecord]) -> AdaptiveChoice:
    """What ADAPTIVE would choose if the DT refreshed now: the change since its frontier, the
    expected cost of each action, and the change size from which FULL wins."""
    from dtcli.planning import adaptive
    from dtcli.planning.plan import input_sizes

    info = checked.snapshot.tables.get(name)
    previous = info.frontier.source_versions if info and info.frontier else {}
    change, rows = input_sizes(checked, name, previous, {})
    guess = adaptive.estimate(change, rows, adaptive.learn([r for r in history if r.name == name]))
    out = AdaptiveChoice(action=guess.action, change_rows=guess.change_rows, input_rows=guess.input_rows,
                         expected_incremental_seconds=round(guess.incremental_seconds, 3),
                         expected_full_seconds=round(guess.full_seconds, 3), threshold_rows=guess.threshold_rows,
                         basis=guess.basis, reason=guess.reason)
    if info is None or info.frontier is None:   # the first refresh creates it, whatever the estimate
        out.action = "FULL"
        out.reason = "creation (the table does not exist yet); ADAPTIVE chooses from the next refresh on"
    return out
