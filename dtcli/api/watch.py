"""`dt run --watch`: scheduling passes, each at the moment the next DT falls due.

Each pass is a full `dt run` (project reloaded, so edited files are reconciled; lock taken and
released, so `dt suspend` and friends can get in while the watcher sleeps). The clock is
injectable: a ManualClock makes a watch of hours run in milliseconds in tests.
Ctrl-C while sleeping (where a watcher spends its time) stops cleanly, between refreshes;
during a pass it interrupts that pass like a plain `dt run` (commits are atomic, so nothing
half-written remains either way).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable

from dtcli import api
from dtcli.planning import scheduler
from dtcli.model import Project
from dtcli.planning.schedule import Clock
from dtcli.planning.snapshot import take_snapshot
from dtcli.state import history, scheduling

OnPass = Callable[[int, "api.RunResult", "datetime | None"], None]


def next_wake(project: Project, now: datetime) -> datetime | None:
    """When the next pass should run (None: no DT is scheduled at all)."""
    snapshot = take_snapshot(project, now=now)
    checked = api.validate(project, snapshot)
    stamps = scheduler.data_timestamps(snapshot, history.read(project.warehouse))
    return scheduler.next_wake(project, checked.graph, snapshot, checked.effective_lags, stamps,
                               scheduling.current(project.warehouse), now)


def watch(load: Callable[[], Project], names: list[str] | None = None, *, clock: Clock,
          max_ticks: int | None = None, wait: float = 0.0, on_pass: OnPass = lambda *a: None,
          on_event: api.Events = lambda e: None, launcher: Callable[..., Any] = api.spark_submit) -> int:
    """Run scheduling passes until `max_ticks` passes ran, nothing is scheduled, or Ctrl-C."""
    passes = 0
    while True:
        project = load()
        result = api.run(project, names, now=clock.now(), wait=wait, on_event=on_event, launcher=launcher)
        passes += 1
        wake = next_wake(project, clock.now())
        on_pass(passes, result, wake)
        if (max_ticks is not None and passes >= max_ticks) or wake is None:
            return passes
        try:
            clock.sleep(max(0.0, (wake - clock.now()).total_seconds()))
        except KeyboardInterrupt:
            return passes


def clock_from_env() -> Clock:
    """The wall clock, or an accelerated one for tests and demos: DT_CLOCK_START=<ISO time>
    starts a manual clock there that jumps ahead instead of sleeping."""
    import os

    from dtcli.errors import UsageError
    from dtcli.planning.schedule import ManualClock, SystemClock

    start = os.environ.get("DT_CLOCK_START")
    if not start:
        return SystemClock()
    try:
        return ManualClock(datetime.fromisoformat(start))
    except ValueError as exc:
        raise UsageError(f"DT_CLOCK_START={start!r} is not a timezone-aware ISO time ({exc})") from None
