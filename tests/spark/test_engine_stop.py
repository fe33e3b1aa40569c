"""A stop request (Ctrl-C in the CLI) lets the running refreshes commit and skips the rest."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dtcli import api
from dtcli.engine.runtime.executor import execute_plan, side_sessions
from dtcli.events import RefreshFinished, to_wire
from dtcli.state.delta_log import table_info
from tests.helpers import write_project

pytestmark = pytest.mark.spark


def test_stop_between_refreshes_skips_the_rest(tmp_path, spark):
    root = write_project(tmp_path, {
        "a": "SELECT id, v FROM src WHERE v > 0",
        "b": "SELECT id FROM {{ ref('a') }}",
        "c": "SELECT v FROM src",
    }, config="sources:\n  src: {path: data/src}\n")
    write_deltalake(str(root / "data" / "src"), pa.table({"id": [1, 2], "v": [1, -1]}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    checked = api.check(root)
    project = checked.project
    plan = api.plan_run(checked)
    plan.threads = 1            # one refresh at a time: the stop comes after a
    done: list[str] = []
    records = execute_plan(spark, plan, lambda e: done.append(e.record.name) if isinstance(e, RefreshFinished) else None,
                           should_stop=lambda: bool(done))
    assert [(r.name, r.state) for r in records] == [("a", "SUCCEEDED"), ("b", "SKIPPED"), ("c", "SKIPPED")]
    assert table_info(project.table_path("a")) is not None
    assert table_info(project.table_path("b")) is None and table_info(project.table_path("c")) is None


def test_refreshes_run_side_by_side_and_a_stop_lets_the_running_ones_commit(tmp_path, spark):
    """With two threads, a and c (independent) start together; b reads a, so it waits for a's
    commit, and the stop that comes once a refresh finished skips it. c, already running,
    commits."""
    root = write_project(tmp_path, {
        "a": "SELECT id, v FROM src WHERE v > 0",
        "b": "SELECT id FROM {{ ref('a') }}",
        "c": "SELECT v FROM src",
    }, config="sources:\n  src: {path: data/src}\n")
    write_deltalake(str(root / "data" / "src"), pa.table({"id": [1, 2], "v": [1, -1]}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    checked = api.check(root)
    plan = api.plan_run(checked)
    plan.threads = 2
    events: list[dict] = []
    records = execute_plan(spark, plan, lambda e: events.append(to_wire(e)),
                           should_stop=lambda: any(e["event"] == "finished" for e in events))
    assert [(r.name, r.state) for r in records] == [("a", "SUCCEEDED"), ("b", "SKIPPED"), ("c", "SUCCEEDED")]
    kinds = [(e["event"], e.get("name") or e.get("record", {}).get("name")) for e in events]
    # both started before either finished: they ran side by side
    first_finish = next(i for i, (kind, _) in enumerate(kinds) if kind == "finished")
    assert {("start", "a"), ("start", "c")} <= set(kinds[:first_finish]), kinds



def test_refreshes_side_by_side_reuse_the_applications_sessions(tmp_path, spark, monkeypatch):
    """Each run of a long-lived application (a --watch engine, a run of many DTs) hands its
    parallel refreshes the same few sessions: sessions made per refresh stay reachable in the
    driver's heap after their refresh."""
    root = write_project(tmp_path, {f"t{k}": f"SELECT id + {k} AS id FROM src" for k in range(4)},
                         config="sources:\n  src: {path: data/src}\n")
    write_deltalake(str(root / "data" / "src"), pa.table({"id": [1, 2]}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    monkeypatch.delattr(spark, "_dt_side_sessions", raising=False)
    made = []
    real = spark.newSession
    monkeypatch.setattr(spark, "newSession", lambda: made.append(real()) or made[-1], raising=False)
    for rows in ([3], [4]):
        plan = api.plan_run(api.check(root))
        plan.threads = 2
        records = execute_plan(spark, plan, lambda e: None)
        assert [r.state for r in records] == ["SUCCEEDED"] * 4
        write_deltalake(str(root / "data" / "src"), pa.table({"id": rows}), mode="append")
    assert len(made) == 2, f"{len(made)} sessions made for 8 refreshes run two at a time"
    assert side_sessions(spark, 2) == made                 # the next run gets the same two
