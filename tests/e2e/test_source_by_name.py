"""A source declared by table name (`table: raw.orders`) through the real `dt` process and
spark-submit, over the project-local Derby metastore: looked up once, refreshed incrementally
like a path source, reinitialized with a reason when the name is given to a new table, and a
name no metastore resolves is bad input (exit 2, file and line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO, dt_process, no_java_env, write_project

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

SESSION = """
import json, sys
from dtcli.engine.launch.session import project_session
from dtcli.project import load_project
spark = project_session(load_project(sys.argv[1]))
for statement in sys.argv[2:]:
    spark.sql(statement)
rows = spark.sql("SELECT order_id, amount FROM raw.orders WHERE amount > 2 ORDER BY order_id").collect()
paid = spark.read.format("delta").load(sys.argv[1] + "/warehouse/paid").orderBy("order_id").collect() \\
    if __import__("os").path.isdir(sys.argv[1] + "/warehouse/paid") else []
print(json.dumps({"query": [list(r) for r in rows], "paid": [list(r) for r in paid]}))
spark.stop()
"""
CREATE = ("CREATE TABLE raw.orders (order_id INT, amount INT) USING delta "
          "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")


def _spark(root, *statements: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SESSION, str(root), *statements], capture_output=True,
                          text=True, cwd=root, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _results(root) -> dict:
    doc = json.loads((root / "target" / "run_results.json").read_text())
    return {r["name"]: r for r in doc["results"]}


def test_a_source_by_name_is_looked_up_refreshed_incrementally_and_reinitialized_when_replaced(tmp_path):
    config = "sources:\n  orders:\n    table: raw.orders\n"
    root = write_project(tmp_path / "shop", {"paid": "SELECT order_id, amount FROM orders WHERE amount > 2"},
                         config=config)
    _spark(root, "CREATE SCHEMA raw", CREATE, "INSERT INTO raw.orders VALUES (1, 1), (2, 3), (3, 5), (NULL, 9)")

    never = dt_process("validate", "-p", str(root), env=no_java_env())
    assert never.returncode == 2
    assert "raw.orders" in never.stderr and "dt_project.yml:" in never.stderr and "dt run" in never.stderr

    created = dt_process("run", "-p", str(root), cwd=root)
    assert created.returncode == 0, created.stderr
    assert "looking up raw.orders in the metastore" in created.stderr
    assert _results(root)["paid"]["refresh_action"] == "FULL"
    assert dt_process("validate", "-p", str(root), env=no_java_env()).returncode == 0   # remembered

    _spark(root, "INSERT INTO raw.orders VALUES (4, 7), (5, 3)", "UPDATE raw.orders SET amount = 0 "
                  "WHERE order_id = 2", "DELETE FROM raw.orders WHERE order_id = 3")
    changed = dt_process("run", "-p", str(root), "--all", cwd=root)
    assert changed.returncode == 0, changed.stderr
    assert "looking up" not in changed.stderr
    assert _results(root)["paid"]["refresh_action"] == "INCREMENTAL"
    after = _spark(root)
    assert sorted(map(tuple, after["paid"]), key=str) == sorted(map(tuple, after["query"]), key=str)
    assert after["query"] == [[None, 9], [4, 7], [5, 3]]

    _spark(root, "DROP TABLE raw.orders", CREATE, "INSERT INTO raw.orders VALUES (7, 70)")
    replaced = dt_process("run", "-p", str(root), "--all", cwd=root)
    assert replaced.returncode == 0, replaced.stderr
    paid = _results(root)["paid"]
    assert paid["refresh_action"] == "REINITIALIZE", paid
    assert "source orders (raw.orders) is another table now" in paid["reinit_reason"]
    assert _spark(root)["paid"] == [[7, 70]]

    (root / "dt_project.yml").write_text((root / "dt_project.yml").read_text()
                                         + "  returns:\n    table: raw.returns\n")
    (root / "tables" / "refunds.sql").write_text("SELECT order_id FROM returns\n")
    missing = dt_process("run", "-p", str(root), cwd=root)
    assert missing.returncode == 2, missing.stderr
    assert "dt_project.yml:" in missing.stderr and "raw.returns" in missing.stderr
    assert not (root / "warehouse" / "refunds").exists()
