"""Progress of a run: a rich live display in a terminal, plain lines in CI and pipes."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

STYLE = {"SUCCEEDED": "green", "FAILED": "red", "UPSTREAM_FAILED": "red", "SKIPPED": "yellow"}


def _summary(record: dict[str, Any]) -> str:
    stats = (f"+{record.get('num_inserted_rows', 0)} -{record.get('num_deleted_rows', 0)}"
             if record["refresh_action"] != "NO_DATA" else "")
    msg = f"  {record['state_message']}" if record.get("state_message") else ""
    return f"{record['name']}: {record['state']} {record['refresh_action']} {stats}{msg}".rstrip()


class RunProgress:
    def __init__(self, total: int, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal
        self.started: dict[str, float] = {}
        self.progress = None
        if self.live:
            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                     TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                     console=self.console, transient=False)
            self.task = self.progress.add_task("refreshing", total=total)

    def __enter__(self) -> "RunProgress":
        if self.progress:
            self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress:
            self.progress.stop()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "start":
            self.started[event["name"]] = time.monotonic()
            text = f"{event['name']}: {event['action']} ..."
            if self.progress:
                self.progress.update(self.task, description=text)
            else:
                self.console.print(text, highlight=False)
        elif kind == "started" and not self.progress:
            self.console.print("spark application started", highlight=False)
        elif kind == "stopping":
            self.console.print("stopping after the current refresh (Ctrl-C again to abort)", highlight=False)
        elif kind == "finished":
            record = event["record"]
            took = time.monotonic() - self.started.get(record["name"], time.monotonic())
            line = _summary(record) + (f" ({took:.1f}s)" if record["name"] in self.started else "")
            style = STYLE.get(record["state"], "")
            if self.progress:
                self.progress.console.print(f"[{style}]{line}[/]" if style else line, highlight=False)
                self.progress.advance(self.task)
            else:
                self.console.print(line, highlight=False, markup=False)
