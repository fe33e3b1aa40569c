"""Spark progress of the refresh in flight, polled from the status tracker and sent as events.

Refreshes run one after the other in the driver, so every Spark job started after a refresh's
"start" event and before its "finished" event belongs to that refresh: job ids only grow, and
the first id of a refresh is remembered when it starts. No job group or tag is set, so the
strategies and Delta's own jobs need not know about progress at all.

The poller is one daemon thread. Every event, its own and the executor's, goes through
`emit` under one lock, so lines on the driver's stdout never interleave.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

Emit = Callable[[dict[str, Any]], None]

POLL_SECONDS = 0.5        # how often the status tracker is read
HEARTBEAT_SECONDS = 5.0   # an event at least this often while a refresh runs, changed or not


class SparkProgress:
    """Wraps the driver's `emit`: forwards every event and, while a refresh runs, adds
    `{"event": "progress", "name", "elapsed", "stages_done", "stages_total", "tasks_done",
    "tasks_total", "jobs"}` events when the numbers change (and a heartbeat otherwise)."""

    def __init__(self, spark, emit: Emit, *, poll: float = POLL_SECONDS,
                 heartbeat: float = HEARTBEAT_SECONDS):
        self._tracker = spark.sparkContext.statusTracker()
        self._emit, self._poll, self._heartbeat = emit, poll, heartbeat
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._current: tuple[str, float, int] | None = None   # name, start, first job id
        self._jobs: set[int] = set()    # jobs of the current refresh seen so far
        self._last: tuple | None = None
        self._last_at = 0.0
        self._thread = threading.Thread(target=self._run, name="dt-progress", daemon=True)
        self._thread.start()

    def emit(self, event: dict[str, Any]) -> None:
        with self._lock:
            kind = event.get("event")
            if kind == "start":
                self._current = (event["name"], time.monotonic(), self._next_job_id())
                self._jobs = set()
                self._last, self._last_at = None, time.monotonic()
            elif kind == "finished":
                self._current = None
            self._emit(event)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    # -- the poller ---------------------------------------------------------------------------

    def _next_job_id(self) -> int:
        known = list(self._tracker.getJobIdsForGroup(None) or []) + list(self._tracker.getActiveJobsIds() or [])
        return max(known) + 1 if known else 0

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self._tick()
            except Exception:
                pass

    def _tick(self) -> None:
        current = self._current
        if current is None:
            return
        name, started, first = current
        numbers = self.measure(first, self._jobs)
        now = time.monotonic()
        with self._lock:
            if self._current is not current:
                return          # the refresh finished while we measured
            if numbers == self._last and now - self._last_at < self._heartbeat:
                return
            self._last, self._last_at = numbers, now
            jobs, stages_done, stages_total, tasks_done, tasks_total = numbers
            self._emit({"event": "progress", "name": name, "elapsed": round(now - started, 1),
                        "jobs": jobs, "stages_done": stages_done, "stages_total": stages_total,
                        "tasks_done": tasks_done, "tasks_total": tasks_total})

    def measure(self, first_job: int, seen: set[int]) -> tuple[int, int, int, int, int]:
        """(jobs, stages done, stages, tasks done, tasks) of the jobs from `first_job` on.
        A finished job counts the stages and tasks that ran (a skipped stage, whose shuffle
        output was reused, is left out); a running job counts all of its stages, a stage not
        yet submitted toward the total only. `seen` remembers
        jobs run under a job group of their own (broadcasts), which are listed only while
        they run."""
        tracker = self._tracker
        seen.update(j for j in list(tracker.getJobIdsForGroup(None) or []) + list(tracker.getActiveJobsIds() or [])
                    if j >= first_job)
        ids = set(seen)
        stages_done = stages_total = tasks_done = tasks_total = 0
        for job_id in sorted(ids):
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
