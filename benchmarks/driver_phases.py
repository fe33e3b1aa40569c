"""What the driver does between Spark jobs: a Java Flight Recorder profile of the driver's JVM,
its CPU samples sorted into phases per timed refresh (refresh_profile.py `--jfr`).

refresh_profile.py tells a refresh's time inside Spark jobs from the driver's time outside them;
the second is often half of a small refresh and says nothing of its own. Sampled every 10 ms
(JFR's `profile` settings), the driver's threads show where it goes: analysing queries, the
optimizer, physical planning, generating code, serializing each job's tasks (their RDD graph,
once to check the closure and once to ship it), Delta's table state, scan planning and commits.
A sample is named by the innermost phase on its stack (code generation inside planning counts
as code generation). Executor threads are left out: in local mode they run the jobs' tasks,
which refresh_profile.py already times.

Needs `jfr` and `jcmd` (a JDK's); the recording is dumped from the live JVM with `jcmd`.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

SAMPLE_SECONDS = 0.01           # JFR's `profile` settings sample each running thread every 10 ms

JAVA_OPTIONS = "-XX:FlightRecorderOptions=stackdepth=1024 -XX:StartFlightRecording=settings=profile"

# (phase, markers): a frame containing a marker belongs to the phase; the innermost one names it
PHASES: list[tuple[str, tuple[str, ...]]] = [
    ("codegen", ("CodeGenerator$.doCompile", "org.codehaus.janino")),
    ("task serialization", ("JavaSerializerInstance.serialize", "ObjectOutputStream.writeObject",
                            "TorrentBroadcast.blockifyObject", "ClosureCleaner")),
    ("class loading", ("ClassLoader.loadClass",)),
    ("broadcast build", ("HashedRelation$.apply", "HashedRelationBroadcastMode.transform")),
    ("delta table state", ("SnapshotManagement", "Snapshot.<init>", "StateCache", "LogSegment")),
    ("delta scan planning", ("PrepareDeltaScan", "DataSkippingReader", "TahoeLogFileIndex")),
    ("delta commit", ("OptimisticTransactionImpl.commit", "OptimisticTransactionImpl.doCommit", "Checksum")),
    ("delta write command", ("WriteIntoDelta", "DeleteCommand", "MergeIntoCommand", "DeltaCommand")),
    ("analysis", ("Analyzer.executeAndCheck", "Analyzer.execute", "CheckAnalysis.checkAnalysis",
                  "QueryExecution.assertAnalyzed")),
    ("optimizer", ("Optimizer.execute", "QueryExecution.optimizedPlan")),
    ("physical planning", ("QueryExecution.sparkPlan", "QueryExecution$.prepareForExecution",
                           "AdaptiveSparkPlanExec.getFinalPhysicalPlan", "QueryPlanner.plan")),
    ("scheduler", ("DAGScheduler", "TaskSchedulerImpl", "TaskSetManager")),
    ("py4j", ("py4j.",)),
]
OTHER = "other"
_EXECUTOR = "Executor task launch"


def java_options(directory: Path) -> str:
    """The driver's Java options that start the recording (dumped into `directory` later)."""
    return f"{JAVA_OPTIONS},filename={directory / 'driver.jfr'}"


def dump(spark, directory: Path) -> Path:
    """The recording so far, written by the live driver JVM (`jcmd PID JFR.dump`)."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    target = directory / "driver-dump.jfr"
    subprocess.run([_tool("jcmd"), str(pid), "JFR.dump", f"filename={target}"], check=True,
                   capture_output=True)
    return target


def phase(frames: list[str]) -> str:
    """The phase a sample's stack (innermost frame first) belongs to."""
    for frame in frames:
        for name, markers in PHASES:
            if any(m in frame for m in markers):
                return name
    return OTHER


def samples(recording: Path):
    """(seconds of the local day, thread name, frames innermost first) of each CPU sample of the
    driver's own threads, read with `jfr print`."""
    out = subprocess.Popen([_tool("jfr"), "print", "--stack-depth", "400", "--events",
                            "jdk.ExecutionSample", str(recording)], stdout=subprocess.PIPE, text=True)
    yield from parse(out.stdout)
    out.wait()


def parse(lines):
    """The samples of `jfr print`'s text (see `samples`)."""
    at, thread, frames = None, "", []
    for line in lines:
        if line.startswith("jdk.ExecutionSample"):
            at, thread, frames = None, "", []
        elif line.startswith("  startTime = "):
            at = _seconds(line.split("=", 1)[1].strip())
        elif line.startswith("  sampledThread = "):
            thread = line.split('"')[1] if '"' in line else ""
        elif line.startswith("    ") and "(" in line:
            frames.append(line.strip().split("(")[0])
        elif line.startswith("}") and at is not None and not thread.startswith(_EXECUTOR):
            yield at, thread, frames


def by_window(recording: Path, windows: list[tuple[str, float, float]]) -> dict[str, Counter]:
    """Per window (label, start and end as epoch seconds), the driver's samples by phase."""
    days = [(label, _day_seconds(a), _day_seconds(b)) for label, a, b in windows]
    found: dict[str, Counter] = {label: Counter() for label, _, _ in windows}
    for at, _, frames in samples(recording):
        for label, a, b in days:
            if a <= at <= b:
                found[label][phase(frames)] += 1
                break
    return found


def report(found: dict[str, Counter]) -> str:
    """A markdown table: per window the driver's CPU seconds by phase (samples × 10 ms)."""
    names = [n for n, _ in PHASES] + [OTHER]
    used = [n for n in names if any(c[n] for c in found.values())]
    head = "| refresh | driver CPU (s) | " + " | ".join(used) + " |"
    rows = [head, "|---|---:|" + "---:|" * len(used)]
    for label, counts in found.items():
        total = sum(counts.values())
        cells = " | ".join(f"{counts[n] * SAMPLE_SECONDS:.2f}" for n in used)
        rows.append(f"| {label} | {total * SAMPLE_SECONDS:.2f} | {cells} |")
    return "\n".join(rows)


def _seconds(clock: str) -> float:
    """'19:38:31.712' as seconds of the day."""
    h, m, s = clock.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def _day_seconds(epoch: float) -> float:
    t = time.localtime(epoch)
    return t.tm_hour * 3600 + t.tm_min * 60 + t.tm_sec + (epoch % 1)


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"--jfr needs the JDK's `{name}` on the PATH")
    return found
