"""The planner: from project, graph and a pinned snapshot to a plan (pure data, no Spark).

For each selected DT (and every DT upstream of it, so a run reads one consistent snapshot;
an on-demand DT that is not selected is read as it is, see on_demand.py),
in DAG order, it decides the refresh action: FULL on creation, REINITIALIZE when the definition
changed, NO_DATA when no input moved since the DT's frontier, else INCREMENTAL or FULL by the
DT's resolved refresh mode.
"""

from __future__ import annotations

import uuid

from dtcli.model import (CREATION, FULL, INCREMENTAL, MANUAL, NO_DATA, REINITIALIZE, Plan,
                         RefreshStep, StepInput)
from dtcli.planning import on_demand
from dtcli.planning.checked import Checked
from dtcli.planning.refresh_mode import ResolvedMode


def build_plan(checked: Checked, selected: set[str], trigger: str, *, full_refresh: bool = False,
               run_id: str | None = None) -> Plan:
    project, graph, snapshot = checked.project, checked.graph, checked.snapshot
    names = graph.ordered(on_demand.needed(project, graph, selected))
    manual_only = on_demand.on_demand(project)
    refreshed: set[str] = set()      # DTs that commit new data in this plan
    steps: list[RefreshStep] = []
    for name in names:
        table = project.tables[name]
        info = snapshot.tables.get(name)
        frontier = info.frontier if info else None
        digest = checked.hashes[name]
        mode = checked.modes.get(name, ResolvedMode(FULL))
        inputs: list[StepInput] = []
        changed: list[str] = []
        previous_versions = frontier.source_versions if frontier else {}
        for inp in table.inputs:
            if inp in project.sources:
                version = snapshot.sources[inp].version
            elif inp in refreshed:
                version = None          # the version this run commits, known to the driver
            else:
                up = snapshot.tables.get(inp)
                version = up.version if up else None
            inputs.append(StepInput(inp, project.input_kind(inp), project.input_path(inp), version))
            if version is None or previous_versions.get(inp) != version:
                changed.append(inp)

        # an on-demand DT refreshes only because someone asked for it: MANUAL, as Snowflake records it
        step_trigger, reinit = (MANUAL if name in manual_only else trigger), None
        if info is None:
            # A `dt refresh` of a DT not created yet stays MANUAL: what the user asked for, and
            # (unlike scheduled creation) never counted toward auto-suspension.
            action, step_trigger = FULL, (MANUAL if trigger == MANUAL else CREATION)
        elif frontier is None:
            action, reinit = REINITIALIZE, "the table has no dt frontier (created or rewritten outside dt)"
        elif frontier.definition_hash != digest:
            action, reinit = REINITIALIZE, "the definition changed (query, columns or refresh mode)"
        elif full_refresh:
            action = FULL
        elif not changed:
            action = NO_DATA
        else:
            action = INCREMENTAL if mode.mode == INCREMENTAL else FULL
        if action != NO_DATA:
            refreshed.add(name)
        steps.append(RefreshStep(
            name=name, path=project.table_path(name), action=action, trigger=step_trigger,
            sql=table.spark_sql, inputs=inputs, definition_hash=digest, refresh_mode=mode.mode,
            refresh_mode_reason=mode.reason, reinit_reason=reinit, previous=frontier,
            upstream=[u for u in graph.upstream[name] if u in names],
            options={"previous_rows": info.rows if info else 0,
                     "file": table.file,
                     "delta_sql": checked.delta_sql(name),
                     "partition_by": table.config.get("partition_by"),
                     "cluster_by": table.config.get("cluster_by"),
                     "comment": table.config.get("comment"),
                     "comment_outdated": info is not None and
                     (info.description or None) != (table.config.get("comment") or None),
                     "columns": table.config.get("columns"),
                     "deletion_vectors": table.config.get("deletion_vectors", True),
                     "deletion_vectors_outdated": info is not None and
                     info.deletion_vectors_differ(table.config.get("deletion_vectors", True)),
                     "changed_inputs": changed}))
    return Plan(run_id=run_id or uuid.uuid4().hex[:12], project=project.name,
                warehouse=project.warehouse, data_timestamp=snapshot.taken_at.isoformat(),
                source_versions=snapshot.source_versions, steps=steps)
