"""A watch pass's spares (Plan.spare, planning/pass_budget.py) on real Delta tables: a spare runs
only in a slot (threads, cores) no step that fitted the pass is left to take, from the pass's own
snapshot, and one that never found such a slot leaves no trace at all (it is due in the next pass)."""

from __future__ import annotations

import pytest

from dtcli import api
from dtcli.engine.runtime.executor import execute_plan
from dtcli.model import SUCCEEDED
from dtcli.project import load_project
from dtcli.state import history
from dtcli.state.delta_log import table_info
from tests.helpers import assert_matches_recompute, write_project
from tests.sched_helpers import SRC_CONFIG, in_process, write_source

pytestmark = pytest.mark.spark

TABLES = {"a": "SELECT x FROM src", "b": "SELECT x * 10 AS x FROM {{ ref('a') }}",
          "s": "SELECT x, x % 2 AS odd FROM src"}


def _created(spark, tmp_path):
    project = load_project(write_project(tmp_path / "proj", TABLES, config=SRC_CONFIG))
    write_source(project, [1, 2, 3, None])
    result = api.run(api.check(project.root, with_stats=True), launcher=in_process(spark), all_tables=True)
    assert {r.state for r in result.records} == {SUCCEEDED}
    write_source(project, [3, 4, None])      # a duplicate and a NULL: every DT has a change to refresh
    return project


def test_a_spare_waits_for_the_slot_no_fitted_step_needs_and_reads_the_pass_snapshot(spark, tmp_path, monkeypatch):
    """Two threads on (at least) two cores, a -> b fitted and s spare: while a runs, its one
    free slot is b's (b starts once a commits), so s starts beside b, never before a ended; it
    refreshes from the pass's snapshot and is recorded like any refresh."""
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    project = _created(spark, tmp_path)
    plan = api.plan_run(api.check(project.root, with_stats=True))
    assert {s.name for s in plan.steps} == {"a", "b", "s"}
    plan.threads, plan.spare = 2, ["s"]
    records = {r.name: r for r in execute_plan(spark, plan)}
    assert set(records) == {"a", "b", "s"} and {r.state for r in records.values()} == {SUCCEEDED}
    assert records["s"].refresh_start_time >= records["a"].refresh_end_time
    assert records["s"].data_timestamp == plan.data_timestamp
    assert table_info(project.table_path("s")).frontier.source_versions == {"src": plan.source_versions["src"]}
    for name in TABLES:
        assert_matches_recompute(spark, project, name)
    assert {r.name for r in history.recent(project.warehouse, run_ids=[plan.run_id])
            if r.run_id == plan.run_id} == {"a", "b", "s"}


@pytest.mark.parametrize("threads, cores", [(1, 4), (4, 1)])
def test_a_spare_without_an_idle_slot_is_not_run_and_leaves_no_record(spark, tmp_path, monkeypatch, threads, cores):
    """One thread, or one core (a second refresh beside the first would only slow it): a
    fitted step always holds the one slot, so the spare never starts. Its table, its history
    and its frontier stay as they were; the fitted steps refresh as planned."""
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    project = _created(spark, tmp_path)
    before = table_info(project.table_path("s")).version
    plan = api.plan_run(api.check(project.root, with_stats=True))
    plan.threads, plan.spare = threads, ["s"]
    records = execute_plan(spark, plan)
    assert [r.name for r in records] == ["a", "b"] and {r.state for r in records} == {SUCCEEDED}
    assert table_info(project.table_path("s")).version == before
    assert "s" not in {r.name for r in history.recent(project.warehouse, run_ids=[plan.run_id])
                       if r.run_id == plan.run_id}
    for name in ("a", "b"):
        assert_matches_recompute(spark, project, name)


def test_spares_are_let_in_below_the_threads_or_the_cores_when_fewer(monkeypatch):
    from dtcli.engine.runtime.executor import spare_slots

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert [spare_slots(t) for t in (1, 2, 4, 8)] == [1, 2, 2, 2]
    monkeypatch.setattr("os.cpu_count", lambda: None)      # unknown: one
    assert spare_slots(4) == 1
