"""What each page shows, taken from the project.json document (dtcli/artifacts/manifest.py):
plain values for the templates (which escape them) and SVG charts (which escape their own text)."""

from __future__ import annotations

import json
from datetime import datetime

from dtcli.artifacts.manifest import Lag, Manifest, SourceFacts, TableFacts, TableTestResults
from dtcli.ui.explain_view import lineage_text
from dtcli.ui.site import charts, highlight
from dtcli.ui.site.lineage_chart import column_lineage_svg
from dtcli.ui.site.text import duration, parse_time, seconds_between, timestamp

# What a page template (or the graph script) is given: names -> values it shows. Built here from the typed
# manifest, read only by the templates.
View = dict[str, object]

HISTORY_ROWS = 60   # refreshes listed in a page's table (the timeline shows every kept one)
MODE_LABELS = {"CUSTOM_INCREMENTAL": "CUSTOM", None: "NOT CREATED"}


def mode_label(mode: str | None) -> str:
    return MODE_LABELS.get(mode, mode or "")


def _lag_text(table: TableFacts) -> str:
    status = table.status
    if table.state in ("ORPHANED", "DISABLED"):
        return table.state.lower()
    if status.target_lag is None:
        return "on demand"
    if status.target_lag == "downstream" and status.effective_lag_seconds:
        return f"downstream ({duration(status.effective_lag_seconds)})"
    return str(status.target_lag)


def _mode(table: TableFacts) -> str | None:
    """The resolved refresh mode: explain's, or the last refresh's for a DT explain does not cover."""
    return (table.explain.refresh_mode if table.explain else None) or table.status.refresh_mode


def graph_data(doc: Manifest, pages: dict[str, str]) -> View:
    """Nodes and edges for the lineage graph the page lays out (site.js, with dagre)."""
    nodes = []
    for name, source in doc.sources.items():
        cdf = source.change_data_feed
        nodes.append({"id": name, "kind": source.kind, "state": "SOURCE", "frozen": False, "tags": [],
                      "href": pages[name],
                      "sub": source.kind + ("" if cdf is None else (" · CDF on" if cdf else " · CDF off"))})
    for name, table in doc.dynamic_tables.items():
        mode = _mode(table)
        nodes.append({"id": name, "kind": "dynamic_table", "state": table.state, "mode": mode,
                      "frozen": table.frozen, "tags": table.status.tags or [],
                      "href": pages[name], "sub": f"{mode_label(mode)} · {_lag_text(table)}"})
    return {"nodes": nodes, "edges": doc.edges}


def index_view(doc: Manifest) -> View:
    overview = doc.overview
    tables = doc.dynamic_tables
    freshness = [{**vars(f), "lag_text": duration(f.current_seconds) if f.current_seconds is not None
                  else "not created", "target_text": _lag_text(tables[f.name]),
                  "peak_text": duration(f.peak_seconds),
                  "mode": mode_label(tables[f.name].status.refresh_mode),
                  "last": tables[f.name].status.last_refresh_action}
                 for f in overview.freshness]
    failures = [{**vars(r), "when": timestamp(r.refresh_end_time),
                 "took": duration(seconds_between(r.refresh_start_time, r.refresh_end_time))}
                for r in overview.failures_last_day]
    mix = overview.refresh_mode_mix
    total = sum(mix.values()) or 1
    per_day = overview.refresh_time_per_day
    day_chart = charts.bars((d.day[5:], d.seconds, f"{d.refreshes} runs"
                             + (f"\n{d.failed} failed" if d.failed else "")) for d in per_day)
    others = [{"name": n, "state": t.state, "reason": t.status.scheduling_state_reason}
              for n, t in tables.items() if t.state in ("ORPHANED", "DISABLED")]
    return {"freshness": freshness, "behind": sum(f["behind"] for f in freshness), "failures": failures,
            "mode_mix": [{"mode": mode_label(None if m == "NOT CREATED" else m), "count": c,
                          "share": round(100 * c / total)} for m, c in mix.items()],
            "day_chart": day_chart, "per_day": per_day, "others": others,
            "sources": list(doc.sources.values()), "dynamic_table_count": len(tables)}


