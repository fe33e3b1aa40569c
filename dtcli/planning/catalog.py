"""Which DTs a run registers in (or removes from) the metastore, decided without a JVM.

With `catalog: {schema: S}` every created DT is a table `S.<name>` at its warehouse location.
The metastore is only reachable from Spark, so dt plans from what its applications recorded
(dtcli/state/catalog.py): a DT is registered when it has no REGISTERED event for its current
qualified name and location (new, moved to another schema or warehouse, or its last attempt
failed: the run retries and says so); a dropped DT's table is removed. Columns and comment need
no re-registration: a Delta table in the catalog is a pointer to its location, and readers take
both from the Delta log, which each refresh keeps current. Only a `comment` edited while no
input changed (a NO_DATA step, which runs no Spark) would leave the name showing the old
comment: the run then brings it to the table in its catalog work (a metadata-only commit).
"""

from __future__ import annotations

from collections.abc import Mapping

from dtcli.model import NO_DATA, Plan, Project
from dtcli.plan_parts import Registration, SourceLookup, Unregistration
from dtcli.planning.snapshot import Snapshot
from dtcli.state.catalog import DROPPING, FAILED, REGISTERED, Event, registered_as


def catalog_work(project: Project, plan: Plan, existing: set[str],
                 events: Mapping[str, Event]) -> tuple[list[Registration], list[Unregistration]]:
    """(registrations, unregistrations) for this run. `existing`: DTs whose Delta table exists;
    DTs the plan creates are registered once their creation commits."""
    if project.catalog is None:
        return [], []
    created = {s.name for s in plan.spark_steps}
    # comments edited with no new data: no refresh commits them, the catalog work does
    comments = {s.name: s.options.layout.comment for s in plan.steps
                if s.action == NO_DATA and s.options.layout.comment_outdated}
    registrations = []
    for name in project.tables:
        if name not in existing and name not in created:
            continue
        qualified, path = project.qualified_name(name), project.table_path(name)
        last = events.get(name)
        if last is not None and last.event == REGISTERED and last.qualified_name == qualified \
                and last.path == path and name not in comments:
            continue
        previous = registered_as(last)
        registrations.append(Registration(
            name, qualified, path, previous=previous if previous != qualified else None,
            retry=last.message if last is not None and last.event == FAILED else None,
            comment_changed=name in comments, comment=comments.get(name)))
    registering = {r.name for r in registrations}
    unregistrations = [Unregistration(e.name, e.qualified_name, e.path)
                       for e in events.values() if e.event == DROPPING and e.name not in registering]
    return registrations, unregistrations


def rechecks(project: Project, snapshot: Snapshot, plan: Plan) -> list[SourceLookup]:
    """The sources read by name by the plan's refreshes, asked again in the application the run
    starts anyway: a name given to a table elsewhere is then planned from by the next run."""
    if not plan.spark_steps:
        return []
    read = {i.name for s in plan.spark_steps for i in s.inputs}
    return [SourceLookup(n, src.table, recheck=True, location=src.path,
                         table_id=snapshot.sources[n].table_id if n in snapshot.sources else None)
            for n, src in sorted(project.sources.items()) if src.table and n in read]
