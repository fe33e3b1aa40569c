"""Rows no refresh of the engine wrote (NO_DATA, a run that did not start, a dead application or
dt process) carry the same step fields as the engine's, whichever of them writes it."""

from __future__ import annotations

from dtcli.model import FAILED, RefreshRecord, RefreshStep, StepOptions
from dtcli.plan_parts import LagTarget
from dtcli.state import ledger


def test_a_row_of_a_step_carries_its_lag_targets_hash_and_trigger():
    step = RefreshStep(name="paid", path="/w/paid", action="INCREMENTAL", trigger="SCHEDULED", sql="SELECT 1",
                       inputs=[], definition_hash="abc", refresh_mode="ADAPTIVE",
                       options=StepOptions(lag=LagTarget(target_lag_sec=3600, completion_target="2026-11-25T06:00:00+00:00")))
    row = ledger.planned(step, "run1", FAILED, "2026-11-25T05:00:00+00:00", message="gone", code="X")
    assert (row.name, row.state, row.refresh_action, row.refresh_trigger, row.run_id) == \
        ("paid", FAILED, "INCREMENTAL", "SCHEDULED", "run1")
    assert (row.definition_hash, row.state_code, row.state_message) == ("abc", "X", "gone")
    assert (row.target_lag_sec, row.completion_target) == (3600, "2026-11-25T06:00:00+00:00")
    assert row.refresh_start_time == row.refresh_end_time == "2026-11-25T05:00:00+00:00"
    assert RefreshRecord.from_dict(row.to_dict()) == row
