"""Resolving each DT's refresh mode, in DAG order: each kind of table gives its own
(planning/kinds): a query table's from `refresh_mode` and what its query allows
(planning/query_mode.py), a custom table's is CUSTOM_INCREMENTAL."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp

from dtcli.model import Column, Project
from dtcli.planning.graph import Graph
from dtcli.planning.kinds.registry import kind_of
from dtcli.planning.query_mode import change_compiler_reason
from dtcli.planning.resolved_mode import ModeScope, ResolvedMode
from dtcli.sql.analysis import QueryAnalysis
from dtcli.state.delta_log import enable_cdf_sql

__all__ = ["ResolvedMode", "change_compiler_reason", "enable_cdf_sql", "resolve_modes"]


def resolve_modes(project: Project, graph: Graph, source_cdf: dict[str, bool],
                  analysed: dict[str, QueryAnalysis], qualified: Mapping[str, exp.Expression | None],
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
    scope = ModeScope(project, source_cdf, analysed, qualified, compiler_reason, schemas or {}, modes)
    for name in graph.order:
        table = project.tables[name]
        modes[name] = kind_of(table).mode(scope, table)
    return modes
