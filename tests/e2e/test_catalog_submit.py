"""`catalog:` through the real `dt` process and spark-submit: a metastore that cannot be reached
starts no refresh (Spark resolves every Delta statement through it) and names itself and the
fix; the next run creates the DT and registers it in the project-local Derby
metastore (under the warehouse's _dt/, nothing in the working directory), where another Spark
application finds the DT by name."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, dt_process, write_project

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

READ = """
import json, sys
from dtcli.engine.launch.session import project_session
from dtcli.project import load_project
spark = project_session(load_project(sys.argv[1]))
rows = spark.table("analytics.paid").orderBy("order_id").collect()
print(json.dumps([[r.order_id, r.amount] for r in rows]))
spark.stop()
"""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_metastore_starts_no_refresh_and_the_next_run_registers_in_derby(tmp_path):
    port = _closed_port()
    config = ("catalog: {schema: analytics}\ntargets:\n  down:\n    spark:\n      conf:\n"
              "        spark.sql.catalogImplementation: hive\n"
              f"        spark.hadoop.hive.metastore.uris: 'thrift://127.0.0.1:{port}'\n"
              "        spark.hadoop.hive.metastore.connect.retries: '1'\n")
    root = write_project(tmp_path / "shop", {"paid": "SELECT order_id, amount FROM orders WHERE amount > 2"},
                         seeds={"orders": "order_id,amount\n1,1\n2,3\n3,5\n"}, config=config)
    assert dt_process("seed", "-p", str(root)).returncode == 0

    down = dt_process("run", "-p", str(root), "-t", "down", cwd=root)
    assert down.returncode == 1, down.stderr
    assert f"the Hive metastore at thrift://127.0.0.1:{port} cannot be reached" in down.stderr
    assert "no refresh was started" in down.stderr and "spark.hadoop.hive.metastore.uris" in down.stderr
    results = json.loads((root / "target" / "run_results.json").read_text())
    assert [r["state"] for r in results["results"]] == ["FAILED"]
    assert not list((root / "warehouse").glob("**/paid/_delta_log")), "nothing may be written"

    up = dt_process("run", "-p", str(root), cwd=root)     # the local Derby metastore
    assert up.returncode == 0, up.stderr
    assert "registered paid as analytics.paid" in up.stderr
    assert (root / "warehouse" / "_dt" / "metastore" / "metastore_db").is_dir()
    assert not (root / "metastore_db").exists() and not (root / "derby.log").exists()
    assert not (root / "spark-warehouse").exists()

    read = subprocess.run([sys.executable, "-c", READ, str(root)], capture_output=True, text=True,
                          cwd=root, timeout=600, env=_env())
    assert read.returncode == 0, read.stderr[-3000:]
    assert json.loads(read.stdout.strip().splitlines()[-1]) == [[2, 3], [3, 5]]


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(Path(REPO))}
