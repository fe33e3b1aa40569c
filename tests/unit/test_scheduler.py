"""Which DTs a scheduling pass refreshes, simulated over time with an injected clock (no JVM)."""

from __future__ import annotations

from datetime import timedelta

from dtcli.model import FAILED, MANUAL, SCHEDULED, SUCCEEDED, UPSTREAM_FAILED, RefreshRecord
from dtcli.planning import scheduler
from dtcli.planning.graph import Graph
from dtcli.project import load_project
from dtcli.state.scheduling import SUSPENDED, TableState
from tests.helpers import dt
from tests.sched_helpers import T0, chain_project, checked_at, effective_lags, info, simulate, write_source

DT1_DT2 = {"dt1": "src", "dt2": "dt1"}   # DT2 reads DT1, as in Snowflake's target-lag table


def _times(log, name):
    return [offset for offset, refreshed in log if name in refreshed]


def test_a_2_minutes_reading_b_1_minute_refresh_together_over_10_minutes(tmp_path):
    project = chain_project(tmp_path, {"a": "2 minutes", "b": "1 minute"}, {"a": "b", "b": "src"})
    graph = Graph.of(project)
    effective = effective_lags(project, graph)
    assert [scheduler.period_seconds(effective[n]) for n in ("a", "b")] == [96, 48]
    log = simulate(project, 600, step=4)
    a, b = _times(log, "a"), _times(log, "b")
    assert b == list(range(48, 601, 48))
    assert a == list(range(96, 601, 96))
    assert set(a) <= set(b)   # every refresh of A coincides with one of B


def test_a_lag_shorter_than_its_upstream_is_rejected_with_exit_2(tmp_path):
    project = chain_project(tmp_path, {"a": "1 minute", "b": "2 minutes"}, {"a": "b", "b": "src"})
    write_source(project, [1])
    for command in (("validate",), ("run",)):
        result = dt(*command, "-p", str(project.root))
        assert result.code == 2
        assert "a has target_lag 1 minute, shorter than the 2 minutes of b" in result.err
    assert not (project.root / "warehouse").exists()   # nothing written


def test_dt1_downstream_dt2_10_minutes_refresh_together_every_period(tmp_path):
    project = chain_project(tmp_path, {"dt1": "downstream", "dt2": "10 minutes"}, DT1_DT2)
    log = simulate(project, 1800)
    assert _times(log, "dt2") == [384, 768, 1152, 1536]   # at most every 10 minutes
    assert _times(log, "dt1") == _times(log, "dt2")       # DT1 refreshes whenever DT2 needs it


def test_dt1_10_minutes_dt2_downstream_never_refreshes_dt2_and_warns(tmp_path):
    project = chain_project(tmp_path, {"dt1": "10 minutes", "dt2": "downstream"}, DT1_DT2)
    log = simulate(project, 1800)
    assert _times(log, "dt2") == []
    assert _times(log, "dt1") == [384, 768, 1152, 1536]
    write_source(project, [1, 2])
    for command in (("validate",), ("explain", "dt2")):
        result = dt(*command, "-p", str(project.root))
        assert result.code == 0, result.err
        assert "dt2 has target_lag downstream but no DT with a time lag reads it" in " ".join(result.out.split())
    assert "warning" not in dt("explain", "dt1", "-p", str(project.root)).out


def test_dt1_5_minutes_dt2_10_minutes_dt2_reads_fresh_dt1(tmp_path):
    project = chain_project(tmp_path, {"dt1": "5 minutes", "dt2": "10 minutes"}, DT1_DT2)
    log = simulate(project, 1800)
    assert _times(log, "dt1") == list(range(192, 1801, 192))
    assert _times(log, "dt2") == [384, 768, 1152, 1536]
    assert set(_times(log, "dt2")) <= set(_times(log, "dt1"))


def test_both_downstream_nothing_refreshes_and_both_warn(tmp_path):
    project = chain_project(tmp_path, {"dt1": "downstream", "dt2": "downstream"}, DT1_DT2)
    assert simulate(project, 1800) == []
    write_source(project, [1])
    out = " ".join(dt("validate", "-p", str(project.root)).out.split())
    assert "dt1 has target_lag downstream but no DT" in out and "dt2 has target_lag downstream but no DT" in out


def _decide(project, *, stamps=None, states=None, snapshot_tables=None, now=None, all_tables=False, only=None):
    tables = snapshot_tables if snapshot_tables is not None else {n: info(project, n) for n in project.tables}
    stamps = stamps if stamps is not None else {n: T0 for n in project.tables}
    return scheduler.decide(checked_at(project, tables), stamps, states or {}, set(only or project.tables),
                            all_tables=all_tables, now=now or T0 + timedelta(seconds=10))


def test_reconcile_creates_and_reinitializes_even_when_not_due(tmp_path):
    project = chain_project(tmp_path, {"a": "1 hour", "b": "1 hour", "c": "1 hour"},
                            {"a": "src", "b": "src", "c": "src"})
    tables = {"a": None, "b": info(project, "b", definition="old"), "c": info(project, "c")}
    decision = _decide(project, snapshot_tables=tables)
    assert decision.refresh == {"a", "b"}
    assert decision.skipped["c"].startswith("not due until")
    assert _decide(project, all_tables=True).refresh == {"a", "b", "c"}


