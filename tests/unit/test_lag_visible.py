"""Lag you can see: `dt show dynamic tables` gives each DT's lag now, its peak over the last hour
and whether it met its target, and says when a DT cannot meet it, from the refresh history
read back only as far as needed (no JVM)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from dtcli.model import INCREMENTAL, NO_DATA, SCHEDULED, SUCCEEDED, RefreshRecord
from dtcli.planning import lag_stats
from dtcli.project import load_project
from dtcli.state import history, ledger
from tests.helpers import dt, write_project
from tests.sched_helpers import SRC_CONFIG, T0, fake_dt, write_source


def _refresh(name, stamp, ended, previous=None, lag=60, action=INCREMENTAL):
    """A refresh that read `stamp` and committed at `ended`, replacing content of `previous`."""
    return RefreshRecord(name, SUCCEEDED, action, SCHEDULED, stamp.isoformat(), stamp.isoformat(), ended.isoformat(),
                         "r", target_lag_sec=lag,
                         completion_target=(previous + timedelta(seconds=lag)).isoformat() if previous else None)


def test_peak_is_the_lag_just_before_a_commit_or_now():
    s = lambda seconds: T0 + timedelta(seconds=seconds)   # noqa: E731
    rows = [_refresh("a", s(-100), s(-90)),                         # a creation: no lag before it
            _refresh("a", s(-40), s(-20), previous=s(-100)),        # lag 80 s just before it
            _refresh("a", s(0), s(10), previous=s(-40)),            # 50 s
            _refresh("a", s(20), s(20.5), previous=s(0), action=NO_DATA),   # 20.5 s
            _refresh("a", s(-5000), s(-4000), previous=s(-9000))]   # outside the hour: ignored
    now = s(30)
    lags = lag_stats.lags(rows, {"a": s(20), "b": None}, {"a": 60, "b": 60}, now)
    a = lags["a"]
    assert (a.now, a.peak, a.peak_at, a.met, a.refreshes) == (10, 80, s(-20).isoformat(), False, 4)
    assert lags["b"].to_dict() == {"lag_seconds": None, "peak_lag_seconds": None, "peak_lag_at": None,
                                   "target_lag_met": None, "refreshes_last_hour": 0}
    # an hour later the 80 s has left the window: the lag now (3,610 s) is the peak, far over
    later = lag_stats.lags(rows, {"a": s(20)}, {"a": 60}, s(3630))["a"]
    assert (later.peak, later.met) == (3610, False)
    within = lag_stats.lags(rows[2:4], {"a": s(20)}, {"a": 60}, now)["a"]
    assert (within.peak, within.met) == (50, True)


def test_history_is_read_back_only_as_far_as_every_dt_needs(tmp_path):
    warehouse = str(tmp_path / "w")
    now = datetime.now(timezone.utc)
    ledger.append(warehouse, [_refresh("old", now - timedelta(hours=5), now - timedelta(hours=5))])
    ledger.append(warehouse, [_refresh("new", now - timedelta(minutes=m), now - timedelta(minutes=m)) for m in (1, 2)])
    rows, since = history.read_recent(warehouse, ["new"], now)
    assert {r.name for r in rows} == {"new"} and since == (now - timedelta(hours=1)).isoformat()
    rows, since = history.read_recent(warehouse, ["new", "old"], now)      # widened to a day
    assert {r.name for r in rows} == {"new", "old"} and since == (now - timedelta(days=1)).isoformat()
    assert [r.name for r in rows] == ["new", "new", "old"]                 # newest first
    rows, since = history.read_recent(warehouse, ["never"], now)
    assert len(rows) == 3 and since is None                                # the whole history


def test_show_dynamic_tables_gives_lag_peak_target_and_who_cannot_meet_it(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {"quick": "SELECT x FROM src", "slow": "SELECT x FROM src"},
                         config=SRC_CONFIG, table_yml={"quick": "target_lag: 1 minute\n",
                                                       "slow": "target_lag: 1 minute\n"})
    project = load_project(root)
    write_source(project, [1, 2, 3])
    now = datetime.now(timezone.utc)
    ago = lambda seconds: now - timedelta(seconds=seconds)   # noqa: E731
    fake_dt(project, "quick", ago(20))
    fake_dt(project, "slow", ago(45))
    ledger.append(project.warehouse, [
        _refresh("quick", ago(80), ago(75), previous=ago(120)),     # lag 45 s before it
        _refresh("quick", ago(20), ago(15), previous=ago(80)),      # 65 s: over
        *[_refresh("slow", ago(t), ago(t - 40), previous=ago(t + 20)) for t in (165, 125, 85, 45)],
    ])
    monkeypatch.setenv("COLUMNS", "200")
    result = dt("show", "dynamic", "tables", "-p", str(root), "--format", "json")
    assert result.code == 0, result.err
    rows = {r["name"]: r for r in result.json()}
    quick, slow = rows["quick"], rows["slow"]
    assert 19 < quick["lag_seconds"] < 60 and quick["peak_lag_seconds"] == 65
    assert quick["target_lag_met"] is False and quick["refreshes_last_hour"] == 2
    assert quick["refresh_seconds"] == 5 and quick["can_meet_target_lag"] is True
    assert quick["period_seconds"] == 48
    assert slow["peak_lag_seconds"] == 60 and slow["target_lag_met"] is True
    assert slow["refresh_seconds"] == 40 and slow["can_meet_target_lag"] is False and slow["period_seconds"] == 12
    assert any(w.startswith("slow cannot meet its target lag of 1 minute: its refreshes take 40 s")
               for w in slow["warnings"])
    table = dt("show", "dynamic", "tables", "-p", str(root))
    assert "peak 1h" in table.out and "65 s over" in table.out and " 60 s " in table.out
    explain = dt("explain", "slow", "-p", str(root))
    assert "refreshes take 40 s from snapshot to commit" in " ".join(explain.out.split())
    assert "slow cannot meet its target lag" in " ".join(explain.out.split())


def test_dt_run_warns_about_a_dt_that_cannot_meet_its_lag_and_watch_says_it_once(tmp_path, monkeypatch):
    """b's refreshes took 40 s from snapshot to commit in one watcher's application: with a
    1-minute lag it cannot keep up. Every run here is NO_DATA (no JVM)."""
    from tests.sched_helpers import chain_project

    project = chain_project(tmp_path, {"b": "1 minute", "c": "1 hour"}, {"b": "src", "c": "src"})
    write_source(project, [1, 2, 3])
    for name in ("b", "c"):
        fake_dt(project, name, T0)
    past = [_refresh("b", T0 - timedelta(seconds=t), T0 - timedelta(seconds=t - 40)) for t in (400, 300, 200, 100)]
    ledger.append(project.warehouse, [replace(r, query_id=f"local-7/r{k}") for k, r in enumerate(past)])
    monkeypatch.setenv("DT_CLOCK_START", (T0 + timedelta(seconds=60)).isoformat())
    once = dt("run", "-p", str(project.root))
    assert once.code == 0, once.err
    assert "warning: b cannot meet its target lag of 1 minute: its refreshes take 40 s" in " ".join(once.err.split())
    assert "c cannot meet" not in once.err
    watched = dt("run", "--watch", "--max-ticks", "3", "-p", str(project.root))
    assert watched.code == 0, watched.err
    assert watched.out.count("(no Spark needed)") == 3
    assert "cannot meet" not in watched.err       # no pass ran Spark: nothing said yet (see below)
    by_time = sorted({r.data_timestamp for r in history.read(project.warehouse) if r.name == "b"})
    gaps = {(datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()
            for a, b in zip(by_time[-3:], by_time[-2:])}
    assert gaps == {12.0}         # a 12 s period: 12 + 40 s within 95 % of the minute


def test_a_watcher_warns_once_per_dt_once_its_application_refreshed_every_dt_twice():
    from dtcli.api.runs import RunResult
    from dtcli.api.watch import BehindWarnings
    from dtcli.model import Plan

    def result(launched, behind, refreshed):
        records = [_refresh(n, T0, T0) for n in refreshed]
        return RunResult(Plan("r", "p", "w", T0.isoformat(), {}, []), records, launched=launched,
                         behind={n: f"{n} cannot meet" for n in sorted(behind)})
    warnings = BehindWarnings()
    assert warnings.after(result(False, {"b"}, {"b"})) == []          # NO_DATA, no application yet
    assert warnings.after(result(True, {"b"}, {"b", "c"})) == []      # it started the application
    assert warnings.after(result(True, {"b", "c"}, {"b", "c"})) == ["b", "c"]
    assert warnings.after(result(True, {"b", "c"}, {"b", "c"})) == []         # said once
    assert warnings.after(result(True, {"c"}, {"b", "c"})) == []              # b caught up
    assert warnings.after(result(False, {"b", "c"}, {"b", "c"})) == ["b"]     # and fell behind anew
    # short passes: the pass that started the application refreshed b, c and d; until d too was
    # refreshed again, the estimates still hold its first, cold refresh: nothing is said
    short = BehindWarnings()
    assert short.after(result(True, {"b"}, {"b", "c", "d"})) == []
    assert short.after(result(True, {"b"}, {"b", "c"})) == []
    assert short.after(result(True, {"b"}, {"b"})) == []
    assert short.after(result(True, {"b"}, {"d"})) == ["b"]
