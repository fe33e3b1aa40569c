"""Which internal tables a DT keeps, and what each holds (pure: from the checked project).

An internal table is kept where maintaining a query is cheap only with an intermediate result
at hand (state/internal.py says where they live and how they commit): the rows under an
incremental top-N whose inner query is more than a filter of one input (sql/rules/top_n.py), and
the running totals of an aggregate of COUNT / SUM / AVG, the DT's own (sql/rules/aggregate_totals.py)
or a subquery's (sql/rules/kept_aggregates.py); table config `aggregate_totals`, on by default,
keeps both. A DT that refreshes FULL keeps none.
"""

from __future__ import annotations

from dtcli.model import InternalTable, KeptAggregate, TopNSpec, TotalsSpec
from dtcli.planning.checked_project import Checked
from dtcli.sql.rules import aggregate_totals, kept_aggregates, top_n
from dtcli.state import internal

TOP_N_ROWS = "top_n_rows"      # the rows of the query under a top-N, with its hidden sort columns
AGGREGATE_TOTALS = "aggregate_totals"   # per group: COUNT(*), and COUNT and SUM of each argument


def top_n_spec(checked: Checked, name: str) -> TopNSpec | None:
    """How an incremental top-N DT is refreshed (None: it is no top-N, or it refreshes FULL)."""
    if not checked.modes[name].incremental or not checked.qualified.bound(name):
        return None
    split = top_n.split(checked.qualified[name])
    if split is None:
        return None
    rows = InternalTable(TOP_N_ROWS, internal.path(checked.project.warehouse, name, TOP_N_ROWS),
                         split.inner.sql(dialect="spark"))
    return split.to_spec(rows)


def _keeps_totals(checked: Checked, name: str) -> bool:
    """Whether the DT may keep running totals: refreshed incrementally, its query bound, no
    frozen region, not created by a backfill copy (which leaves no totals to start from), and
    config `aggregate_totals` not false."""
    config = checked.project.tables[name].config
    return (checked.modes[name].incremental and checked.qualified.bound(name) and config.aggregate_totals
            and not config.frozen_where and config.backfill is None)


def kept_specs(checked: Checked, name: str) -> list[KeptAggregate]:
    """The aggregates inside the DT's query kept as running totals ([]: none)."""
    if not _keeps_totals(checked, name):
        return []
    warehouse = checked.project.warehouse
    return [KeptAggregate(k.name, k.block.sql(dialect="spark"),
                          InternalTable(k.role, internal.path(warehouse, name, k.role),
                                        k.totals.sql(dialect="spark"), running_totals=True))
            for k in kept_aggregates.find(checked.qualified[name], declared_keys(checked.project))]


def recomputed_by_key(checked: Checked, name: str) -> list[kept_aggregates.ByKey]:
    """The aggregates inside the DT's query that could be kept but are recomputed by key."""
    if not _keeps_totals(checked, name):
        return []
    return kept_aggregates.by_key(checked.qualified[name], declared_keys(checked.project))


def declared_keys(project) -> dict[str, tuple[str, ...]]:
    """The primary key declared for each input by its name in lower case: a source's
    (`primary_key`) or a DT's `primary_key` constraint, trusted (`rely`) or not: here it only
    says how the rows group, which decides what is kept, not what is right."""
    keys = {name.lower(): tuple(s.primary_key) for name, s in project.sources.items() if s.primary_key}
    for name, table in project.tables.items():
        for constraint in table.config.constraints:
            if constraint["kind"] == "primary_key":
                keys[name.lower()] = tuple(constraint["columns"])
    return keys


def totals_spec(checked: Checked, name: str) -> TotalsSpec | None:
    """How an incremental aggregate DT is refreshed over running totals (None: it is no such
    aggregate, refreshes FULL, has a frozen region, is created by a backfill copy, which leaves
    no totals to start from, or its config says `aggregate_totals: false`)."""
    if not _keeps_totals(checked, name):
        return None
    query = checked.qualified[name]
    split = aggregate_totals.split(query)
    if split is None:
        return None
    state = InternalTable(AGGREGATE_TOTALS, internal.path(checked.project.warehouse, name, AGGREGATE_TOTALS),
                          split.totals.sql(dialect="spark"), running_totals=True)
    return TotalsSpec(query.sql(dialect="spark"), state)


def tables(checked: Checked, name: str) -> list[InternalTable]:
    """The internal tables the DT keeps, as its refreshes maintain them."""
    kept = [k.state for k in kept_specs(checked, name)]
    spec = top_n_spec(checked, name)
    if spec is not None and spec.state is not None:
        return [spec.state, *kept]
    totals = totals_spec(checked, name)
    return ([totals.state] if totals is not None else []) + kept


HOLDS = {TOP_N_ROWS: "the rows of the query under its ORDER BY … LIMIT (its sort keys too): the top "
                     "rows are recomputed from them when a change removes one",
         AGGREGATE_TOTALS: "per group of its aggregate: the keys, COUNT(*), and the COUNT and SUM of "
                           "each aggregated expression, which a change adjusts by its own rows; the "
                           "table's rows are computed from the groups that changed"}
KEPT_HOLDS = ("per group of an aggregate inside the query (a subquery's): its keys, COUNT(*), and the "
              "COUNT and SUM of each aggregated expression, adjusted by the change's own rows; the "
              "table's refresh reads the groups that moved instead of recomputing them")


def holds(role: str) -> str:
    return KEPT_HOLDS if role.startswith(kept_aggregates.ROLE) else HOLDS.get(role, role)


def listed(checked: Checked, name: str) -> list[dict]:
    """What `dt explain` (and `dt show dynamic tables --internal`) say of a DT's internal tables:
    each one its refreshes maintain, as its log has it (no version yet: not created), and any
    left on disk by an earlier definition (removed at the DT's next recompute, or by `dt drop`)."""
    warehouse = checked.project.warehouse
    kept = {t.role: t for t in tables(checked, name)}
    out = []
    for role in sorted(set(kept) | set(internal.existing(warehouse, name))):
        where = kept[role].path if role in kept else internal.path(warehouse, name, role)
        out.append({**internal.state_of(name, role, where).to_dict(), "maintained": role in kept,
                    "holds": holds(role) if role in kept
                    else "(an earlier definition's: no longer maintained)"})
    return out
