"""Resolving each DT's refresh mode: INCREMENTAL when every construct and input allows it.

`refresh_mode: auto` falls back to FULL with a reason naming the construct; `incremental` on a
query that cannot be refreshed incrementally is a validation error that says why.
"""

from __future__ import annotations

from dtcli.errors import ValidationError
from dtcli.planning.graph import Graph
from dtcli.model import FULL, INCREMENTAL, Project, TableDef
from dtcli.planning.plan import ResolvedMode
from dtcli.sql.analysis import QueryAnalysis, analyze_query


def enable_cdf_sql(path: str) -> str:
    return f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"


SPARK_DIALECTS = ("spark", "spark2", "databricks", "hive")


def analysis_sql(project: Project, table: TableDef) -> str:
    """The text to analyse: the rendered file itself when it is Spark SQL, so reasons and
    operators name the lines of the user's file; transpiled SQL for other dialects."""
    return table.sql if project.dialect in SPARK_DIALECTS else table.spark_sql


def analyses(project: Project) -> dict[str, QueryAnalysis]:
    return {name: analyze_query(analysis_sql(project, t)) for name, t in project.tables.items()}


def resolve_modes(project: Project, graph: Graph, source_cdf: dict[str, bool],
                  analysed: dict[str, QueryAnalysis] | None = None) -> dict[str, ResolvedMode]:
    """Resolve in DAG order: a DT downstream of a FULL one must refresh FULL too."""
    analysed = analysed or analyses(project)
    modes: dict[str, ResolvedMode] = {}
    for name in graph.order:
        table = project.tables[name]
        reason = _blocker(project, name, analysed[name], source_cdf, modes)
        if table.refresh_mode == "full":
            modes[name] = ResolvedMode(FULL, "refresh_mode is full")
        elif reason is None:
            modes[name] = ResolvedMode(INCREMENTAL)
        elif table.refresh_mode == "incremental":
            origin = table.config_origin.get("refresh_mode")
            raise ValidationError(f"refresh_mode is incremental but {reason}",
                                  file=origin.file if origin and origin.file else table.file,
                                  line=origin.line if origin else None,
                                  hint="use refresh_mode: auto (or full), or rewrite that construct")
        else:
            modes[name] = ResolvedMode(FULL, reason)
    return modes


def _blocker(project: Project, name: str, analysis: QueryAnalysis, source_cdf: dict[str, bool],
             modes: dict[str, ResolvedMode]) -> str | None:
    if not analysis.incremental:
        return analysis.reason
    table = project.tables[name]
    from dtcli.sql.incremental_rewrite import unsupported_reason   # the engine's own limits
    reason = unsupported_reason(table.spark_sql, list(table.inputs))
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
