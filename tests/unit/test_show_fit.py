"""`dt show` in a terminal: the scanned columns fit 100 and 200 columns without wrapping a
header or a value; --wide and JSON carry every field (no JVM)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from dtcli.model import FAILED, REINITIALIZE, SCHEDULED, SUCCEEDED, RefreshRecord
from dtcli.project import load_project
from dtcli.state import ledger
from dtcli.ui.fit import Col, render
from tests.helpers import dt, write_project
from tests.sched_helpers import SRC_CONFIG, fake_dt, write_source

LONG = "orders_enriched_with_customer_details_daily"          # 43 characters
LONGER = "customer_lifetime_value_by_region_and_channel"       # 45 characters
SHOW_HEADERS = ["name", "state", "mode", "lag", "fresh", "peak 1h", "rows", "last refresh", "next due", "scheduler"]
HISTORY_HEADERS = ["name", "state", "action", "trigger", "ended", "took", "rows +/-", "message"]


@pytest.fixture
def project(tmp_path):
    root = write_project(tmp_path / "p", {
        LONG: "SELECT x FROM src",
        LONGER: f"SELECT x FROM {LONG}",
        "on_demand": "SELECT x FROM src",
        "never_run": "SELECT x FROM src",
    }, config=SRC_CONFIG, table_yml={
        LONG: "target_lag: 10 minutes\n", LONGER: "target_lag: downstream\n",
        "on_demand": "scheduler: disable\ncomment: refreshed by the nightly job\n",
        "never_run": "initialize: on_schedule\n"})
    project = load_project(root)
    write_source(project, list(range(1, 1200)))
    now = datetime.now(timezone.utc)
    for name in (LONG, LONGER, "on_demand"):
        fake_dt(project, name, now - timedelta(minutes=3))
    message = ("tables/" + LONGER + ".sql: [DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to "
               "tolerate divisor being 0 and return NULL instead. " * 3)
    ledger.append(project.warehouse, [
        RefreshRecord(LONGER, FAILED, REINITIALIZE, SCHEDULED, None, (now - timedelta(seconds=95)).isoformat(),
                      (now - timedelta(seconds=5)).isoformat(), "r1", state_message=message,
                      state_code="DIVIDE_BY_ZERO", query_id="local-1/r1", target_lag_sec=600,
                      completion_target=now.isoformat()),
        RefreshRecord(LONG, SUCCEEDED, "INCREMENTAL", SCHEDULED, (now - timedelta(minutes=3)).isoformat(),
                      (now - timedelta(seconds=130)).isoformat(), (now - timedelta(seconds=100)).isoformat(),
                      "r1", num_inserted_rows=1234567, num_deleted_rows=7654321),
    ])
    assert dt("suspend", LONG, "-p", str(root)).code == 0
    return project


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


def _headers(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


@pytest.mark.parametrize("width", [100, 200])
def test_show_dynamic_tables_fits_without_wrapping(project, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    result = dt("show", "dynamic", "tables", "-p", str(project.root))
    assert result.code == 0, result.err
    lines = _lines(result.out)
    assert len(lines) == 2 + 4, result.out                 # header, rule, one line per DT
    assert max(len(line) for line in lines) <= width, result.out
    headers = _headers(lines[0])
    assert headers == [h for h in SHOW_HEADERS if h in headers]   # whole, in order
    assert headers[:4] == ["name", "state", "mode", "lag"]
    body = "\n".join(lines[2:])
    assert LONGER in body and LONG in body                  # names are never cut
    assert "SUSPENDED" in body
    if width == 200:
        assert headers == SHOW_HEADERS
        assert "REINITIALIZE FAILED" in body and "DISABLE" in body
    assert re.search(rf"{LONG}\s+SUSPENDED\s+ADAPTIVE\s+10 minutes\s+3 min ago", body)
    on_demand = next(line for line in lines if line.startswith("on_demand"))
    assert " - " in on_demand or "  -  " in on_demand        # no target lag


@pytest.mark.parametrize("width", [100, 200])
def test_show_refresh_history_fits_and_cuts_only_the_message(project, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    result = dt("show", "refresh-history", "-p", str(project.root))
    assert result.code == 0, result.err
    lines = _lines(result.out)
    assert len(lines) == 2 + 2 and max(len(line) for line in lines) <= width, result.out
    assert _headers(lines[0]) == [h for h in HISTORY_HEADERS if h in _headers(lines[0])]
    failed = next(line for line in lines if line.startswith(LONGER))
    assert "FAILED" in failed and "tables/customer_" in failed and failed.rstrip().endswith("…")
    if width == 200:
        assert "1 min" in failed and "+1,234,567 -7,654,321" in result.out


def test_wide_and_json_carry_every_field(project, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    wide = dt("show", "dynamic", "tables", "-p", str(project.root), "--wide")
    header = _headers(_lines(wide.out)[0])
    for field in ("scheduler", "cluster_by", "comment", "last_suspended_on", "effective_lag_seconds",
                  "refresh_mode_reason", "data_timestamp", "deletion_vectors"):
        assert field in header
    assert len(_lines(wide.out)) == 2 + 4                    # wider than 100, still one line a row

    rows = {r["name"]: r for r in dt("show", "dynamic", "tables", "-p", str(project.root), "-f", "json").json()}
    assert rows["on_demand"]["scheduler"] == "DISABLE" and rows["on_demand"]["target_lag"] is None
    assert rows["on_demand"]["comment"] == "refreshed by the nightly job"
    assert rows[LONG]["scheduler"] == "ENABLE" and rows[LONG]["cluster_by"] is None
    assert rows[LONG]["last_suspended_on"] and rows[LONG]["scheduling_state"] == "SUSPENDED"
    assert rows[LONGER]["last_suspended_on"] == rows[LONG]["last_suspended_on"]   # held back by it
    assert rows["on_demand"]["last_suspended_on"] is None

    entries = dt("show", "refresh-history", "-p", str(project.root), "-f", "json").json()
    failed = next(e for e in entries if e["state"] == FAILED)
    assert {k: failed[k] for k in ("state_code", "target_lag_sec", "completion_target", "query_id")} == {
        "state_code": "DIVIDE_BY_ZERO", "target_lag_sec": 600,
        "completion_target": failed["completion_target"], "query_id": "local-1/r1"}
    assert failed["state_message"].startswith(f"tables/{LONGER}.sql: [DIVIDE_BY_ZERO]")   # in full


def test_fit_drops_low_priority_columns_and_never_wraps():
    columns = [Col("name", lambda r: r["n"]), Col("detail", lambda r: "x" * 50, priority=5),
               Col("note", lambda r: "a long note " * 10, priority=3, flexible=True)]
    rows = [{"n": "short"}, {"n": "a_much_longer_name"}]
    lines = render(columns, rows, 40)
    assert [len(re.sub(r"\[/?[a-z ]*\]", "", line)) <= 40 for line in lines] == [True] * 4
    assert "detail" not in lines[0] and "note" in lines[0]
    assert all("…" in line for line in lines[2:])
    full = render(columns, rows, None)
    assert "detail" in full[0] and "a long note " * 9 in full[2]
