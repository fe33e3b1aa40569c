"""`dt explain NAME`: how a DT refreshes and why, before anything runs (no JVM)."""

from __future__ import annotations

from typing import Any

from dtcli.api import validate
from dtcli.planning.lag import parse_target_lag
from dtcli.model import Project
from dtcli.planning.refresh_mode import analysis_sql, enable_cdf_sql
from dtcli.planning.schedule import period_seconds
from dtcli.planning.snapshot import take_snapshot
from dtcli.sql.analysis import analyze_query
from dtcli.state.delta_log import table_info


def explain(project: Project, name: str) -> dict[str, Any]:
    key = project.table_key(name)
    snapshot = take_snapshot(project)
    checked = validate(project, snapshot)
    table = project.tables[key]
    mode = checked.modes[key]
    analysis = analyze_query(analysis_sql(project, table))
    warnings = list(checked.warnings.get(key, []))
    inputs = []
    for inp in table.inputs:
        path = project.input_path(inp)
        if inp in project.sources:
            info = snapshot.sources[inp]
            cdf, version = info.change_data_feed, info.version
            if not cdf:
                warnings.append(f"source {inp} has no change data feed, so {key} refreshes FULL; "
                                f"enable it with: {enable_cdf_sql(path)}")
        else:
            info = table_info(path, with_stats=False)
            cdf, version = True, (info.version if info else None)  # dt writes DTs with the feed on
        inputs.append({"name": inp, "kind": project.input_kind(inp), "path": path,
                       "change_data_feed": cdf, "version": version})
    for inp in table.inputs:
        up = checked.modes.get(inp)
        if up is not None and up.mode == "FULL" and mode.mode == "FULL" and analysis.incremental:
            warnings.append(f"upstream dynamic table {inp} refreshes FULL, so {key} cannot refresh "
                            "incrementally; make the upstream incremental to fix it")
    lag = parse_target_lag(table.target_lag)
    effective = checked.effective_lags.get(key)
    graph = checked.graph
    return {
        "name": key, "file": table.file,
        "refresh_mode": mode.mode, "refresh_mode_reason": mode.reason,
        "configured_refresh_mode": table.refresh_mode,
        "operators": [op for op in analysis.to_dict()["operators"]],
        "inputs": inputs,
        "target_lag": str(lag), "effective_lag": effective,
        "period_seconds": period_seconds(effective) if effective else None,
        "frozen_where": table.config.get("frozen_where"),
        "upstream": graph.upstream[key], "downstream": sorted(graph.downstream[key]),
        "depth": graph.depth(key),
        "warnings": warnings,
    }
