"""Resolving each DT's refresh mode from `refresh_mode` and what its query allows.

`auto` (and `adaptive`) resolve to ADAPTIVE when every construct and input allows an incremental
refresh — each refresh then picks INCREMENTAL or FULL by expected cost — and `auto` to FULL with a
reason naming the construct otherwise; `incremental` (or `adaptive`) on a query that cannot be
refreshed incrementally is a validation error that says why; `full` is FULL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dtcli.errors import ValidationError
from dtcli.model import ADAPTIVE, CUSTOM_INCREMENTAL, FULL, INCREMENTAL, Column, Project
from dtcli.planning.graph import Graph
from dtcli.sql.analysis import QueryAnalysis
from dtcli.sql.incremental_rewrite import unsupported_reason
from dtcli.sql.rules import top_n
from dtcli.sql.types import map_reason


@dataclass(frozen=True)
class ResolvedMode:
    mode: str                 # ADAPTIVE | INCREMENTAL | FULL
    reason: str | None = None
    # the change compiler's refusal of a query every operator of which the analyzer accepts (a
    # shape, not one construct: two outer joins in one SELECT...): explain lists it as a row
    shape_reason: str | None = None

    @property
    def incremental(self) -> bool:
        """A refresh of this DT may apply the change instead of recomputing."""
        return self.mode in (INCREMENTAL, ADAPTIVE, CUSTOM_INCREMENTAL)


def enable_cdf_sql(path: str) -> str:
    return f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"


def resolve_modes(project: Project, graph: Graph, source_cdf: dict[str, bool],
                  analysed: dict[str, QueryAnalysis], qualified: dict[str, Any],
                  compiler_reason: Callable[[str], str | None] | None = None,
                  schemas: dict[str, tuple[Column, ...]] | None = None) -> dict[str, ResolvedMode]:
    """Resolve in DAG order: a DT downstream of a FULL one must refresh FULL too. `qualified`
    holds each DT's query with its columns bound (None where sqlglot could not bind them).
    `compiler_reason(name)` (the check cache's) stands for the change compiler's verdict;
    `schemas`: each DT's columns as far as they are known (a MAP among them keeps it FULL)."""
    if compiler_reason is None:
        def compiler_reason(name: str) -> str | None:
            return change_compiler_reason(project, name, qualified.get(name))
    modes: dict[str, ResolvedMode] = {}
    for name in graph.order:
        table = project.tables[name]
        if table.kind == "custom":     # its own statement applies the changes (checked in custom.py)
            modes[name] = ResolvedMode(CUSTOM_INCREMENTAL, "REFRESH USING: the table's statement applies "
                                                           "the changes of its CHANGES() inputs")
            continue
        typed = _map_column((schemas or {}).get(name, ()))
        reason = _blocker(project, name, analysed[name], compiler_reason, source_cdf, modes) \
            or _frozen_top_n(table, qualified) or typed
        if table.refresh_mode == "full":
            modes[name] = ResolvedMode(FULL, "refresh_mode is full")
        elif reason is None:
            modes[name] = ResolvedMode(INCREMENTAL if table.refresh_mode == "incremental" else ADAPTIVE)
        elif table.refresh_mode in ("incremental", "adaptive"):
            origin = table.config_origin.get("refresh_mode")
            raise ValidationError(f"refresh_mode is {table.refresh_mode} but {reason}",
                                  file=origin.file if origin and origin.file else table.file,
                                  line=origin.line if origin else None,
                                  hint="use refresh_mode: auto (or full), or rewrite that construct")
        else:
            # a whole-query row in explain: no one construct of it is the cause
            shape = reason if analysed[name].incremental and reason in (compiler_reason(name), typed) else None
            modes[name] = ResolvedMode(FULL, reason, shape)
    return modes


def change_compiler_reason(project: Project, name: str, qualified: Any) -> str | None:
    """The change compiler's verdict on the DT's query; for a top-N (sql/rules/top_n.py), on the
    query under it, which is what the compiler compiles."""
    table = project.tables[name]
    query = top_n.compiled(qualified) if qualified is not None else table.spark_sql
    return unsupported_reason(query, list(table.inputs))


def _map_column(columns: tuple[Column, ...]) -> str | None:
    """The engine compares the DT's rows to apply a change: a column without equality forbids it.
    (A type sqlglot could not infer is left to the engine, which refreshes FULL with this reason.)"""
    return next((r for r in (map_reason(c.name, c.type) for c in columns) if r), None)


def _frozen_top_n(table, qualified: dict[str, Any]) -> str | None:
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
