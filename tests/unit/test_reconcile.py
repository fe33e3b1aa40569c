"""Without a JVM: history reconciliation records what a killed run committed but did not write
down, and the refreshes a dead run planned but never finished."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake

from dtcli import api
from dtcli.model import Frontier
from dtcli.state import history, ledger, reconcile
from dtcli.state.delta_log import frontier_metadata
from dtcli.state.owner import start_time
from tests.helpers import dt, write_project

TABLES = {"a": "SELECT x FROM src", "b": "SELECT x FROM {{ ref('a') }} WHERE x > 1"}


def _project(tmp_path):
    root = write_project(tmp_path / "p", TABLES, config="sources:\n  src: {path: data/src}\n")
    write_deltalake(str(root / "data" / "src"), pa.table({"x": pa.array([1, 2, 3], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    return root


def _commit(project, name: str, rows: list[int], run_id: str, action: str = "FULL", mode: str = "overwrite"):
    """A refresh's commit as the engine makes it: data and frontier together."""
    frontier = Frontier({"src": 0}, "h", "2026-01-01T00:00:00+00:00", run_id, action, "FULL")
    write_deltalake(project.table_path(name), pa.table({"x": pa.array(rows, pa.int64())}), mode=mode,
                    commit_properties=CommitProperties(custom_metadata={"userMetadata": frontier_metadata(frontier)}))


def test_a_commit_without_a_history_row_gets_exactly_one(tmp_path):
    root = _project(tmp_path)
    project = api.load(root)
    _commit(project, "a", [1, 2, 3], "r1")
    _commit(project, "a", [4], "r2", action="INCREMENTAL", mode="append")
    ledger.append(project.warehouse, [reconcile.record_for_commit(
        "a", reconcile.frontier_commits(project.table_path("a"), -1, 0), None)])   # r1 was recorded

    shown = dt("show", "refresh-history", "-p", str(root), "--format", "json")
    assert shown.code == 0, shown.err
    rows = [(r["name"], r["run_id"], r["refresh_action"], r["state"]) for r in shown.json()]
    assert sorted(rows) == [("a", "r1", "FULL", "SUCCEEDED"), ("a", "r2", "INCREMENTAL", "SUCCEEDED")]
    r2 = next(r for r in history.read(project.warehouse) if r.run_id == "r2")
    assert r2.table_version == 1 and r2.num_inserted_rows == 1 and "interrupted" in r2.state_message
    assert r2.source_versions == {"src": 0}

    again = dt("show", "dynamic", "tables", "-p", str(root))       # nothing more to record
    assert again.code == 0, again.err
    assert len(history.read(project.warehouse)) == 2


def test_a_dead_runs_unfinished_refreshes_are_recorded_failed(tmp_path):
    root = _project(tmp_path)
    checked = api.check(root)
    plan = api.plan_run(checked)
    run_dir = root / "target" / "runs" / plan.run_id
    run_dir.mkdir(parents=True)
    (run_dir / "plan.json").write_text(plan.to_json())
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    (run_dir / "owner").write_text(f"{proc.pid}:{start_time(proc.pid)}\n")
    project = checked.project
    _commit(project, "a", [1, 2, 3], plan.run_id)          # `a` committed; then dt died

    new, dead = reconcile.missing(project, {"a": None, "b": None}, [])
    assert new == [] and dead == []                         # its dt still runs: not ours to record
    proc.kill()
    proc.wait()
    tables = api.check(root).snapshot.tables
    added = reconcile.reconcile(project, tables)
    assert [(r.name, r.state) for r in added] == [("a", "SUCCEEDED"), ("b", "FAILED")]
    failed = added[1]
    assert failed.state_code == "DT_PROCESS_GONE" and f"dt (pid {proc.pid})" in failed.state_message
    assert (run_dir / "recorded").exists()
    assert reconcile.reconcile(project, tables) == []
    assert reconcile.committed_in_run("a", project.table_path("a"), plan.run_id).table_version == 0
    assert reconcile.committed_in_run("b", project.table_path("b"), plan.run_id) is None
