"""Spark progress of the refreshes in flight, polled from the status tracker and sent as events.

Each refresh runs its Spark jobs under a job group of its own (`job_group`; set by the executor
on the thread that runs it, which every job started from that thread inherits, Delta's own
included), so jobs are told apart even when refreshes run side by side.

The poller is one daemon thread. Every event, its own and the executor's, goes through
`emit` under one lock, so lines on the driver's stdout never interleave.
"""

from __future__ import annotations

import threading
import time

from dtcli.events import Events, PlanStarted, RefreshFinished, RefreshProgress, RefreshStarted, RunEvent

POLL_SECONDS = 0.5        # how often the status tracker is read
HEARTBEAT_SECONDS = 5.0   # an event at least this often while a refresh runs, changed or not


def job_group(run_id: str, name: str) -> str:
    return f"dt:{run_id}:{name}"


class SparkProgress:
    """Wraps the driver's `emit`: forwards every event and, while refreshes run, adds a
    `RefreshProgress` for each when its numbers change (and a heartbeat otherwise)."""

    def __init__(self, spark, emit: Events, *, poll: float = POLL_SECONDS,
                 heartbeat: float = HEARTBEAT_SECONDS):
        self._tracker = spark.sparkContext.statusTracker()
        self._emit, self._poll, self._heartbeat = emit, poll, heartbeat
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._run_id = ""
        self._current: dict[str, float] = {}            # refresh -> when it started
        self._last: dict[str, tuple[tuple, float]] = {}  # refresh -> last numbers sent, when
        self._thread = threading.Thread(target=self._run, name="dt-progress", daemon=True)
        self._thread.start()

    def emit(self, event: RunEvent) -> None:
        with self._lock:
            if isinstance(event, PlanStarted):        # the run whose refreshes' job groups are polled
                self._run_id = event.run_id or self._run_id
            elif isinstance(event, RefreshStarted):
                self._current[event.name] = time.monotonic()
                self._last[event.name] = ((), time.monotonic())
            elif isinstance(event, RefreshFinished):
                name = event.record.name
                self._current.pop(name, None)
                self._last.pop(name, None)
            self._emit(event)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    # -- the poller ---------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self._tick()
            except Exception:   # broad: a thread boundary; progress is best effort, a failed poll ends nothing
                pass

    def _tick(self) -> None:
        with self._lock:
            current, run_id = dict(self._current), self._run_id
        for name, started in current.items():
            numbers = self.measure(job_group(run_id, name))
            now = time.monotonic()
            with self._lock:
                if name not in self._current:
                    continue          # the refresh finished while we measured
                last, last_at = self._last.get(name, ((), 0.0))
                if numbers == last and now - last_at < self._heartbeat:
                    continue
                self._last[name] = (numbers, now)
                jobs, stages_done, stages_total, tasks_done, tasks_total = numbers
                self._emit(RefreshProgress(name, round(now - started, 1), jobs, stages_done, stages_total,
                                           tasks_done, tasks_total))

    def measure(self, group: str) -> tuple[int, int, int, int, int]:
        """(jobs, stages done, stages, tasks done, tasks) of the jobs of a job group. A finished
        job counts the stages and tasks that ran (a skipped stage, whose shuffle output was
        reused, is left out); a running job counts all of its stages, a stage not yet submitted
        toward the total only."""
        tracker = self._tracker
        ids = sorted(tracker.getJobIdsForGroup(group) or [])
        stages_done = stages_total = tasks_done = tasks_total = 0
        for job_id in ids:
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            finished = str(job.status) == "SUCCEEDED"
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                done = min(stage.numCompletedTasks, stage.numTasks) if stage is not None else 0
                if finished and not done:
                    continue      # skipped (its shuffle output was reused): it did not run
                stages_total += 1
                tasks_total += done if finished else (stage.numTasks if stage is not None else 0)
                tasks_done += done
                stages_done += finished or (stage is not None and done >= stage.numTasks > 0)
        return len(ids), stages_done, stages_total, tasks_done, tasks_total
