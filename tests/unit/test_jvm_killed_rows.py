"""Without a JVM: the Spark application's JVM killed after its driver recorded a refresh, before
dt heard of it (the driver's events reach dt through the JVM), leaves exactly one history row
per refresh. A stand-in spark-submit starts a stand-in driver, says Started, and exits as a
killed JVM does (code 137, no Done); the driver, orphaned, commits `a` and appends its row, as
the real one does in a refresh the kill did not stop: either before the JVM dies or just after
(the random-kill fault test's "kill jvm" points found both rows of such a refresh in the history:
the driver's and the one dt recovered from the commit)."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dtcli import api
from dtcli.api.runs import execute, spark_submit
from dtcli.engine.launch import launcher
from dtcli.state import history
from tests.helpers import write_project

TABLES = {"a": "SELECT x FROM src", "b": "SELECT x FROM {{ ref('a') }} WHERE x > 1"}

# The driver: `a` refreshed (committed with its frontier, then its row appended), after `delay` s
DRIVER = """
import sys, time
import pyarrow as pa
from deltalake import CommitProperties, write_deltalake
from dtcli.model import SUCCEEDED, Frontier, Plan
from dtcli.state import ledger
from dtcli.state.delta_log import frontier_metadata

plan = Plan.from_json(open(sys.argv[1]).read())
time.sleep(float(sys.argv[2]))
step, start = next(s for s in plan.spark_steps if s.name == "a"), ledger.now()
frontier = Frontier({"src": 0}, step.definition_hash, plan.data_timestamp, plan.run_id, step.action, "FULL")
write_deltalake(step.path, pa.table({"x": pa.array([1, 2, 3], pa.int64())}), mode="overwrite",
                commit_properties=CommitProperties(custom_metadata={"userMetadata": frontier_metadata(frontier)}))
ledger.append(plan.warehouse, [ledger.refreshed(plan, step, SUCCEEDED, start)])
"""

# spark-submit: starts the driver (its stdout not dt's pipe: the real one's goes through the JVM),
# says Started naming it, then dies as a killed JVM, after the driver's row (`delay` 0) or before
SUBMIT = """#!{python}
import json, subprocess, sys
from dtcli.engine.protocol import EVENT_PREFIX
from dtcli.events import Started, to_wire
from dtcli.state.owner import token

args = sys.argv[1:]
plan = args[next(k for k, a in enumerate(args) if a.endswith("driver.py")) + 1]
driver = subprocess.Popen([sys.executable, {driver!r}, plan, "{delay}"], stdout=subprocess.DEVNULL)
print(EVENT_PREFIX + json.dumps(to_wire(Started(token(driver.pid)))), flush=True)
if {delay} == 0:
    driver.wait()
sys.exit(137)
"""


@pytest.mark.parametrize("delay", [0, 1.5], ids=["row-before-the-kill", "row-after-the-kill"])
def test_a_refresh_the_driver_recorded_is_not_recorded_again(tmp_path, monkeypatch, delay):
    root = write_project(tmp_path / "p", TABLES, config="sources:\n  src: {path: data/src}\n")
    write_deltalake(str(root / "data" / "src"), pa.table({"x": pa.array([1, 2, 3], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    submit = tmp_path / "spark" / "bin" / "spark-submit"
    submit.parent.mkdir(parents=True)
    submit.write_text(SUBMIT.format(python=sys.executable, driver=str(driver), delay=delay))
    submit.chmod(0o755)
    monkeypatch.setenv("SPARK_HOME", str(submit.parents[1]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(launcher, "driver_conf", lambda project: {})     # no jars to resolve
    monkeypatch.setattr(launcher, "class_archive_of", lambda *a, **k: None)

    checked = api.check(root)
    plan = api.plan_run(checked)
    result = execute(checked, plan, launcher=spark_submit)

    rows = [r for r in history.read(checked.project.warehouse) if r.run_id == plan.run_id]
    assert Counter(r.name for r in rows) == {"a": 1, "b": 1}, [(r.name, r.state, r.state_code) for r in rows]
    states = {r.name: (r.state, r.state_code) for r in rows}
    assert states == {"a": ("SUCCEEDED", "SUCCESS"), "b": ("FAILED", "SPARK_APPLICATION_EXITED")}
    # the run's own account (summary, run_results) tells what the history tells
    assert {r.name: (r.state, r.state_code) for r in result.records} == states
