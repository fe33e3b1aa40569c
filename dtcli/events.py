"""What a run tells while it goes, one class per kind of event.

The Spark application writes them on its stdout (`dtcli.engine.protocol` says how a line is
framed); dt adds its own (a name lookup, an auto-suspension) and passes all of them to the
caller's `on_event` (the progress display, `run_results`, a library user). On the wire an
event is one JSON object whose `event` key names its kind; `to_wire` / `from_wire` are the
only two places that know the keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import ClassVar

from dtcli.model import RefreshRecord


@dataclass(frozen=True)
class RunEvent:
    kind: ClassVar[str] = ""


@dataclass(frozen=True)
class Started(RunEvent):
    """The Spark application is up (its session built). `driver`: the driver's Python process as
    `PID:START` (state/owner.py): a driver whose JVM was killed may still be appending a
    refresh's history row, and dt waits for it before recording what it did not hear about."""
    kind: ClassVar[str] = "started"
    driver: str = ""


@dataclass(frozen=True)
class NotStarted(RunEvent):
    """The application failed before its first refresh (a bad setting, a missing jar)."""
    kind: ClassVar[str] = "not_started"
    message: str = ""


@dataclass(frozen=True)
class PlanStarted(RunEvent):
    """The application took a plan: these steps, in this Spark application."""
    kind: ClassVar[str] = "plan"
    steps: list[str] = field(default_factory=list)
    application_id: str | None = None
    run_id: str = ""


@dataclass(frozen=True)
class RefreshStarted(RunEvent):
    kind: ClassVar[str] = "start"
    name: str = ""
    action: str = ""


@dataclass(frozen=True)
class RefreshProgress(RunEvent):
    """Spark's numbers for the jobs of one refresh in flight (sent when they change, and as a
    heartbeat)."""
    kind: ClassVar[str] = "progress"
    name: str = ""
    elapsed: float = 0.0
    jobs: int = 0
    stages_done: int = 0
    stages_total: int = 0
    tasks_done: int = 0
    tasks_total: int = 0


@dataclass(frozen=True)
class RefreshFinished(RunEvent):
    kind: ClassVar[str] = "finished"
    record: RefreshRecord


@dataclass(frozen=True)
class CatalogChanged(RunEvent):
    """A DT registered in (or removed from) the metastore, or the attempt's failure."""
    kind: ClassVar[str] = "catalog"
    name: str = ""
    outcome: str = ""          # REGISTERED, UNREGISTERED, or the failure's state
    qualified_name: str = ""
    path: str | None = None
    message: str | None = None
    previous: str | None = None
    retried: bool = False


@dataclass(frozen=True)
class NameResolved(RunEvent):
    """Where the metastore says a source named by table lives (or why it does not)."""
    kind: ClassVar[str] = "resolved"
    table: str = ""
    location: str | None = None
    table_id: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class LookingUp(RunEvent):
    """dt asks the metastore for sources named by table before planning."""
    kind: ClassVar[str] = "looking_up"
    tables: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Suspended(RunEvent):
    """A DT suspended after repeated failures, and the DTs held back with it."""
    kind: ClassVar[str] = "suspended"
    name: str = ""
    reason: str = ""
    downstream: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Stopping(RunEvent):
    """A stop was asked for (Ctrl-C): the refresh in flight finishes, the rest is skipped."""
    kind: ClassVar[str] = "stopping"


@dataclass(frozen=True)
class Done(RunEvent):
    """The application finished a plan."""
    kind: ClassVar[str] = "done"
    run_id: str = ""


@dataclass(frozen=True)
class Exited(RunEvent):
    """The warm application of `--watch` ends, and why (protocol.IDLE_EXIT, OWNER_GONE)."""
    kind: ClassVar[str] = "exit"
    reason: str = ""


@dataclass(frozen=True)
class Warned(RunEvent):
    """Something beside the refreshes went wrong and the run goes on (the lineage backend is
    down): said once, by dt."""
    kind: ClassVar[str] = "warning"
    message: str = ""


KINDS: dict[str, type[RunEvent]] = {cls.kind: cls for cls in (
    Started, NotStarted, PlanStarted, RefreshStarted, RefreshProgress, RefreshFinished, CatalogChanged,
    NameResolved, LookingUp, Suspended, Stopping, Done, Exited, Warned)}

Events = Callable[[RunEvent], None]


def to_wire(event: RunEvent) -> dict[str, object]:
    """The event as one JSON object of the wire protocol (`event`: its kind)."""
    out: dict[str, object] = {"event": event.kind}
    for f in fields(event):
        value = getattr(event, f.name)
        out[f.name] = value.to_dict() if isinstance(value, RefreshRecord) else value
    return out


def from_wire(data: Mapping[str, object]) -> RunEvent | None:
    """The event a wire object stands for; None for a kind this dt does not know (an
    application of another version), which is passed over."""
    cls = KINDS.get(data.get("event", ""))
    if cls is None:
        return None
    known = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in known}
    if cls is RefreshFinished:
        values["record"] = RefreshRecord.from_dict(values["record"])
    return cls(**values)
