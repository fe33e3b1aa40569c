"""Scheduling state and lifecycle: `dt suspend`, `dt resume`, `dt drop` (no JVM, except to
remove a dropped DT's table from the metastore with `catalog:` set)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from dtcli.engine.launch.contract import Launcher
from dtcli.errors import UsageError
from dtcli.events import CatalogChanged, Events
from dtcli.model import Plan, Project
from dtcli.plan_parts import Unregistration
from dtcli.planning import scheduler
from dtcli.planning.checked import Checked
from dtcli.state import catalog, orphans, reconcile, scheduling
from dtcli.state.lock import Held, warehouse_lock


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


def drop(project: Project, name: str, *, wait: float = 0.0,
         on_event: Events = lambda e: None,
         launcher: Launcher | None = None) -> str:
    """Delete a DT's data and metadata (an orphan, or a defined DT that the next run recreates);
    returns the path removed. Takes the loaded project, not a checked one: dropping is how a
    DT whose definition no longer checks (a backfill added to it) is recreated.

    A DT registered in the metastore (`catalog:`) is removed from it first, in a Spark
    application of its own; should that fail, the data is deleted all the same and the next run
    removes the entry (the failure is announced as a "catalog" event)."""
    with warehouse_lock(project, f"drop {name}", wait) as held:
        path, key = orphans.droppable(project, name), name.lower()
        registered = catalog.registered_as(catalog.current(project.warehouse).get(key))
        if project.catalog is not None and registered:
            # first the entry (while it still resolves to the DT's data), then the data; should
            # the application not finish, the DROPPING event makes the next run remove the entry
            catalog.append(project.warehouse, [catalog.Event(key, catalog.DROPPING, registered, path)])
            _unregister(project, key, registered, path, on_event, launcher, held)
        return orphans.drop(project, name)


def _unregister(project: Project, name: str, qualified: str, path: str,
                on_event: Events, launcher: Launcher | None, lock: Held) -> None:
    """A plan with nothing to refresh and one table to remove, run as every plan is."""
    if launcher is None:
        from dtcli.api.runs import spark_submit as launcher
    plan = Plan(run_id=uuid.uuid4().hex[:12], project=project.name, warehouse=project.warehouse,
                data_timestamp=_now(), source_versions={}, steps=[],
                unregistrations=[Unregistration(name, qualified, path)])
    launched = launcher(project, plan, on_event, lock)
    reconcile.mark_recorded(project, plan.run_id)
    if not launched.done:
        on_event(CatalogChanged(name, catalog.DROPPING, qualified, path,
                                f"removing {qualified} from the metastore did not finish (see "
                                f"{launched.log_path}); the next dt run removes it"))
