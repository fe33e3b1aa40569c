"""Through the real `dt` process and spark-submit: create, NO_DATA without Java, crash safety (one
scenario, so that its Spark applications are three)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from dtcli.engine.launch import class_archive
from dtcli.engine.launch.launcher import class_archive_of
from dtcli.project import load_project
from dtcli.state import history
from dtcli.state.delta_log import table_info
from tests.e2e.kill_helpers import descendants, is_java
from tests.e2e.shop_project import SEEDS, TABLES, change_shop_sources
from tests.helpers import DT_BIN, assert_matches_recompute, dt_process, no_java_env, write_project

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

def _java_descendants(pid: int) -> list[int]:
    return [p for p in descendants(pid) if is_java(p)]


# A custom incremental table (issue 10) in the killed run, an audit of every change of orders,
# named to be refreshed right after `paid` (ties go by name), so the kill lands on or before it; each change of orders must reach it
# exactly once. orders has a RELY key, so delta-rs's file rewrites compact to the real changes.
ORDER_LOG = """REFRESH USING (
  INSERT INTO SELF
  SELECT order_id, status, METADATA$ACTION AS action, METADATA$ISUPDATE AS is_update
  FROM orders CHANGES(INFORMATION => DEFAULT)
)"""
ORDER_LOG_YML = ("columns: [{name: order_id, type: BIGINT}, {name: status, type: STRING}, "
                 "{name: action, type: STRING}, {name: is_update, type: BOOLEAN}]\n")


def test_create_no_data_without_java_then_a_jvm_kill_loses_nothing(tmp_path, spark):
    """One project through the real process: creation, a NO_DATA run that starts no JVM, then a
    change whose run loses its spark-submit JVM (SIGKILL) after one DT committed; the next run
    completes it, and the custom audit table saw each change of orders exactly once."""
    root = write_project(tmp_path / "shop", {**TABLES, "paid_audit": ORDER_LOG}, seeds=SEEDS,
                         table_yml={"paid_audit": ORDER_LOG_YML})
    (root / "seeds" / "orders.yml").write_text("columns:\n  amount: decimal(10,2)\n  customer_id: int\n"
                                               "primary_key: [order_id]\nrely: true\n")
    assert dt_process("seed", "-p", str(root)).returncode == 0

    # 1. creation, through spark-submit
    first = dt_process("run", "-p", str(root))
    assert first.returncode == 0, first.stderr
    project = load_project(root)
    for name in TABLES:
        assert_matches_recompute(spark, project, name)
    assert table_info(project.table_path("paid")).columns == ("order_id", "customer_id", "amount")
    results = json.loads((root / "target" / "run_results.json").read_text())
    assert {r["name"]: (r["state"], r["refresh_trigger"]) for r in results["results"]} == \
        dict.fromkeys([*TABLES, "paid_audit"], ("SUCCEEDED", "CREATION"))
    assert all(r["query_id"].endswith("/" + results["run_id"]) for r in results["results"])
    # the driver JVM's class archive for this Java and these jars is there after a run that
    # ended (this run wrote it, or an earlier one did: `spark.class_archive: auto`)
    archive = class_archive_of(project, write=False)
    assert archive is not None and class_archive.is_archive(archive.path)

    # 2. --all: every DT is due now (ignoring lag), so each must be decided NO_DATA from the logs
    started = time.monotonic()
    again = dt_process("run", "--all", "-p", str(root), "--format", "json", env=no_java_env())
    took = time.monotonic() - started
    assert again.returncode == 0, again.stderr
    assert "(no Spark needed)" in again.stderr                  # the summary; stdout is the JSON
    assert json.loads(again.stdout) == json.loads((root / "target" / "run_results.json").read_text())
    assert {r["refresh_action"] for r in json.loads(again.stdout)["results"]} == {"NO_DATA"}
    latest = history.latest_per_table(history.read(project.warehouse))
    assert {n: latest[n].refresh_action for n in TABLES} == dict.fromkeys(TABLES, "NO_DATA")
    print(f"NO_DATA run without Java took {took:.2f}s wall")

    # 3. a change, and the run refreshing it loses its JVM once `paid` committed
    before = {n: table_info(project.table_path(n)).version for n in TABLES}
    change_shop_sources(root)
    proc = subprocess.Popen([str(DT_BIN), "run", "--all", "-p", str(root)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="200"))
    killed = False
    for line in proc.stdout:
        if line.startswith("paid: SUCCEEDED"):   # one DT committed, the others not yet
            for pid in _java_descendants(proc.pid):
                os.kill(pid, signal.SIGKILL)
                killed = True
            break
    rest = proc.stdout.read()
    assert proc.wait(timeout=300) == 1, rest
    assert killed
    assert "spark-submit exited with code" in rest or "FAILED" in rest

    after = {n: table_info(project.table_path(n)) for n in TABLES}
    assert after["paid"].version == before["paid"] + 1
    for name in TABLES:
        assert after[name] is not None                       # readable, at a committed version
        assert_matches_recompute(spark, project, name)        # and consistent with its frontier
    unchanged = [n for n in TABLES if after[n].version == before[n]]
    assert unchanged, "the kill came too late to interrupt the run"

    # 4. the next run completes what the kill interrupted
    final = dt_process("run", "--all", "-p", str(root))
    assert final.returncode == 0, final.stderr
    orders_version = table_info(str(root / "warehouse" / "orders")).version
    for name in TABLES:
        assert_matches_recompute(spark, project, name)
    assert table_info(project.table_path("paid")).frontier.source_versions["orders"] == orders_version
    paid = [r for r in history.read(project.warehouse)       # the killed run's refresh of paid
            if r.name == "paid" and r.refresh_trigger != "CREATION" and r.refresh_action != "NO_DATA"]
    assert [(r.inputs_with_changed_data, r.source_versions["orders"]) for r in paid] == [(["orders"], orders_version)]

    log = sorted(tuple(r) for r in spark.read.format("delta").load(project.table_path("paid_audit"))
                 .select("order_id", "status", "action", "is_update").collect())
    created = [(i, "paid" if i % 3 else "open", "INSERT", False) for i in range(1, 60)]
    changed = [(4, "paid", "DELETE", True), (4, "open", "INSERT", True), (5, "paid", "DELETE", False)]
    assert log == sorted(created + changed)       # every change once: none lost, none repeated