def test_initialize_on_schedule_registers_then_creates_at_the_first_tick(tmp_path):
    project = chain_project(tmp_path, {"a": "1 minute"}, {"a": "src"},
                            extra_yml={"a": "initialize: on_schedule\n"})
    first = _decide(project, snapshot_tables={"a": None}, stamps={"a": None})
    assert first.register == ["a"] and not first.refresh
    registered = {"a": TableState(registered_on=(T0 + timedelta(seconds=10)).isoformat())}
    soon = _decide(project, snapshot_tables={"a": None}, stamps={"a": None}, states=registered,
                   now=T0 + timedelta(seconds=40))
    assert not soon.refresh and not soon.register
    tick = _decide(project, snapshot_tables={"a": None}, stamps={"a": None}, states=registered,
                   now=T0 + timedelta(seconds=48))
    assert tick.refresh == {"a"}


def test_suspended_dt_and_its_downstream_are_skipped(tmp_path):
    project = chain_project(tmp_path, {"a": "1 minute", "b": "1 minute", "c": "1 minute"},
                            {"a": "src", "b": "a", "c": "src"})
    states = {"a": TableState(SUSPENDED, "by hand", "a")}
    decision = _decide(project, states=states, now=T0 + timedelta(seconds=100), all_tables=True)
    assert decision.refresh == {"c"}
    assert decision.skipped["b"] == "suspended: upstream a is suspended (by hand)"


def _row(name, state, trigger=SCHEDULED, minute=0, message=None):
    stamp = (T0 + timedelta(minutes=minute)).isoformat()
    return RefreshRecord(name=name, state=state, refresh_action="FULL", refresh_trigger=trigger,
                         refresh_start_time=stamp, refresh_end_time=stamp, state_message=message,
                         data_timestamp=stamp, run_id="r")


def test_five_consecutive_scheduled_failures_suspend_manual_ones_do_not_count():
    rows = [_row("a", SUCCEEDED, minute=0)] + [_row("a", FAILED, minute=m, message=f"boom {m}") for m in range(1, 5)]
    rows += [_row("a", FAILED, MANUAL, minute=5), _row("a", UPSTREAM_FAILED, minute=6)]
    streaks = scheduler.failure_streaks(rows, {})
    assert streaks["a"] == {"count": 4, "last_error": "boom 4"}
    assert scheduler.auto_suspensions(streaks, {}, "now") == []
    rows.append(_row("a", FAILED, minute=7, message="boom 7"))
    events = scheduler.auto_suspensions(scheduler.failure_streaks(rows, {}), {}, "now")
    assert [(e.name, e.event) for e in events] == [("a", SUSPENDED)]
    assert "5 consecutive failed scheduled refreshes; last error: boom 7" in events[0].reason
    # A resume starts the count again; an already suspended DT gets no second event.
    resumed = {"a": (T0 + timedelta(minutes=6, seconds=30)).isoformat()}
    assert scheduler.failure_streaks(rows, resumed)["a"]["count"] == 1
    assert scheduler.auto_suspensions(scheduler.failure_streaks(rows, {}), {"a": TableState(SUSPENDED)}, "now") == []


def test_next_wake_is_the_earliest_due_time_and_never_now(tmp_path):
    project = chain_project(tmp_path, {"a": "2 minutes", "b": "1 minute"}, {"a": "b", "b": "src"})
    checked = checked_at(project, {n: info(project, n) for n in project.tables})
    now = T0 + timedelta(seconds=5)
    stamps = {"a": T0, "b": T0}
    assert scheduler.next_wake(checked, stamps, {}, now) == T0 + timedelta(seconds=48)
    # b failed at its tick (data timestamp unchanged): retried at the next tick, not in a busy loop.
    late = T0 + timedelta(seconds=50)
    assert scheduler.next_wake(checked, stamps, {}, late) == T0 + timedelta(seconds=96)
    assert scheduler.next_wake(checked, stamps, {"b": TableState(SUSPENDED)}, now) is None


def test_an_edited_custom_statement_waits_for_its_schedule_unless_it_adds_columns(tmp_path):
    # A custom table's history is never recomputed, so an edit is no reason to refresh now: a
    # pass that picked it anyway would record NO_DATA on every run until its input changed.
    columns = "columns: [{name: x, type: BIGINT}]\n"
    project = chain_project(tmp_path, {"c": "1 hour"}, {"c": "src"}, extra_yml={"c": columns})
    (project.root / "tables" / "c.sql").write_text("INSERT INTO SELF SELECT x FROM src CHANGES()")
    project = load_project(project.root)
    edited = {"c": info(project, "c", definition="old")}
    decision = _decide(project, snapshot_tables=edited)
    assert decision.refresh == set() and decision.skipped["c"].startswith("not due until")
    assert _decide(project, snapshot_tables=edited, now=T0 + timedelta(hours=1, seconds=10)).refresh == {"c"}

    (project.root / "tables" / "c.sql").write_text("INSERT INTO SELF SELECT x, x + 1 AS y FROM src CHANGES()")
    (project.root / "tables" / "c.yml").write_text(
        "target_lag: 1 hour\ncolumns: [{name: x, type: BIGINT}, {name: y, type: BIGINT}]\n")
    project = load_project(project.root)
    assert _decide(project, snapshot_tables={"c": info(project, "c", definition="old")}).refresh == {"c"}


def test_runs_whose_application_did_not_start_do_not_count_toward_auto_suspension():
    """A mistyped Spark setting fails every run before any refresh: five cron runs of it must
    not suspend the project, nor hide the failures around them."""
    from dataclasses import replace

    from dtcli.model.refresh_terms import APPLICATION_NOT_STARTED

    rows = [_row("a", FAILED, minute=m, message=f"boom {m}") for m in range(1, 5)]
    rows += [replace(_row("a", FAILED, minute=10 + m), state_code=APPLICATION_NOT_STARTED) for m in range(6)]
    assert scheduler.failure_streaks(rows, {})["a"]["count"] == 4
    assert scheduler.auto_suspensions(scheduler.failure_streaks(rows, {}), {}, "now") == []
