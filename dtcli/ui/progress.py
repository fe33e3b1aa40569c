"""Progress of a run: a rich live display in a terminal, plain lines in CI and pipes."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from dtcli.events import RefreshFinished, RefreshProgress, RefreshStarted, RunEvent, Started, Stopping
from dtcli.model import RefreshRecord

STYLE = {"SUCCEEDED": "green", "FAILED": "red", "UPSTREAM_FAILED": "red", "SKIPPED": "yellow"}


def _summary(record: RefreshRecord) -> str:
    # a refresh that did not commit wrote no row: no counts to show
    stats = (f"+{record.num_inserted_rows} -{record.num_deleted_rows}"
             if record.refresh_action != "NO_DATA" and record.state == "SUCCEEDED" else "")
    msg = f"  {record.state_message}" if record.state_message else ""
    stats = f" {stats}" if stats else ""
    return f"{record.name}: {record.state} {record.refresh_action}{stats}{msg}{_counted(record)}".rstrip()


def _counted(record: RefreshRecord) -> str:
    """A committed refresh's warn checks that found rows and the rows `drop` kept out (a failed
    one names its failing checks in its message)."""
    if record.state != "SUCCEEDED":
        return ""
    said = [f"{t['name']} {t['failures']} row{'s' if t['failures'] != 1 else ''}"
            + (" kept out" if t.get("action") == "drop" else "")
            for t in record.data_tests or () if t.get("status") == "warn" and t.get("failures")]
    return f"  warn: {', '.join(said)}" if said else ""


def spark_text(event: RefreshProgress) -> str:
    """A refresh's Spark progress in words: stages and tasks done of total, time so far."""
    return (f"stages {event.stages_done}/{event.stages_total}, tasks {event.tasks_done}/{event.tasks_total}, "
            f"{event.elapsed:.0f}s")


PLAIN_EVERY = 10.0   # seconds of a refresh between two plain progress lines (CI logs)


class RunProgress:
    """Live display in a terminal: the run's bar, plus each running refresh's Spark stages and
    tasks (refreshes of independent tables run side by side). Elsewhere: a line per refresh
    started and finished, and every `plain_every` seconds of a long refresh a line with its
    Spark progress."""

    def __init__(self, total: int, console: Console | None = None, plain_every: float = PLAIN_EVERY):
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal
        self.started: dict[str, float] = {}
        self.plain_every = plain_every
        self.printed_at: dict[str, float] = {}     # refresh -> elapsed at its last plain line
        self.spark_tasks: dict[str, TaskID] = {}      # running refresh -> its line in the display
        self.progress = None
        if self.live:
            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                     TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                     console=self.console, transient=False)
            self.task = self.progress.add_task("refreshing", total=total)

    def __enter__(self) -> RunProgress:
        if self.progress:
            self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress:
            self.progress.stop()

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, RefreshStarted):
            self.started[event.name] = time.monotonic()
            text = f"{event.name}: {event.action} ..."
            if self.progress:
                self.progress.update(self.task, description=text)
            else:
                self.console.print(text, highlight=False, soft_wrap=True)
        elif isinstance(event, RefreshProgress):
            self._spark(event)
        elif isinstance(event, Started) and not self.progress:
            self.console.print("spark application started", highlight=False)
        elif isinstance(event, Stopping):
            self.console.print("stopping after the current refresh (Ctrl-C again to abort)", highlight=False)
        elif isinstance(event, RefreshFinished):
            record = event.record
            took = time.monotonic() - self.started.get(record.name, time.monotonic())
            line = _summary(record) + (f" ({took:.1f}s)" if record.name in self.started else "")
            style = STYLE.get(record.state, "")
            self._spark_done(record.name)
            if self.progress:
                self.progress.console.print(f"[{style}]{line}[/]" if style else line, highlight=False)
                self.progress.advance(self.task)
            else:           # one line per refresh, however long its message: CI logs are grepped
                self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def _spark(self, event: RefreshProgress) -> None:
        name = event.name
        if self.progress:
            text = f"  {name}: Spark {spark_text(event)}"
            total = max(event.tasks_total, 1)
            if name not in self.spark_tasks:
                self.spark_tasks[name] = self.progress.add_task(text, total=total)
            self.progress.update(self.spark_tasks[name], description=text, total=total,
                                 completed=event.tasks_done)
            return
        elapsed = event.elapsed
        if elapsed - self.printed_at.get(name, 0.0) >= self.plain_every:
            self.printed_at[name] = elapsed
            self.console.print(f"{name}: running, Spark {spark_text(event)}", highlight=False,
                               markup=False)

    def _spark_done(self, name: str) -> None:
        task = self.spark_tasks.pop(name, None)
        if self.progress and task is not None:
            self.progress.remove_task(task)
