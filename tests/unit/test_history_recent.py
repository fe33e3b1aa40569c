"""A pass reads only the history rows it needs, and every decision made from them is the one the
whole history gives (no JVM)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from dtcli.model import FAILED, FULL, INCREMENTAL, NO_DATA, SUCCEEDED, RefreshRecord
from dtcli.planning import adaptive, refresh_times, scheduler
from dtcli.state import history, ledger

T0 = datetime(2026, 11, 20, tzinfo=timezone.utc)


def _history(warehouse: str, runs: int = 400) -> None:
    """Three DTs refreshed every 48 s: mostly INCREMENTAL, some FULL and NO_DATA, failures now
    and then; `always_fails`, added for the last 30 runs, never succeeded; `failing` ends on a
    streak; `quiet` found no change in its last 40 runs, and its refreshes before them have no
    sizes (as the rows reconciliation recovers from commits): its newest refreshes that did work
    are neither among its newest rows nor among ADAPTIVE's samples."""
    rnd = random.Random(7)
    rows = []
    for run in range(runs):
        for k, name in enumerate(("steady", "failing", "always_fails", "quiet")):
            if name == "always_fails" and run < runs - 30:
                continue
            start = T0 + timedelta(seconds=48 * run + k)
            state = FAILED if (name == "always_fails" or (name == "failing" and run > runs - 4)
                               or rnd.random() < 0.05) else SUCCEEDED
            action = FULL if run == 0 else rnd.choice([INCREMENTAL] * 6 + [FULL, NO_DATA])
            if name == "quiet" and run >= runs - 40:
                action = NO_DATA
            rows.append(RefreshRecord(
                name, state, action, "CREATION" if run == 0 else "SCHEDULED",
                (T0 + timedelta(seconds=48 * run)).isoformat() if state == SUCCEEDED else None,
                start.isoformat(), (start + timedelta(seconds=rnd.random() * 20)).isoformat(), f"r{run}",
                table_version=run if action != NO_DATA and state == SUCCEEDED else None,
                change_rows=None if name == "quiet" else rnd.randint(10, 5000),
                input_rows=None if name == "quiet" else 60_000 + run))
    for chunk in range(0, len(rows), 90):
        ledger.append(warehouse, rows[chunk:chunk + 90])


def test_recent_rows_give_the_same_plan_streaks_timestamps_and_reconciliation_inputs(tmp_path):
    warehouse = str(tmp_path / "wh")
    _history(warehouse)
    everything = history.read(warehouse)
    recent = history.recent(warehouse)
    assert len(recent) < len(everything) / 3
    assert recent == sorted(recent, key=lambda r: r.refresh_end_time, reverse=True)
    for name in ("steady", "failing", "always_fails", "quiet"):
        mine = [r for r in recent if r.name == name]
        assert adaptive.learn(mine) == adaptive.learn([r for r in everything if r.name == name])
    assert refresh_times.measured(recent) == refresh_times.measured(everything)
    assert scheduler.failure_streaks(recent, {}) == scheduler.failure_streaks(everything, {})
    assert scheduler.failure_streaks(recent, {})["failing"]["count"] == 3
    assert history.latest_per_table(recent) == history.latest_per_table(everything)

    def newest(rows, pick):
        out = {}
        for r in rows:
            value = pick(r)
            if value is not None and (r.name not in out or value > out[r.name]):
                out[r.name] = value
        return out
    for pick in (lambda r: r.table_version, lambda r: r.data_timestamp if r.state == SUCCEEDED else None):
        assert newest(recent, pick) == newest(everything, pick)


def test_recent_adds_the_rows_of_named_runs_and_of_the_last_stretch_of_time(tmp_path):
    warehouse = str(tmp_path / "wh")
    _history(warehouse)
    everything = history.read(warehouse)
    assert not any(r.run_id == "r5" for r in history.recent(warehouse))
    assert {r.name for r in history.recent(warehouse, run_ids=["r5"]) if r.run_id == "r5"} == \
        {"steady", "failing", "quiet"}
    since = (T0 + timedelta(seconds=48 * 100)).isoformat()
    expected = {(r.name, r.run_id) for r in everything if r.refresh_end_time >= since}
    assert expected <= {(r.name, r.run_id) for r in history.recent(warehouse, since=since)}


def test_no_history_reads_as_none(tmp_path):
    assert history.recent(str(tmp_path / "wh")) == []
