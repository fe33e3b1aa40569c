"""A Spark setting the application rejects, through the real `dt` process and spark-submit:
one run error in Spark's words, exit 1, and records that do not count toward auto-suspension."""

from __future__ import annotations

import json

import pytest

from tests.helpers import dt_process, write_project

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def test_an_invalid_spark_setting_is_one_run_error_in_sparks_words(tmp_path):
    config = ("targets:\n  typo:\n    spark:\n      conf:\n"
              "        spark.sql.shuffle.partitions: notanumber\n")
    root = write_project(tmp_path / "shop", {"paid": "SELECT order_id, amount FROM orders WHERE amount > 2",
                                             "big": "SELECT order_id FROM paid WHERE amount > 4"},
                         seeds={"orders": "order_id,amount\n1,1\n2,3\n3,5\n"}, config=config)
    assert dt_process("seed", "-p", str(root)).returncode == 0

    run = dt_process("run", "-p", str(root), "-t", "typo", cwd=root)
    assert run.returncode == 1, run.stderr
    assert run.stderr.count("error: the Spark application did not start") == 1
    assert "[INVALID_CONF_VALUE.TYPE_MISMATCH]" in run.stderr and "spark.sql.shuffle.partitions" in run.stderr
    assert "FAILED" not in run.stdout + run.stderr        # no refresh is reported as run and failed
    results = json.loads((root / "target" / "run_results.json").read_text())
    assert results["success"] is False
    assert {r["state"] for r in results["results"]} == {"FAILED"}
    history = json.loads(dt_process("show", "refresh-history", "-p", str(root), "--format", "json").stdout)
    assert {h["state_code"] for h in history} == {"APPLICATION_NOT_STARTED"}
    assert not (root / "warehouse" / "paid").exists()
