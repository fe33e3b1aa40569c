"""A query table's refresh mode, from `refresh_mode` and what its query allows.

`auto` (and `adaptive`) resolve to ADAPTIVE when every construct and input allows an incremental
refresh — each refresh then picks INCREMENTAL or FULL by expected cost — and `auto` to FULL with a
reason naming the construct otherwise; `incremental` (or `adaptive`) on a query that cannot be
refreshed incrementally is a validation error that says why; `full` is FULL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp

from dtcli.errors import ValidationError
from dtcli.model import ADAPTIVE, FULL, INCREMENTAL, Column, Project, TableDef
from dtcli.planning.resolved_mode import ModeScope, ResolvedMode
from dtcli.sql.analysis import QueryAnalysis
from dtcli.sql.incremental_rewrite import unsupported_reason
from dtcli.sql.rules import top_n
from dtcli.sql.types import map_reason
from dtcli.state.delta_log import enable_cdf_sql


def query_mode(scope: ModeScope, table: TableDef) -> ResolvedMode:
    """The DT's mode, its upstream's resolved (a DT downstream of a FULL one refreshes FULL too)."""
    name = table.name
    typed = _map_column(scope.schemas.get(name, ()))
    reason = _blocker(scope.project, name, scope.analysed[name], scope.compiler_reason, scope.source_cdf,
                      scope.modes) or _frozen_top_n(table, scope.qualified) or typed
    if table.refresh_mode == "full":
        return ResolvedMode(FULL, "refresh_mode is full")
    if reason is None:
        return ResolvedMode(INCREMENTAL if table.refresh_mode == "incremental" else ADAPTIVE)
    if table.refresh_mode in ("incremental", "adaptive"):
        origin = table.config_origin.get("refresh_mode")
        raise ValidationError(f"refresh_mode is {table.refresh_mode} but {reason}",
                              file=origin.file if origin and origin.file else table.file,
                              line=origin.line if origin else None,
                              hint="use refresh_mode: auto (or full), or rewrite that construct")
    # a whole-query row in explain: no one construct of it is the cause
    shape = reason if scope.analysed[name].incremental and reason in (scope.compiler_reason(name), typed) else None
    return ResolvedMode(FULL, reason, shape)


def change_compiler_reason(project: Project, name: str, qualified: exp.Expression | None) -> str | None:
    """The change compiler's verdict on the DT's query; for a top-N (sql/rules/top_n.py), on the
    query under it, which is what the compiler compiles."""
    table = project.tables[name]
    query = top_n.compiled(qualified) if qualified is not None else table.spark_sql
    return unsupported_reason(query, list(table.inputs))


def _map_column(columns: tuple[Column, ...]) -> str | None:
    """The engine compares the DT's rows to apply a change: a column without equality forbids it.
    (A type sqlglot could not infer is left to the engine, which refreshes FULL with this reason.)"""
    return next((r for r in (map_reason(c.name, c.type) for c in columns) if r), None)


def _frozen_top_n(table: TableDef, qualified: Mapping[str, exp.Expression | None]) -> str | None:
    """A top-N with a frozen region stays FULL: which rows are frozen would depend on which rows
    the top-N holds, which moves with every change (not cached: frozen_where is config)."""
    if not table.config.frozen_where or qualified.get(table.name) is None:
        return None
    spec = top_n.split(qualified[table.name])
    if spec is None:
        return None
    return (f"{spec.label()} with frozen_where is refreshed FULL: the rows a top-N holds move "
            "between the frozen and the active region as the result changes")


def _blocker(project: Project, name: str, analysis: QueryAnalysis,
             compiler_reason: Callable[[str], str | None],
             source_cdf: dict[str, bool], modes: dict[str, ResolvedMode]) -> str | None:
    if not analysis.incremental:
        return analysis.reason
    table = project.tables[name]
    # the engine's own limits: its compiler must turn the query into change queries
    reason = compiler_reason(name)
    if reason:
        return reason
    for inp in table.inputs:
        if inp in project.sources and not source_cdf.get(inp, False):
            return (f"source {inp} has no change data feed; enable it with "
                    f"{enable_cdf_sql(project.sources[inp].path)}")
        up = modes.get(inp)
        if up is not None and up.mode == FULL:
            return f"upstream dynamic table {inp} refreshes FULL, so this one must too"
    return None
