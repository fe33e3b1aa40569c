"""What a run reports: target/run_results.json and `--format json` (one failing and one
succeeding DT, through the real CLI with the plan run in this process's SparkSession), and
the Spark progress of a long refresh while it runs."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from dtcli import api
from dtcli.engine.runtime.executor import execute_plan
from dtcli.engine.runtime.progress import SparkProgress
from dtcli.events import to_wire
from dtcli.model import FAILED, SUCCEEDED
from dtcli.ui.progress import RunProgress
from tests.artifact_helpers import schema_errors
from tests.helpers import dt, write_project
from tests.sched_helpers import SRC_CONFIG, in_process, write_source

pytestmark = pytest.mark.spark


@pytest.fixture
def spark_in_cli(spark, monkeypatch):
    """`dt run` in this process runs its plan in the shared session instead of spark-submit."""
    import dtcli.engine.launch.launcher as launcher

    monkeypatch.setattr(launcher, "launch", in_process(spark))


def test_run_results_hold_the_failure_and_the_success_and_format_json_prints_them(tmp_path, spark, spark_in_cli):
    root = write_project(tmp_path / "p", {
        "good": "SELECT x, x * 2 AS doubled FROM src",
        "bad": "SELECT x,\n       10 / (x - x) AS boom\nFROM src",      # ANSI: division by zero
    }, config=SRC_CONFIG)
    write_source(api.load(root), [1, 2, 3])

    result = dt("run", "-p", str(root), "--format", "json")
    assert result.code == 1, result.err
    printed = json.loads(result.out)                         # stdout holds the document only
    written = json.loads((root / "target" / "run_results.json").read_text())
    assert printed == written
    assert schema_errors("run_results", written) == []       # docs/schemas/run_results.v1.schema.json
    by_name = {r["name"]: r for r in written["results"]}
    assert set(by_name) == {"good", "bad"}
    good, bad = by_name["good"], by_name["bad"]
    assert (good["state"], good["refresh_action"], good["refresh_trigger"]) == (SUCCEEDED, "FULL", "CREATION")
    assert good["statistics"] == {"num_inserted_rows": 3, "num_deleted_rows": 0, "num_copied_rows": 0}
    assert good["state_message"] is None and good["state_code"] == "SUCCESS"
    assert good["timing"][0]["name"] == "refresh" and good["execution_time"] >= 0
    assert bad["state"] == FAILED and bad["state_code"] == "DIVIDE_BY_ZERO", json.dumps(bad)
    assert bad["state_message"].startswith("tables/bad.sql: [DIVIDE_BY_ZERO]")
    assert good["query_id"] == bad["query_id"] == f"{spark.sparkContext.applicationId}/{written['run_id']}"
    assert written["success"] is False and written["summary"]["failed"] == 1
    assert written["metadata"]["command"] == "run" and written["args"]["all"] is False
    assert "1 succeeded, 1 failed" in result.err                # the summary went to stderr

    # the refresh history says the same, with Snowflake's newer columns
    history = dt("show", "refresh-history", "bad", "-p", str(root), "-f", "json").json()[0]
    assert {k: history[k] for k in ("state_code", "query_id", "target_lag_sec")} == {
        "state_code": "DIVIDE_BY_ZERO", "query_id": bad["query_id"], "target_lag_sec": 3600}

    # a run with nothing to do writes its (empty) results too, and `dt refresh` does as well
    again = dt("run", "-p", str(root), "--select", "good", "-f", "json")
    assert again.code == 0 and again.json()["results"] == []
    assert again.json()["not_refreshed"][0]["name"] == "good"
    refreshed = dt("refresh", "good", "-p", str(root), "-f", "json")
    assert refreshed.code == 0
    doc = json.loads((root / "target" / "run_results.json").read_text())
    assert doc == refreshed.json() and doc["metadata"]["command"] == "refresh"
    assert [(r["name"], r["refresh_action"], r["refresh_trigger"]) for r in doc["results"]] == \
        [("good", "NO_DATA", "MANUAL")]


SLOW = """
SELECT s.x, COUNT(*) AS n
FROM src AS s CROSS JOIN range(0, 600000, 1, 24) AS r
WHERE (r.id + s.x) % 7 = 3
GROUP BY s.x
"""


def test_a_long_refresh_reports_spark_progress_while_it_runs(tmp_path, spark):
    root = write_project(tmp_path / "p", {"slow": SLOW}, config=SRC_CONFIG)
    write_source(api.load(root), list(range(40)))
    checked = api.check(root)
    plan = api.plan_run(checked, ["slow"])
    typed: list = []
    progress = SparkProgress(spark, typed.append, poll=0.1, heartbeat=0.5)
    try:
        records = execute_plan(spark, plan, progress.emit, write_history=False)
    finally:
        progress.close()
    assert records[0].state == SUCCEEDED, records[0].state_message
    events = [to_wire(e) for e in typed]      # as the wire carries them
    finished = next(i for i, e in enumerate(events) if e["event"] == "finished")
    updates = [e for e in events[:finished] if e["event"] == "progress"]
    assert len(updates) >= 2, events
    assert all(u["name"] == "slow" for u in updates)
    assert [u["elapsed"] for u in updates] == sorted(u["elapsed"] for u in updates)
    done = [u["tasks_done"] for u in updates]
    assert done == sorted(done) and updates[-1]["tasks_total"] >= 24 and updates[-1]["stages_total"] >= 1
    assert not [e for e in events[finished:] if e["event"] == "progress"]   # stops with the refresh

    # outside a terminal each update becomes a plain line (here: every update, plain_every=0)
    out = io.StringIO()
    view = RunProgress(1, Console(file=out, width=200, force_terminal=False), plain_every=0.0)
    for event in typed:
        view(event)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("slow: running, Spark stages")]
    assert len(lines) == len(updates) >= 2
    assert out.getvalue().rstrip().splitlines()[-1].startswith("slow: SUCCEEDED FULL")
