"""What the api runs a plan's Spark steps with, as a type: a `Launcher` takes a plan and returns
a `LaunchResult`. Three satisfy it: the cold spark-submit launcher (launcher.launch), the warm
application of `dt run --watch` (WarmEngine.launch), and the in-process runners of tests and
`dt unit-test`'s scratch DTs. The warehouse lock the caller holds is passed in (`lock`), never
looked up: the launcher hands its descriptor to spark-submit and notes who holds it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dtcli.events import Events
from dtcli.model import Plan, Project, RefreshRecord
from dtcli.state.lock import Held


@dataclass
class LaunchResult:
    returncode: int
    records: list[RefreshRecord] = field(default_factory=list)
    log_path: Path | None = None
    done: bool = False
    interrupted: bool = False     # the user stopped the run (Ctrl-C, SIGTERM): the rest was SKIPPED
    started: bool = False         # the driver's Python ran (spark-submit found Java, the jars)
    not_started: str | None = None    # why the driver could not start a Spark session
    driver: str | None = None     # the driver's Python process (`PID:START`, its Started event)


class Launcher(Protocol):
    def __call__(self, project: Project, plan: Plan, on_event: Events,
                 lock: Held | None = None) -> LaunchResult:
        """Run `plan`'s Spark work, streaming its events to `on_event`. `lock`: the warehouse
        lock the caller holds (None for a plan that writes no table, `dt test`)."""
        ...
