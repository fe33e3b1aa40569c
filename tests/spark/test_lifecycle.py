"""Table lifecycle with real refreshes, in-process on the shared SparkSession: snapshot
isolation, reinitialization, manual refresh, failures, auto-suspension, on_schedule creation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dtcli import api
from dtcli.engine.runtime.executor import execute_plan
from dtcli.events import RefreshFinished
from dtcli.model import CREATION, FAILED, MANUAL, NO_DATA, REINITIALIZE, SCHEDULED, SUCCEEDED, UPSTREAM_FAILED
from dtcli.project import load_project
from dtcli.state import history, scheduling
from dtcli.state.delta_log import table_info
from tests.helpers import assert_matches_recompute, write_project
from tests.sched_helpers import SRC_CONFIG, T0, in_process, write_source

pytestmark = pytest.mark.spark


def _rows(spark, project, name):
    return sorted(r[0] for r in spark.read.format("delta").load(project.table_path(name)).collect())


def _project(tmp_path, tables, yml=None):
    root = write_project(tmp_path / "proj", tables, config=SRC_CONFIG, table_yml=yml)
    project = load_project(root)
    write_source(project, [1, 2, 3])
    return project


def _run(spark, project, now=None, **kw):
    kw.setdefault("all_tables", True)
    return api.run(api.check(project.root, now=now, with_stats=True), launcher=in_process(spark), **kw)


def _refresh(spark, project, name):
    return api.refresh(api.check(project.root, with_stats=True), name, launcher=in_process(spark))


def _by_name(result):
    return {r.name: r.to_dict() for r in result.records}


def test_a_commit_during_a_run_is_seen_by_no_dt_of_that_run_and_by_the_next(spark, tmp_path):
    project = _project(tmp_path, {"d1": "SELECT x FROM src", "d2": "SELECT x * 10 AS x FROM src",
                                  "d3": "SELECT x FROM {{ ref('d1') }} WHERE x > 1"})
    plan = api.plan_run(api.check(project))
    assert [s.name for s in plan.steps] == ["d1", "d2", "d3"]
    injected = []

    def emit(event):
        # After d1's refresh, before d2's and d3's: a new source commit lands.
        if isinstance(event, RefreshFinished) and event.record.name == "d1" and not injected:
            injected.append(write_source(project, [99]))

    records = execute_plan(spark, plan, emit)
    assert injected == [1] and [r.state for r in records] == [SUCCEEDED] * 3
    assert _rows(spark, project, "d1") == [1, 2, 3]
    assert _rows(spark, project, "d2") == [10, 20, 30]
    assert _rows(spark, project, "d3") == [2, 3]
    for name in ("d1", "d2", "d3"):
        assert_matches_recompute(spark, project, name)
    assert table_info(project.table_path("d2")).frontier.source_versions == {"src": 0}

    again = _by_name(_run(spark, project))
    assert {r["state"] for r in again.values()} == {SUCCEEDED}
    assert NO_DATA not in {r["refresh_action"] for r in again.values()}
    assert _rows(spark, project, "d2") == [10, 20, 30, 990]
    assert _rows(spark, project, "d3") == [2, 3, 99]
    for name in ("d1", "d2", "d3"):
        assert_matches_recompute(spark, project, name)


def test_query_edit_reinitializes_and_lag_edit_changes_nothing(spark, tmp_path):
    project = _project(tmp_path, {"d": "SELECT x FROM src"}, {"d": "target_lag: 1 hour\n"})
    assert _by_name(_run(spark, project))["d"]["refresh_trigger"] == CREATION
    version = table_info(project.table_path("d")).version

    (project.root / "tables" / "d.yml").write_text("target_lag: 2 hours\n")
    project = load_project(project.root)
    record = _by_name(_run(spark, project))["d"]
    assert (record["refresh_action"], record["reinit_reason"]) == (NO_DATA, None)
    assert table_info(project.table_path("d")).version == version

    (project.root / "tables" / "d.sql").write_text("SELECT x + 1 AS y FROM src\n")
    project = load_project(project.root)
    # Reconcile: applied by a plain (not --all) run even though d is not due.
    plan = api.plan_scheduled(api.check(project, now=T0)).plan
    assert [(s.name, s.action) for s in plan.steps] == [("d", REINITIALIZE)]
    record = _by_name(_run(spark, project, all_tables=False))["d"]
    assert record["refresh_action"] == REINITIALIZE and record["state"] == SUCCEEDED
    assert "definition changed" in record["reinit_reason"]
    assert _rows(spark, project, "d") == [2, 3, 4]
    assert_matches_recompute(spark, project, "d")


def test_manual_refresh_brings_the_upstream_it_needs(spark, tmp_path):
    project = _project(tmp_path, {"up": "SELECT x FROM src", "other": "SELECT x FROM src",
                                  "down": "SELECT x * 2 AS x FROM {{ ref('up') }}"})
    _run(spark, project)
    write_source(project, [4])
    result = _by_name(_refresh(spark, project, "down"))
    assert set(result) == {"up", "down"}
    assert {r["refresh_trigger"] for r in result.values()} == {MANUAL}
    assert _rows(spark, project, "down") == [2, 4, 6, 8]
    assert _rows(spark, project, "other") == [1, 2, 3]
    assert_matches_recompute(spark, project, "down")


def test_failures_upstream_failed_and_auto_suspension(spark, tmp_path):
    # ANSI casts fail at run time: 'n1' is not an INT.
    project = _project(tmp_path, {"bad": "SELECT x, CAST(concat('n', x) AS INT) AS y FROM src",
                                  "after_bad": "SELECT x FROM {{ ref('bad') }}",
                                  "fine": "SELECT x FROM src"})

    def scheduled(i):
        return _by_name(_run(spark, project, all_tables=False, now=T0 + timedelta(hours=2 * i)))

    first = scheduled(0)
    assert first["bad"]["state"] == FAILED and first["bad"]["state_message"]
    assert first["after_bad"]["state"] == UPSTREAM_FAILED
    assert "upstream dynamic table bad failed" in first["after_bad"]["state_message"]
    assert first["fine"]["state"] == SUCCEEDED
    for i in range(1, 4):
        scheduled(i)
    # A manual failure in between neither counts nor breaks the streak.
    assert _by_name(_refresh(spark, project, "bad"))["bad"]["state"] == FAILED
    assert scheduling.current(project.warehouse) == {}
    fifth = _run(spark, project, all_tables=False, now=T0 + timedelta(hours=8))
    assert [s["name"] for s in fifth.suspended] == ["bad"]
    assert fifth.suspended[0]["downstream"] == ["after_bad"]
    rows = {r["name"]: r for r in api.show_tables(api.check(project.root))}
    assert rows["bad"]["scheduling_state"] == "SUSPENDED"
    assert "5 consecutive failed scheduled refreshes" in rows["bad"]["scheduling_state_reason"]
    assert rows["after_bad"]["scheduling_state"] == "SUSPENDED"
    assert "upstream bad is suspended" in rows["after_bad"]["scheduling_state_reason"]
    assert rows["fine"]["scheduling_state"] == "ACTIVE"
    sixth = _run(spark, project, all_tables=False, now=T0 + timedelta(hours=10))
    assert set(_by_name(sixth)) == {"fine"}
    failures = [r for r in history.read(project.warehouse, "bad") if r.state == FAILED]
    assert len(failures) == 6 and sum(r.refresh_trigger == MANUAL for r in failures) == 1


def test_on_schedule_is_created_at_its_first_tick(spark, tmp_path):
    project = _project(tmp_path, {"late": "SELECT x FROM src"},
                       {"late": "target_lag: 1 minute\ninitialize: on_schedule\n"})
    assert _run(spark, project, all_tables=False, now=T0 + timedelta(seconds=5)).records == []
    assert table_info(project.table_path("late")) is None
    assert _run(spark, project, all_tables=False, now=T0 + timedelta(seconds=40)).records == []
    created = _by_name(_run(spark, project, all_tables=False, now=T0 + timedelta(seconds=50)))
    assert (created["late"]["refresh_trigger"], created["late"]["state"]) == (CREATION, SUCCEEDED)
    assert created["late"]["data_timestamp"] == (T0 + timedelta(seconds=50)).isoformat()
    # A second later nothing is due whatever period the creation's measured time chose (the
    # shortest, 6 s, has its next tick at +54): the probe must not depend on the machine's speed.
    assert _run(spark, project, all_tables=False, now=T0 + timedelta(seconds=51)).records == []
    assert _by_name(_run(spark, project, all_tables=False, now=T0 + timedelta(seconds=96)))["late"][
        "refresh_trigger"] == SCHEDULED
