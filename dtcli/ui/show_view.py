"""What `dt show dynamic tables`, `refresh-history` and `test-results` print in a terminal.

The JSON output keeps every field; the table shows what a person scans, short enough for the
terminal: freshness as "2 min ago", counts with separators, the last refresh in one word.
`--wide` shows every field as a column.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone

from dtcli.ui.fit import Col, Row

STATE_STYLE = {"SUCCEEDED": "green", "FAILED": "red", "UPSTREAM_FAILED": "red", "SKIPPED": "yellow",
               "SUSPENDED": "yellow", "DISABLED": "dim", "ORPHANED": "magenta"}


def _time(value: object) -> datetime | None:
    if not value:
        return None
    try:
        stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def span(seconds: float) -> str:
    """A duration as a person says it: 45 s, 12 min, 5 h, 3 d."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def ago(value: object, now: datetime) -> str:
    stamp = _time(value)
    if stamp is None:
        return "never"
    return f"{span((now - stamp).total_seconds())} ago" if stamp <= now else f"in {span((stamp - now).total_seconds())}"


def until(value: object, now: datetime) -> str:
    stamp = _time(value)
    if stamp is None:
        return "-"
    return "now" if stamp <= now else f"in {span((stamp - now).total_seconds())}"


def count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else ("" if value is None else str(value))


def _last(row: Row) -> str:
    action, state = row.get("last_refresh_action"), row.get("last_refresh_state")
    if not action:
        return "-"
    return action if state in (None, "SUCCEEDED") else f"{action} {state}"


def _last_style(row: Row) -> str:
    state = row.get("last_refresh_state") or ""
    return "" if state == "SUCCEEDED" else STATE_STYLE.get(state, "")


def seconds(value: float) -> str:
    """A lag to the second while it is short enough for seconds to matter: 85 s, 14 min."""
    return f"{value:.0f} s" if value < 600 else span(value)


def peak(row: Row) -> str:
    """The peak lag of the last hour, and "over" when it passed the target lag."""
    value = row.get("peak_lag_seconds")
    if value is None:
        return "-"
    return seconds(value) + (" over" if row.get("target_lag_met") is False else "")


def _peak_style(row: Row) -> str:
    return "red" if row.get("target_lag_met") is False else ""


def table_columns(now: datetime) -> list[Col]:
    return [
        Col("name", lambda r: r.get("qualified_name") or r["name"], priority=0),
        Col("state", lambda r: r.get("scheduling_state") or "", priority=1,
            style=lambda r: STATE_STYLE.get(r.get("scheduling_state") or "", "")),
        Col("mode", lambda r: r.get("refresh_mode") or "", priority=2),
        Col("lag", lambda r: r.get("target_lag") or "-", priority=4),
        Col("fresh", lambda r: ago(r.get("data_timestamp"), now), priority=3),
        Col("peak 1h", peak, priority=5, align="right", style=_peak_style),
        Col("rows", lambda r: count(r.get("rows")), priority=7, align="right"),
        Col("last refresh", _last, priority=6, style=_last_style),
        Col("next due", lambda r: until(r.get("next_due"), now), priority=8),
        Col("scheduler", lambda r: r.get("scheduler") or "", priority=9),
    ]


def history_columns(now: datetime) -> list[Col]:
    def took(row: Row) -> str:
        start, end = _time(row.get("refresh_start_time")), _time(row.get("refresh_end_time"))
        if not start or not end:
            return ""
        seconds = (end - start).total_seconds()
        return f"{seconds:.1f} s" if seconds < 60 else span(seconds)

    def changed(row: Row) -> str:
        stats = row.get("statistics") or {}
        if row.get("refresh_action") == "NO_DATA" or not stats:
            return ""
        return f"+{count(stats.get('num_inserted_rows', 0))} -{count(stats.get('num_deleted_rows', 0))}"

    return [
        Col("name", lambda r: r["name"], priority=0),
        Col("state", lambda r: r.get("state") or "", priority=1,
            style=lambda r: STATE_STYLE.get(r.get("state") or "", "")),
        Col("action", lambda r: r.get("refresh_action") or "", priority=2),
        Col("trigger", lambda r: r.get("refresh_trigger") or "", priority=7),
        Col("ended", lambda r: ago(r.get("refresh_end_time"), now), priority=3),
        Col("took", took, priority=6, align="right"),
        Col("rows +/-", changed, priority=5, align="right"),
        # why a refresh failed or reinitialized matters more than its figures: kept early, cut to fit
        Col("message", lambda r: r.get("state_message") or r.get("reinit_reason") or "", priority=4,
            flexible=True, min_width=12),
    ]


TEST_STYLE = {"pass": "green", "fail": "red", "error": "red", "warn": "yellow", "skipped": "dim"}


def test_result_columns(now: datetime) -> list[Col]:
    """`dt show test-results`: one line per test or expectation."""
    def found(row: Row) -> str:
        n = row.get("failures")
        if not n:
            return ""
        return f"{count(n)} kept out" if row.get("action") == "drop" else count(n)

    return [
        Col("table", lambda r: r["table"], priority=0),
        Col("test", lambda r: r["name"], priority=1),
        Col("kind", lambda r: r.get("test") or "", priority=6),
        Col("on fail", lambda r: r.get("action") or "", priority=7),
        Col("status", lambda r: (r.get("status") or "").upper() or "-", priority=2,
            style=lambda r: TEST_STYLE.get(r.get("status") or "", "dim")),
        Col("rows", found, priority=3, align="right"),
        Col("when", lambda r: ago(r.get("at"), now), priority=4),
        Col("by", lambda r: r.get("by") or "", priority=8),
        Col("message", lambda r: r.get("message") or "", priority=5, flexible=True, min_width=12),
    ]


def _field(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return ", ".join(value)
        return json.dumps(value, default=str, separators=(",", ":"))
    return str(value)


def wide_columns(rows: Sequence[Row], skip: tuple[str, ...] = ()) -> list[Col]:
    """Every field of the rows as a column, named as in the JSON output."""
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys and k not in skip)
    return [Col(k, lambda r, k=k: _field(r.get(k))) for k in keys]