def table_view(doc: Manifest, table: TableFacts, now: datetime,
               pages: dict[str, str] | None = None) -> View:
    explained = table.explain
    lineage = explained.column_lineage if explained else None
    status = table.status
    rows = table.refresh_history
    stamp = parse_time(table.lag.data_timestamp)
    scale = charts.TimeScale(rows, now, stamp)
    upstream = [i for i, t in doc.edges if t == table.name]
    downstream = [t for i, t in doc.edges if i == table.name]
    listed = [{**vars(r), "start": timestamp(r.refresh_start_time), "lane": charts.lane(r),
               "took": duration(seconds_between(r.refresh_start_time, r.refresh_end_time))}
              for r in rows[:HISTORY_ROWS]]
    return {
        "t": table, "status": status, "x": explained,
        "mode": _mode(table),
        "mode_label": mode_label(_mode(table)),
        "columns": (explained.columns if explained else None) or status.columns or [],
        "config_rows": _config_rows(table),
        "state_rows": _state_rows(table),
        "upstream": upstream, "downstream": downstream,
        "sql_html": highlight.sql(table.sql, jinja=True),
        "compiled_html": highlight.sql(table.compiled_sql),
        "timeline": charts.refresh_timeline(rows, scale),
        "lag_chart": charts.lag_chart(rows, scale, now, table.lag.target_seconds, stamp),
        "lineage_svg": column_lineage_svg(table.name, lineage, pages or {}),
        "lineage_rows": [{"name": c.name, "made_from": lineage_text(c.inputs, "DIRECT"),
                          "depends_on": lineage_text(c.inputs, "INDIRECT")}
                         for c in (lineage.columns if lineage else [])],
        "lineage_every_row": lineage_text(lineage.dataset, "INDIRECT") if lineage else "",
        "history": listed, "history_total": len(rows),
        **_tests_view(table.data_tests),
        "lag_text": duration(table.lag.current_seconds) if table.lag.current_seconds is not None else "",
    }


def _tests_view(tests: TableTestResults) -> View:
    """Each check's last result (when, and what ran it) and count per refresh; per expectation,
    its rows dropped, warned of and failed on over the kept history."""
    checks = [{**vars(c), "when": timestamp(c.at), "counts": tests.over_time.get(c.name, [])}
              for c in tests.last]
    actions = {c.name: c.action for c in tests.last if c.kind == "expectation"}
    expectations = [{"name": n, "action": actions.get(n), **vars(counts)}
                    for n, counts in tests.expectations.items()]
    return {"checks": checks, "expectations": expectations}


def _value(value: object) -> str:
    if value is None or value == [] or value == {}:
        return ""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str)
    return str(value)


def _config_rows(table: TableFacts) -> list[tuple[str, str]]:
    """Config as set, with the lag and mode as resolved."""
    x, config, status = table.explain, table.config, table.status
    rows = [("target lag", _lag_text(table)),
            ("effective lag", duration(x.effective_lag if x else None)),
            ("refresh period", duration(x.period_seconds if x else None)),
            ("refresh mode", f"{config.get('refresh_mode', '')} → {x.refresh_mode if x else ''}".strip(" →")),
            ("scheduler", (x.scheduler if x else None) or status.scheduler),
            ("frozen_where", config.get("frozen_where")),
            ("backfill", config.get("backfill")),
            ("cluster_by", config.get("cluster_by")), ("partition_by", config.get("partition_by")),
            ("tags", status.tags), ("comment", status.comment),
            ("initialize", config.get("initialize")), ("deletion_vectors", config.get("deletion_vectors")),
            ("constraints", config.get("constraints")), ("start_at", config.get("start_at"))]
    frozen = x.frozen if x else None
    if frozen and frozen.frozen_rows is not None:
        rows.append(("frozen / active rows", f"{frozen.frozen_rows} / {frozen.active_rows} "
                                             f"(as of {timestamp(frozen.as_of)})"))
    return [(k, _value(v)) for k, v in rows if _value(v)]


def _state_rows(table: TableFacts) -> list[tuple[str, str]]:
    status = table.status
    rows = [("state", table.state), ("scheduling", status.scheduling_state),
            ("why", status.scheduling_state_reason),
            ("data timestamp", timestamp(status.data_timestamp)),
            ("lag now", duration(table.lag.current_seconds)),
            ("peak lag, last hour", _peak_text(table.lag)),
            ("refresh time", _refresh_time_text(table.lag)),
            ("next due", timestamp(status.next_due)),
            ("last refresh", " ".join(filter(None, (status.last_refresh_action, status.last_refresh_state)))),
            ("last suspended", timestamp(status.last_suspended_on)),
            ("rows", status.rows), ("bytes", status.bytes),
            ("Delta version", status.version), ("created", timestamp(status.created_on)),
            ("path", status.path), ("file", status.file)]
    return [(k, _value(v)) for k, v in rows if _value(v)]


def _peak_text(lag: Lag) -> str:
    if lag.peak_seconds is None:
        return ""
    verdict = {True: "within the target lag", False: "over the target lag"}.get(lag.target_met)
    return duration(lag.peak_seconds) + (f" ({verdict})" if verdict else "")


def _refresh_time_text(lag: Lag) -> str:
    """The measured time from snapshot to commit, and when it is too long for the target lag."""
    if lag.refresh_seconds is None:
        return ""
    text = f"{duration(lag.refresh_seconds)} from snapshot to commit"
    if lag.can_meet_target is False:
        text += " (too long to meet the target lag: lag reaches about twice this)"
    return text


def source_view(doc: Manifest, source: SourceFacts) -> View:
    rows = [("kind", source.kind), ("path", source.path),
            ("declared in", f"{source.file}:{source.line}" if source.file else ""),
            ("primary key", source.primary_key), ("rely", "yes" if source.rely else ""),
            ("change data feed", {True: "on", False: "off"}.get(source.change_data_feed, "")),
            ("Delta version", source.version), ("rows", source.rows)]
    return {"s": source, "rows": [(k, _value(v)) for k, v in rows if _value(v)],
            "downstream": source.downstream}
