"""Scheduling state and lifecycle: `dt suspend`, `dt resume`, `dt drop` (no JVM)."""

from __future__ import annotations

from datetime import datetime, timezone

from dtcli.errors import UsageError
from dtcli.model import Project
from dtcli.planning import scheduler
from dtcli.planning.checked import Checked
from dtcli.state import orphans, scheduling
from dtcli.state.lock import warehouse_lock


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def suspend(checked: Checked, name: str, *, reason: str | None = None, wait: float = 0.0) -> list[str]:
    """Stop scheduling NAME (and so every DT downstream of it); returns the DTs held back."""
    project, graph = checked.project, checked.graph
    key = project.table_key(name)
    with warehouse_lock(project, f"suspend {key}", wait):
        if scheduling.current(project.warehouse).get(key, scheduling.TableState()).state != scheduling.SUSPENDED:
            scheduling.append(project.warehouse, [scheduling.Event(
                key, scheduling.SUSPENDED, reason or "suspended by `dt suspend`", key, _now())])
    return graph.ordered(graph.downstream_closure({key}))


def resume(checked: Checked, name: str, *, wait: float = 0.0) -> list[str]:
    """Schedule NAME again (with the DTs it held back); an upstream suspension must go first."""
    project, graph = checked.project, checked.graph
    key = project.table_key(name)
    with warehouse_lock(project, f"resume {key}", wait):
        states = scheduling.current(project.warehouse)
        held = [u for u in graph.ordered(graph.upstream_closure({key}) - {key})
                if states.get(u, scheduling.TableState()).state == scheduling.SUSPENDED]
        if held:
            raise UsageError(f"{key} is held back because its upstream {held[0]} is suspended",
                             hint=f"resume it with `dt resume {held[0]}`")
        if states.get(key, scheduling.TableState()).state == scheduling.SUSPENDED:
            scheduling.append(project.warehouse, [scheduling.Event(key, scheduling.RESUMED, at=_now())])
    stop = scheduler.blocked(graph, scheduling.current(project.warehouse))
    return [n for n in graph.ordered(graph.downstream_closure({key})) if n not in stop]


def drop(project: Project, name: str, *, wait: float = 0.0) -> str:
    """Delete a DT's data and metadata (an orphan, or a defined DT that the next run recreates);
    returns the path removed. Takes the loaded project, not a checked one: dropping is how a
    DT whose definition no longer checks (a backfill added to it) is recreated."""
    with warehouse_lock(project, f"drop {name}", wait):
        return orphans.drop(project, name)
