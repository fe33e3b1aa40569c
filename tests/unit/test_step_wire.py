"""The plan reaches the Spark driver as JSON (Plan.to_json / Plan.from_json): every part of a
step's options comes back as the typed value it left as."""

from __future__ import annotations

import dataclasses

import pytest

from dtcli.data_tests import AuditSpec
from dtcli.model import Frontier, InternalTable, Plan, RefreshStep, StepOptions, TopNSpec
from dtcli.model.plan import StepInput
from dtcli.model.strategy_specs import SortKey
from dtcli.plan_parts import (
    Backfill,
    BackfillCopy,
    Estimate,
    LagTarget,
    Layout,
    Regions,
    Registration,
    SourceLookup,
    Unregistration,
)

OPTIONS = StepOptions(
    previous_rows=7, source_ids={"src": "id-1"}, file="tables/d.sql", delta_sql="SELECT 1",
    read_columns={"src": ["id"]}, read_by_tables=True,
    columns=[{"name": "id", "type": "BIGINT"}], names=["id"],
    layout=Layout(partition_by=["g"], sort_by=["id"], max_rows_per_file=10, small_table_rows=3,
                  deletion_vectors=False, column_mapping=True, comment="c", comment_outdated=True,
                  deletion_vectors_outdated=True),
    regions=Regions(where="d < '2026-01-01'", active="d >= '2026-01-01'", frozen="d < '2026-01-01'"),
    backfill=Backfill(spec={"from": {"table": "old"}, "version": 2, "timestamp": None, "before": False},
                      copy=BackfillCopy("old", "/w/old", 2)),
    estimate=Estimate(action_reason="why", change_rows=5, input_rows=50),
    lag=LagTarget(target_lag_sec=60, completion_target="2026-11-25T00:01:00+00:00"),
    audit=AuditSpec([]), after=["e"],
    top_n=TopNSpec(inner_sql="SELECT 1", outputs=1, order=[SortKey(0, True, False)], limit=3, offset=0,
                   state=InternalTable("top_n_rows", "/w/_dt/internal/d/top_n_rows", "SELECT 1")))


def _plan(options: StepOptions) -> Plan:
    step = RefreshStep(name="d", path="/w/d", action="FULL", trigger="SCHEDULED", sql="SELECT 1",
                       inputs=[StepInput("src", "source", "/w/src", 4)], definition_hash="h",
                       refresh_mode="FULL", previous=Frontier({"src": 3}), options=options)
    return Plan(run_id="r", project="p", warehouse="/w", data_timestamp="2026-11-25T00:00:00+00:00",
                source_versions={"src": 4}, steps=[step])


@pytest.mark.parametrize("options", [OPTIONS, StepOptions()], ids=["every part", "defaults"])
def test_every_part_of_the_step_comes_back_from_the_wire_as_it_left(options):
    plan = _plan(options)
    again = Plan.from_json(plan.to_json())
    assert again == plan
    back = again.steps[0].options
    for part in ("layout", "regions", "backfill", "estimate", "lag"):
        assert type(getattr(back, part)) is type(getattr(options, part)), part
    assert back.backfill.copy == options.backfill.copy


def test_a_planned_step_is_not_patched_afterwards():
    with pytest.raises(dataclasses.FrozenInstanceError):
        OPTIONS.lag = LagTarget(target_lag_sec=1)          # type: ignore[misc]


def test_the_catalog_work_and_the_name_look_ups_travel_typed():
    plan = dataclasses.replace(
        _plan(StepOptions()),
        registrations=[Registration("d", "s.d", "/w/d", previous="old.d", retry="unreachable",
                                    comment_changed=True, comment=None)],
        unregistrations=[Unregistration("gone", "s.gone", "/w/gone")],
        resolutions=[SourceLookup("src", "raw.src", recheck=True, location="/w/src", table_id="id-1")])
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert type(again.registrations[0]) is Registration and type(again.resolutions[0]) is SourceLookup


def test_no_module_patches_a_plan_after_the_planner_built_it():
    """planning/plan.py's build_plan returns the plan finished (issue 42): nothing else in dtcli
    assigns to a plan's or a step's fields (StepOptions and its parts are frozen besides)."""
    import ast
    from pathlib import Path

    fields = {f.name for f in dataclasses.fields(Plan)} | {f.name for f in dataclasses.fields(RefreshStep)}
    found = []
    for path in (Path(__file__).resolve().parents[2] / "dtcli").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in fields \
                        and isinstance(target.value, ast.Name) and target.value.id in ("plan", "step"):
                    found.append(f"{path.name}:{node.lineno} {target.value.id}.{target.attr}")
    assert found == []
