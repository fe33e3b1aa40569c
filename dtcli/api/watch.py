"""`dt run --watch`: scheduling passes, each at the moment the next DT falls due.

Each pass checks the project anew (edited files are reconciled) and is a full `dt run` (the
lock is taken and released, so `dt suspend` and friends can get in while the watcher sleeps).
The passes that need Spark share one warm application (engine/launch/warm.py), so a pass with work
costs its refreshes, not a JVM start.
When the next pass is due is worked out from the same checked project and what the pass just
refreshed. The clock is injectable: a ManualClock makes a watch of hours run in milliseconds.
Ctrl-C while sleeping (where a watcher spends its time) stops cleanly, between refreshes;
during a pass it interrupts that pass like a plain `dt run` (commits are atomic, so nothing
half-written remains either way).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import datetime

from dtcli.api.runs import RunResult, run
from dtcli.engine.launch.contract import Launcher
from dtcli.events import Events
from dtcli.model import SUCCEEDED
from dtcli.planning import refresh_times, scheduler
from dtcli.planning.checked import Checked
from dtcli.planning.schedule import Clock
from dtcli.state import scheduling
from dtcli.state.lock import WarehouseLock

OnPass = Callable[[int, RunResult, "datetime | None"], None]


def next_wake(checked: Checked, result: RunResult, now: datetime, short_passes: bool = True) -> datetime | None:
    """When the next pass should run (None: no DT is scheduled at all), from the pass's own
    snapshot, the data timestamps its refreshes just committed and the refresh times they
    measured: a DT whose period ran out while the pass ran, or that was not due when it began,
    is refreshed at once by the next pass. `short_passes`: whether the next pass is a short one
    (its DTs' periods then leave room for the pass they may wait for, scheduler.periods)."""
    decision = result.decision
    decided = decision.stamps if decision else {}
    stamps = {**scheduler.data_timestamps(checked.snapshot, []), **decided}
    created = set()
    for record in result.records:
        if record.state == SUCCEEDED and record.data_timestamp:
            stamps[record.name] = scheduler.parse_ts(record.data_timestamp)
            created.add(record.name)
    timings = refresh_times.measured(result.records, decision.timings if decision else None)
    ready = created | set(decision.not_due if decision else ())
    return scheduler.next_wake(checked, stamps, scheduling.current(checked.project.warehouse), now,
                               created, scheduler.periods(checked, timings, short_passes), ready)


class BehindWarnings:
    """Which DTs a watcher warns about after a pass, among those that cannot meet their lag
    (RunResult.behind): each once, and again after it caught up and fell behind anew; none
    until every DT the watcher's application refreshed was refreshed by it twice, since a DT's
    first refresh in a new application costs several times its later ones and the estimates
    (its own time, and the round of all of them) would still count it."""

    def __init__(self) -> None:
        self.warned: set[str] = set()
        self.refreshed: Counter[str] = Counter()     # refreshes per DT since the application started

    def after(self, result: RunResult) -> list[str]:
        if result.launched or self.refreshed:
            self.refreshed.update(r.name for r in result.records if r.state == SUCCEEDED)
        if not self.refreshed or min(self.refreshed.values()) < 2:
            return []
        new = [name for name in result.behind if name not in self.warned]
        self.warned.difference_update({r.name for r in result.records} - set(result.behind))
        self.warned.update(new)
        return new


def watch(check: Callable[[datetime], Checked], names: list[str] | None = None, *, clock: Clock,
          max_ticks: int | None = None, wait: float = 0.0, on_pass: OnPass = lambda *a: None,
          on_event: Events = lambda e: None, launcher: Launcher | None = None,
          idle_timeout: float | None = None) -> int:
    """Run scheduling passes until `max_ticks` passes ran, nothing is scheduled, or Ctrl-C.
    `check(now)` loads and checks the project for one pass. Passes share one warm Spark
    application (stopped after `idle_timeout` seconds without work) unless a `launcher` is given."""
    from dtcli.engine.launch.warm import DEFAULT_IDLE_TIMEOUT, WarmEngine

    engine = WarmEngine(idle_timeout or DEFAULT_IDLE_TIMEOUT) if launcher is None else None
    launch = engine.launch if engine else launcher
    # one taker for every pass: the warm application shares the lock's description between them
    locker = WarehouseLock()
    passes = 0
    try:
        while True:
            checked = check(clock.now())
            # a pass that starts the application refreshes every scheduled DT, due or not: it
            # pays the JVM's start and each DT's cold first refresh in it once, instead of
            # spreading them over the passes after it (their times say little of later passes)
            cold = engine is not None and not engine.running
            result = run(checked, names, wait=wait, on_event=on_event, launcher=launch, locker=locker,
                         short_pass=not cold, cold=cold)
            passes += 1
            wake = next_wake(checked, result, clock.now(), engine is None or engine.running)
            on_pass(passes, result, wake)
            if result.interrupted:      # its results are reported: now stop as Ctrl-C stops dt
                raise KeyboardInterrupt
            if (max_ticks is not None and passes >= max_ticks) or wake is None:
                return passes
            try:
                clock.sleep(max(0.0, (wake - clock.now()).total_seconds()))
            except KeyboardInterrupt:
                return passes
    finally:
        if engine is not None:
            engine.close()


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
