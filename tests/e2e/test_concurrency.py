"""Two real `dt run` processes on one warehouse: the second queues behind the warehouse lock,
plans from what the first committed, and every DT ends equal to a full recompute."""

from __future__ import annotations

import os
import subprocess

import pytest

from dtcli.project import load_project
from dtcli.state import history
from tests.helpers import DT_BIN, assert_matches_recompute, dt_process, write_project

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLES = {
    "paid": "SELECT order_id, amount FROM orders WHERE status = 'paid'",
    "totals": "SELECT COUNT(*) AS n, SUM(amount) AS total FROM {{ ref('paid') }}",
    "by_status": "SELECT status, COUNT(*) AS n FROM orders GROUP BY status",
}
SEEDS = {"orders": "order_id,status,amount\n" + "\n".join(
    f"{i},{'paid' if i % 3 else 'open'},{i}" for i in range(1, 40))}


def test_two_concurrent_runs_serialise_and_leave_every_dt_exact(spark, tmp_path):
    root = write_project(tmp_path / "shop", TABLES, seeds=SEEDS)
    assert dt_process("seed", "-p", str(root)).returncode == 0
    env = dict(os.environ, COLUMNS="200")
    procs = [subprocess.Popen([str(DT_BIN), "run", "--all", "--wait", "600", "-p", str(root)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outputs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert sum("waiting up to 600 s for the warehouse lock" in err for _, err in outputs) == 1, outputs

    project = load_project(root)
    rows = history.read(project.warehouse)
    # One run created the DTs; the other, planning only once it held the lock, found nothing new.
    assert sorted(r.refresh_action for r in rows) == ["FULL"] * 3 + ["NO_DATA"] * 3
    for name in TABLES:
        assert_matches_recompute(spark, project, name)
