"""Sources declared by table name: asking the metastore where they live, before a run plans.

Planning reads Delta logs by path, without a JVM; a name is turned into a path by a Spark
application (the metastore speaks only to Spark) whose answer dt keeps in its state. So a run
that reads a name never asked, or whose table is no longer where it was, first starts a short
application that asks, then plans; later runs plan straight from the kept answer.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from pathlib import Path

from dtcli.engine.launch.contract import Launcher
from dtcli.errors import ValidationError
from dtcli.events import Events, LookingUp
from dtcli.model import Plan, Project
from dtcli.plan_parts import SourceLookup
from dtcli.project.loader import unresolved_names
from dtcli.state import reconcile, source_names
from dtcli.state.lock import warehouse_lock


def look_up(project: Project, *, launcher: Launcher | None = None,
            on_event: Events = lambda e: None, wait: float = 0.0) -> bool:
    """Ask the metastore for the sources this project reads by a name not yet (or no longer)
    known; True if it asked. A name that does not resolve is bad input: ValidationError with
    the source's file and line, and nothing refreshed."""
    todo = unresolved_names(project)
    if not todo:
        return False
    if launcher is None:
        from dtcli.api.runs import spark_submit as launcher
    plan = Plan(run_id=uuid.uuid4().hex[:12], project=project.name, warehouse=project.warehouse,
                data_timestamp=datetime.now(timezone.utc).isoformat(), source_versions={}, steps=[],
                resolutions=[SourceLookup(s.name, s.table) for s in todo])
    on_event(LookingUp([s.table for s in todo]))
    with warehouse_lock(project, "look up source names", wait) as held:
        launched = launcher(project, plan, on_event, held)
        reconcile.mark_recorded(project, plan.run_id)
    found = source_names.current(project.warehouse)
    for source in todo:
        answer = found.get(source.table)
        if answer is not None and answer.location and (answer.at or "") >= plan.data_timestamp:
            continue
        why = answer.message if answer is not None and answer.message and answer.at >= plan.data_timestamp \
            else f"the Spark application that looks it up did not finish (see {launched.log_path})"
        raise ValidationError(f"source '{source.name}': {why}", file=_rel(project.root, source.file),
                              line=source.line,
                              hint=f"create {source.table} as a Delta table, fix the name, or point the "
                                   f"target's spark.conf at the metastore that holds it")
    return True


def _rel(root: Path, file: str | None) -> str | None:
    if file is None:
        return None
    try:
        return str(Path(file).relative_to(root))
    except ValueError:
        return file
