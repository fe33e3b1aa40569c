"""Killing `dt` never leaves a writer behind (real dt processes, real spark-submit, real Delta).

SIGKILL of dt's process group mid-run: its Spark application (in a session of its own) keeps
the warehouse lock it inherited, finishes the refresh in flight, starts no other, and exits;
a run started at once names that application (or, with --wait, waits for it). The commit log
of every DT shows the two runs never wrote at the same time, and the history has exactly one
row per committed refresh.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dtcli.project import load_project
from dtcli.state import history
from tests.e2e.kill_helpers import commits_by_run, committed_refreshes
from tests.helpers import DT_BIN, assert_matches_recompute, dt_process, write_project

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLES = {
    "paid": "SELECT order_id, customer_id, amount FROM orders WHERE status = 'paid'",
    # refreshed right after `paid` (ties in DAG order go by name) and slow on purpose: the kill
    # lands while the application is inside this refresh
    "nap": "SELECT order_id, reflect('java.lang.Thread', 'sleep', CAST(4000 AS BIGINT)) AS nap "
           "FROM {{ ref('paid') }} WHERE order_id = 1",
    "per_customer": "SELECT customer_id, COUNT(*) AS n, SUM(amount) AS total FROM {{ ref('paid') }} "
                    "GROUP BY customer_id",
    "ranked": "SELECT customer_id, total, RANK() OVER (PARTITION BY n ORDER BY total DESC) AS rnk "
              "FROM {{ ref('per_customer') }}",
}
SEEDS = {"orders": "order_id,customer_id,status,amount\n" + "\n".join(
    f"{i},{i % 7},{'paid' if i % 3 else 'open'},{i}" for i in range(1, 60))}


def start_dt(root: Path, *args: str) -> subprocess.Popen:
    """`dt run --all` as a CI job runs it: a process group of its own, output on a pipe."""
    return subprocess.Popen([str(DT_BIN), "run", "--all", "-p", str(root), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="200"),
                            start_new_session=True)


def test_sigkill_of_dt_process_group_leaves_no_second_writer(tmp_path, spark):
    root = write_project(tmp_path / "shop", TABLES, seeds=SEEDS)
    assert dt_process("seed", "-p", str(root)).returncode == 0

    first = start_dt(root)
    for line in first.stdout:
        if line.startswith("paid: SUCCEEDED"):     # `nap` is refreshing now
            os.killpg(first.pid, signal.SIGKILL)    # as CI cancels a job, or the OOM killer
            break
    first.wait()
    assert first.returncode == -signal.SIGKILL

    # at once: the lock is still held by the orphaned application, and the message names it
    refused = dt_process("run", "--all", "-p", str(root))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "is gone, but its Spark application" in refused.stderr, refused.stderr
    assert "spark-submit pid" in refused.stderr, refused.stderr

    started = time.monotonic()
    queued = start_dt(root, "--wait", "600")
    out = queued.communicate(timeout=900)[0]
    assert queued.returncode == 0, out
    print(f"the queued run took {time.monotonic() - started:.1f}s")

    project = load_project(root)
    runs = commits_by_run(project, TABLES)
    # Every DT's commits, in version order, come from one run and then the other, and nothing
    # the second run committed is older than anything the first run's application committed.
    assert len(runs) == 2, runs
    (old, old_commits), (new, new_commits) = runs
    assert max(c.timestamp for c in old_commits) < min(c.timestamp for c in new_commits)
    for name in TABLES:
        order = [c.run_id for c in sorted(old_commits + new_commits, key=lambda c: c.version) if c.name == name]
        assert order == sorted(order, key=lambda r: r != old), (name, order)
    # the orphan finished `nap` after dt died, and recorded the refreshes it did not start
    assert [c.name for c in old_commits if c.name == "nap"] == ["nap"]
    rows = history.read(project.warehouse)
    gone = [r for r in rows if r.run_id == old and r.state == "FAILED"]
    assert gone and all(r.state_code == "DT_PROCESS_GONE" and "is gone" in r.state_message for r in gone), gone
    assert {r.name for r in gone} == {"per_customer", "ranked"}
    # exactly one history row per committed refresh
    committed = committed_refreshes(project, TABLES)
    succeeded = [(r.name, r.run_id) for r in rows if r.state == "SUCCEEDED" and r.refresh_action != "NO_DATA"]
    assert sorted(succeeded) == sorted(committed), (succeeded, committed)
    for name in TABLES:
        if name != "nap":          # nap's sleeping column is not typed like its recompute's
            assert_matches_recompute(spark, project, name)
