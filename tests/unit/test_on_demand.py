"""`scheduler: disable` (Snowflake's SCHEDULER = DISABLE): refreshed only on demand (no JVM)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from dtcli import api
from dtcli.model import CREATION, MANUAL, SCHEDULED
from dtcli.planning import on_demand, scheduler
from dtcli.planning.plan import build_plan
from dtcli.planning.snapshot import Snapshot
from tests.helpers import dt, write_project
from tests.sched_helpers import SRC_CONFIG, T0, chain_project, check, info, write_source

# `manual` reads the source and has the scheduler off; `report` (10 minutes) reads it.
LAGS = {"manual": "2 hours", "report": "10 minutes"}
READS = {"manual": "src", "report": "manual"}
OFF = {"manual": "scheduler: disable\n"}


def _checked(project, now=T0, exists=("manual", "report")):
    src = info(project, "manual")   # any TableInfo: only its version and id are read for a source
    tables = {n: (replace(info(project, n), table_id=f"id-of-{n}") if n in exists else None)
              for n in project.tables}
    return check(project, Snapshot(now, {"src": src}, tables))


def _decide(checked, now, candidates=None, **kw):
    stamps = {n: T0 for n in checked.project.tables}
    return scheduler.decide(checked, stamps, {}, candidates or set(checked.project.tables), now=now, **kw)


def test_the_schedule_never_refreshes_it_and_its_consumer_reads_it_as_it_is(tmp_path):
    project = chain_project(tmp_path, LAGS, READS, extra_yml=OFF)
    checked = _checked(project)
    assert checked.effective_lags.get("manual") is None       # no target lag, no period
    for minutes in (10, 130, 60 * 24):                          # long past its own 2 hours
        decision = _decide(checked, T0 + timedelta(minutes=minutes))
        assert "manual" not in decision.refresh
        assert decision.skipped["manual"].startswith("scheduler: disable; refreshed only on demand")
    assert decision.refresh == {"report"}
    plan = build_plan(checked, decision.refresh, SCHEDULED)
    assert [s.name for s in plan.steps] == ["report"]           # not pulled in as an upstream
    assert plan.steps[0].inputs[0].version == 0                 # read at its committed version
    assert plan.steps[0].inputs[0].table_id == "id-of-manual"   # and known by its table's id
    # --all without a selection does not name it either; watch has nothing to wake for
    assert "manual" not in _decide(checked, T0, all_tables=True).refresh
    assert scheduler.next_due_at(project, "manual", True, checked.effective_lags,
                                 {"manual": T0}, {}, {}, T0) is None


def test_it_refreshes_when_a_selection_names_it_with_all_or_by_dt_refresh(tmp_path):
    project = chain_project(tmp_path, LAGS, READS, extra_yml=OFF)
    checked = _checked(project)
    asked = _decide(checked, T0, {"manual"}, all_tables=True, asked=True)
    assert asked.refresh == {"manual"}
    plan = build_plan(checked, asked.refresh, SCHEDULED)
    assert [(s.name, s.trigger) for s in plan.steps] == [("manual", MANUAL)]
    # selected without --all: still only on demand
    assert _decide(checked, T0, {"manual"}, asked=True).refresh == set()
    # `dt refresh report` refreshes report alone: the on-demand DT it reads is read as it is
    assert [s.name for s in build_plan(checked, {"report"}, MANUAL).steps] == ["report"]
    assert [s.name for s in build_plan(checked, {"manual", "report"}, MANUAL).steps] == ["manual", "report"]


def test_it_is_created_and_reinitialized_like_any_dt(tmp_path):
    project = chain_project(tmp_path, LAGS, READS, extra_yml=OFF)
    created = _decide(_checked(project, exists=()), T0)
    assert created.refresh == {"manual", "report"}
    steps = build_plan(_checked(project, exists=()), created.refresh, SCHEDULED).steps
    assert [(s.name, s.trigger) for s in steps] == [("manual", CREATION), ("report", CREATION)]
    redefined = chain_project(tmp_path / "v2", LAGS, READS, extra_yml={"manual": OFF["manual"] + "refresh_mode: full\n"})
    checked = _checked(redefined)
    checked.snapshot.tables["manual"] = info(project, "manual")   # the old definition's hash
    assert "manual" in _decide(checked, T0).refresh


def test_on_schedule_it_waits_for_a_manual_refresh_and_holds_back_its_readers(tmp_path):
    project = chain_project(tmp_path, LAGS, READS,
                            extra_yml={"manual": OFF["manual"] + "initialize: on_schedule\n"})
    checked = _checked(project, exists=("report",))
    decision = _decide(checked, T0 + timedelta(hours=3))
    assert decision.refresh == set()
    assert "created by its first on-demand refresh (`dt refresh manual`)" in decision.skipped["manual"]
    assert "reads manual (scheduler: disable), which has not been created yet" in decision.skipped["report"]
    with pytest.raises(Exception, match="cannot refresh report: it reads manual"):
        on_demand.check_created(checked, {"report"})
    on_demand.check_created(checked, {"manual", "report"})      # creating it first is fine


def test_lag_rules_look_through_it_and_show_explain_say_so(tmp_path):
    # report (1 minute) reads manual (2 hours): not an error, manual has no lag of its own.
    project = chain_project(tmp_path, {"manual": "2 hours", "report": "1 minute"}, READS, extra_yml=OFF)
    write_source(project, [1, 2])
    assert dt("validate", "-p", str(project.root)).code == 0
    rows = {r["name"]: r for r in api.show_tables(api.check(project.root))}
    assert rows["manual"]["scheduler"] == "DISABLE" and rows["manual"]["target_lag"] is None
    assert rows["manual"]["next_due"] is None and rows["manual"]["effective_lag_seconds"] is None
    assert rows["report"]["scheduler"] == "ENABLE" and rows["report"]["target_lag"] == "1 minute"
    explained = dt("explain", "manual", "-p", str(project.root), "--format", "json").json()
    assert explained["scheduler"] == "DISABLE" and explained["target_lag"] is None
    assert "target_lag is ignored" in " ".join(explained["warnings"])
    assert "refreshed only on demand" in dt("explain", "manual", "-p", str(project.root)).out


@pytest.mark.parametrize("value, message", [
    ("off", "scheduler must be enable or disable, not False"),
    ("paused", "scheduler must be enable or disable, not 'paused'"),
])
def test_a_bad_scheduler_value_names_file_and_line(tmp_path, value, message):
    root = write_project(tmp_path / "p", {"t": "SELECT x FROM src"}, config=SRC_CONFIG,
                         table_yml={"t": f"target_lag: 1 hour\nscheduler: {value}\n"})
    result = dt("validate", "-p", str(root))
    assert result.code == 2
    assert f"tables/t.yml:2: {message}" in result.err
