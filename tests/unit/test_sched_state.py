"""Scheduling state, the warehouse lock, orphans and `--watch`, through the CLI without a JVM.

DTs are written with deltalake as dt would leave them (data + frontier), so every run here is
NO_DATA or nothing-due and never starts Spark.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from dtcli.project import load_project
from dtcli.state import history, scheduling
from dtcli.state.lock import warehouse_lock
from tests.helpers import dt
from tests.sched_helpers import T0, chain_project, fake_dt, write_source


@pytest.fixture
def shop(tmp_path):
    """src -> b (1 minute) -> a (2 minutes); src -> c (1 hour); all created and current."""
    project = chain_project(tmp_path, {"a": "2 minutes", "b": "1 minute", "c": "1 hour"},
                            {"a": "b", "b": "src", "c": "src"})
    write_source(project, [1, 2, 3])
    for name in ("b", "a", "c"):
        fake_dt(project, name, T0)
    return project


def _tables(project):
    result = dt("show", "dynamic", "tables", "-p", str(project.root), "--format", "json")
    assert result.code == 0, result.err
    return {row["name"]: row for row in result.json()}


def test_suspend_resume_and_show(shop):
    root = str(shop.root)
    rows = _tables(shop)
    assert rows["a"]["scheduling_state"] == "ACTIVE" and rows["a"]["target_lag"] == "2 minutes"
    assert rows["a"]["effective_lag_seconds"] == 120 and rows["a"]["period_seconds"] == 96
    assert rows["a"]["next_due"] is not None

    result = dt("suspend", "b", "-p", root, "--reason", "source under repair")
    assert result.code == 0 and "suspended b; also held back: a" in result.out
    rows = _tables(shop)
    assert rows["b"]["scheduling_state"] == "SUSPENDED" and rows["b"]["next_due"] is None
    assert rows["b"]["scheduling_state_reason"] == "source under repair"
    assert rows["a"]["scheduling_state"] == "SUSPENDED"
    assert rows["a"]["scheduling_state_reason"] == "upstream b is suspended (source under repair)"
    assert rows["c"]["scheduling_state"] == "ACTIVE"

    plan = dt("run", "--all", "--dry-run", "-p", root).json()
    assert [s["name"] for s in plan["steps"]] == ["c"]
    assert set(plan["not_refreshed"]) == {"a", "b"}

    refused = dt("resume", "a", "-p", root)
    assert refused.code == 2 and "upstream b is suspended" in refused.err and "dt resume b" in refused.err
    assert dt("resume", "b", "-p", root).out.strip() == "active: b, a"
    assert {r["scheduling_state"] for r in _tables(shop).values()} == {"ACTIVE"}
    events = [e["event"] for e in scheduling.read_events(shop.warehouse)]
    assert events == ["SUSPENDED", "RESUMED"]


def test_lock_busy_exits_1_or_waits(shop):
    root = str(shop.root)
    with warehouse_lock(shop, "run"):
        busy = dt("suspend", "c", "-p", root)
        assert busy.code == 1
        assert "another dt process holds the warehouse lock" in busy.err and "`dt run`" in busy.err
        assert "--wait SECONDS" in busy.err
        assert dt("run", "-p", root).code == 1

    holder = threading.Thread(target=_hold, args=(shop, 1.0))
    holder.start()
    time.sleep(0.3)
    started = time.monotonic()
    waited = dt("suspend", "c", "-p", root, "--wait", "30")
    holder.join()
    assert waited.code == 0, waited.err
    assert time.monotonic() - started >= 0.5


def _hold(project, seconds):
    with warehouse_lock(project, "run"):
        time.sleep(seconds)


def test_orphan_is_listed_and_dropped_after_confirmation(shop):
    root = str(shop.root)
    history_rows = dt("run", "--all", "-p", root)           # NO_DATA history for every DT
    assert history_rows.code == 0 and "(no Spark needed)" in history_rows.out
    dt("suspend", "a", "-p", root)
    (shop.root / "tables" / "a.sql").unlink()
    (shop.root / "tables" / "a.yml").unlink()
    project = load_project(shop.root)
    rows = _tables(project)
    assert rows["a"]["scheduling_state"] == "ORPHANED" and rows["a"]["orphaned"] is True
    assert "dt drop a" in rows["a"]["warnings"][0]
    assert dt("run", "--all", "-p", root).code == 0           # an orphan is never dropped silently
    assert (shop.root / "warehouse" / "a").exists()
    assert dt("show", "refresh-history", "a", "-p", root).code == 0

    unconfirmed = dt("drop", "a", "-p", root)
    assert unconfirmed.code == 2 and "--yes" in unconfirmed.err
    unknown = dt("drop", "nope", "-p", root, "--yes")
    assert unknown.code == 2 and "no dynamic table named 'nope'" in unknown.err
    dropped = dt("drop", "a", "-p", root, "--yes")
    assert dropped.code == 0, dropped.err
    assert not (shop.root / "warehouse" / "a").exists()
    assert "a" not in _tables(project)
    assert not [r for r in history.read(shop.warehouse) if r.name == "a"]
    assert "a" not in scheduling.current(shop.warehouse)
    # a table still defined is dropped too, and the next run creates it anew
    assert dt("drop", "b", "-p", root, "--yes").code == 0
    assert not (shop.root / "warehouse" / "b").exists()
    assert not [r for r in history.read(shop.warehouse) if r.name == "b"]


def test_plain_run_refreshes_only_what_is_due(shop, monkeypatch):
    root = str(shop.root)
    monkeypatch.setenv("DT_CLOCK_START", (T0 + timedelta(seconds=50)).isoformat())
    # At T0+50 s: b (48 s period) is due, a (96 s) and c (3072 s) are not.
    plan = dt("run", "--dry-run", "-p", root).json()
    assert [s["name"] for s in plan["steps"]] == ["b"]
    assert plan["not_refreshed"]["a"].startswith("not due until")
    # --select narrows the pass; --all ignores lag; `+a` brings b along.
    assert [s["name"] for s in dt("run", "--dry-run", "-s", "c", "-p", root).json()["steps"]] == []
    assert [s["name"] for s in dt("run", "--dry-run", "--all", "-s", "+a", "-p", root).json()["steps"]] == ["b", "a"]


def test_watch_max_ticks_3_refreshes_on_the_expected_ticks(shop, monkeypatch):
    start = T0 + timedelta(seconds=96)
    monkeypatch.setenv("DT_CLOCK_START", start.isoformat())
    result = dt("run", "--watch", "--max-ticks", "3", "-s", "a", "-s", "b", "-p", str(shop.root))
    assert result.code == 0, result.err
    assert result.out.count("(no Spark needed)") == 3 and "watch stopped after 3 pass(es)" in result.out
    by_time: dict[str, set[str]] = {}
    for row in history.read(shop.warehouse):
        by_time.setdefault(row.data_timestamp, set()).add(row.name)
    assert by_time == {start.isoformat(): {"a", "b"},
                       (start + timedelta(seconds=48)).isoformat(): {"b"},
                       (start + timedelta(seconds=96)).isoformat(): {"a", "b"}}


def test_on_schedule_dt_is_registered_not_created(tmp_path):
    project = chain_project(tmp_path, {"late": "1 hour"}, {"late": "src"},
                            extra_yml={"late": "initialize: on_schedule\n"})
    write_source(project, [1])
    dry = dt("run", "--dry-run", "-p", str(project.root)).json()
    assert dry["steps"] == [] and "on_schedule" in dry["not_refreshed"]["late"]
    assert scheduling.read_events(project.warehouse) == []     # a dry run writes nothing
    result = dt("run", "-p", str(project.root))
    assert result.code == 0 and "nothing to refresh" in result.out
    assert [e["event"] for e in scheduling.read_events(project.warehouse)] == ["REGISTERED"]
    assert _tables(project)["late"]["next_due"] is not None
