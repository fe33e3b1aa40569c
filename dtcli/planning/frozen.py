"""Frozen regions in planning: checking each DT's `frozen_where` and RELY constraints, and
deciding how a refresh treats the frozen region.

A refresh after the first touches only the active region. Its rows can be brought level with
the query by applying the change (INCREMENTAL) exactly when every row the previous refresh
froze is still frozen now; that is decided here, before Spark runs, by evaluating both
predicates at their data timestamps (`dtcli.sql.frozen_implies.implies`). When dt cannot show it, the
active region is recomputed (REINITIALIZE, rows the predicate freezes kept); when the predicate
was removed, everything is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from dtcli.errors import ValidationError, suggest
from dtcli.model import Column, Frontier, TableDef
from dtcli.sql.frozen import (
    FrozenPredicate,
    active_sql,
    at_time,
    check_predicate,
    frozen_sql,
    has_time,
    parse_predicate,
)
from dtcli.sql.frozen_implies import implies


def check_table(table: TableDef, columns: tuple[Column, ...], dialect: str) -> FrozenPredicate | None:
    """The DT's frozen predicate, checked against its columns and RELY constraints; also checks
    that every constraint names columns of the DT."""
    names = {c.name.lower() for c in columns}
    for constraint in table.config.constraints:
        for col in constraint["columns"]:
            if names and col.lower() not in names:
                origin = table.config_origin.get("constraints")
                raise ValidationError(f"constraint {constraint['kind']} names column {col}, which is not a "
                                      f"column of {table.name}", file=_file(table, "constraints"),
                                      line=origin.line if origin else None,
                                      hint=suggest(col.lower(), names) or f"columns: {', '.join(sorted(names))}")
    text = table.config.frozen_where
    if text is None:
        return None
    origin = table.config_origin.get("frozen_where")
    where = {"file": _file(table, "frozen_where"), "line": origin.line if origin else None}
    expr = parse_predicate(text, dialect, **where)
    return check_predicate(text, expr, table.name, columns, list(table.config.constraints), **where)


def _file(table: TableDef, key: str) -> str:
    origin = table.config_origin.get(key)
    return origin.file if origin and origin.file else table.file


@dataclass(frozen=True)
class FrozenPlan:
    """How one refresh treats the frozen region."""

    predicate: str | None       # the configured text, recorded in the frontier
    active: str | None          # Spark SQL of the active region at this refresh's data timestamp
    frozen: str | None          # Spark SQL of the frozen region at that moment
    reinit_reason: str | None   # set when the active region (or the table) must be recomputed
    keep_frozen: bool           # a recompute replaces the active region only


def plan_refresh(predicate: FrozenPredicate | None, frontier: Frontier | None, when: datetime,
                 dialect: str) -> FrozenPlan:
    """For a DT that exists (has a frontier): what its next refresh does with frozen rows."""
    new = at_time(predicate.expr, when) if predicate else None
    active = active_sql(new) if new is not None else None
    frozen = frozen_sql(new) if new is not None else None
    text = predicate.text if predicate else None
    before = frontier.frozen_where if frontier else None
    if before is None:              # nothing was frozen: any predicate only expands that
        return FrozenPlan(text, active, frozen, None, predicate is not None)
    if predicate is None:
        return FrozenPlan(None, None, None, "frozen_where was removed: every row is recomputed, "
                                            "the rows it froze included", False)
    old_when = datetime.fromisoformat(frontier.data_timestamp) if frontier.data_timestamp else when
    try:
        old = at_time(parse_predicate(before, dialect), old_when)
    except ValidationError:          # recorded by a project in another dialect: prove nothing
        old = None
    if old is None:
        return FrozenPlan(text, active, frozen, "the previous frozen_where cannot be read any more: "
                                                "the active region is recomputed", True)
    if implies(old, new):
        return FrozenPlan(text, active, frozen, None, True)
    if before == predicate.text:
        why = ("the frozen region of frozen_where shrinks as time passes (dt cannot show that every "
               "row it froze at the last refresh is still frozen), so the active region is recomputed"
               if has_time(predicate.expr) else None)
    else:
        why = ("frozen_where changed and dt cannot show that the new predicate freezes every row the "
               "old one did (it shrinks or reshapes the frozen region): the active region is recomputed, "
               "rows the new predicate freezes are kept")
    return FrozenPlan(text, active, frozen, why, True)


def initial(predicate: FrozenPredicate | None, when: datetime) -> FrozenPlan:
    """At creation the predicate is ignored (every row computed), but recorded; with a backfill
    it splits the copied rows from the computed ones."""
    if predicate is None:
        return FrozenPlan(None, None, None, None, False)
    new = at_time(predicate.expr, when)
    return FrozenPlan(predicate.text, active_sql(new), frozen_sql(new), None, False)
