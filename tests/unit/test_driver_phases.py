"""benchmarks/driver_phases.py: the driver's JFR samples sorted into phases (no JVM)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import driver_phases

TEXT = """jdk.ExecutionSample {
  startTime = 19:38:31.712
  sampledThread = "Thread-26" (javaThreadId = 80)
  state = "STATE_RUNNABLE"
  stackTrace = [
    java.io.ObjectOutputStream$HandleTable.lookup(Object) line: 2334
    org.apache.spark.serializer.JavaSerializerInstance.serialize(Object, ClassTag) line: 115
    org.apache.spark.sql.catalyst.analysis.Analyzer.executeAndCheck(LogicalPlan, QueryPlanningTracker) line: 230
  ]
}

jdk.ExecutionSample {
  startTime = 19:38:32.001
  sampledThread = "Executor task launch worker-0" (javaThreadId = 90)
  state = "STATE_RUNNABLE"
  stackTrace = [
    org.apache.spark.sql.catalyst.analysis.Analyzer.executeAndCheck(LogicalPlan, QueryPlanningTracker) line: 230
  ]
}

jdk.ExecutionSample {
  startTime = 19:38:40.500
  sampledThread = "dag-scheduler-event-loop" (javaThreadId = 40)
  state = "STATE_RUNNABLE"
  stackTrace = [
    java.util.HashMap.get(Object) line: 1
    org.apache.spark.scheduler.DAGScheduler.submitMissingTasks(Stage, int) line: 1500
  ]
}
"""


def test_the_innermost_phase_names_a_sample():
    # serialization inside analysis is serialization; a stack of no known phase is other
    assert driver_phases.phase(["java.io.X.y", "org.apache.spark.serializer.JavaSerializerInstance.serialize",
                                "org.apache.spark.sql.catalyst.analysis.Analyzer.execute"]) == "task serialization"
    assert driver_phases.phase(["org.apache.spark.sql.catalyst.analysis.Analyzer.execute",
                                "org.apache.spark.sql.execution.QueryExecution.sparkPlan"]) == "analysis"
    assert driver_phases.phase(["java.lang.Object.wait"]) == driver_phases.OTHER


def test_jfr_text_parses_into_driver_samples_executors_left_out():
    found = list(driver_phases.parse(TEXT.splitlines(keepends=True)))
    assert [(round(at, 3), thread) for at, thread, _ in found] == [
        (19 * 3600 + 38 * 60 + 31.712, "Thread-26"), (19 * 3600 + 38 * 60 + 40.5, "dag-scheduler-event-loop")]
    assert [driver_phases.phase(frames) for _, _, frames in found] == ["task serialization", "scheduler"]


def test_the_report_gives_seconds_per_phase_per_refresh():
    text = driver_phases.report({"q06 INCREMENTAL #1": Counter({"analysis": 120, "scheduler": 5}),
                                 "q06 FULL #2": Counter({"analysis": 30})})
    lines = text.splitlines()
    assert lines[0] == "| refresh | driver CPU (s) | analysis | scheduler |"
    assert lines[2] == "| q06 INCREMENTAL #1 | 1.25 | 1.20 | 0.05 |"
    assert lines[3] == "| q06 FULL #2 | 0.30 | 0.30 | 0.00 |"
