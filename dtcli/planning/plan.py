"""The planner: from project, graph and a pinned snapshot to a plan (pure data, no Spark).

For each selected DT (and every DT upstream of it, so a run reads one consistent snapshot),
in DAG order, it decides the refresh action: FULL on creation, REINITIALIZE when the definition
changed, NO_DATA when no input moved since the DT's frontier, else INCREMENTAL or FULL by the
DT's resolved refresh mode.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from dtcli.planning.definition import definition_hash
from dtcli.planning.graph import Graph
from dtcli.model import (CREATION, FULL, INCREMENTAL, MANUAL, NO_DATA, REINITIALIZE, Plan, Project,
                         RefreshStep, StepInput)
from dtcli.planning.snapshot import Snapshot


# The incremental strategies land with issue 3; until then every refresh that has work runs FULL.
INCREMENTAL_REFRESH_ENABLED = True


@dataclass(frozen=True)
class ResolvedMode:
    mode: str                 # INCREMENTAL | FULL
    reason: str | None = None


def build_plan(project: Project, graph: Graph, snapshot: Snapshot, selected: set[str], trigger: str,
               modes: dict[str, ResolvedMode], *, full_refresh: bool = False,
               run_id: str | None = None) -> Plan:
    names = graph.ordered(graph.upstream_closure(selected))
    refreshed: set[str] = set()      # DTs that commit new data in this plan
    steps: list[RefreshStep] = []
    for name in names:
        table = project.tables[name]
        info = snapshot.tables.get(name)
        frontier = info.frontier if info else None
        digest = definition_hash(table)
        mode = modes.get(name, ResolvedMode(FULL))
        inputs: list[StepInput] = []
        changed: list[str] = []
        previous_versions = (frontier or {}).get("source_versions", {})
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

        step_trigger, reinit = trigger, None
        if info is None:
            # A `dt refresh` of a DT not created yet stays MANUAL: what the user asked for, and
            # (unlike scheduled creation) never counted toward auto-suspension.
            action, step_trigger = FULL, (MANUAL if trigger == MANUAL else CREATION)
        elif frontier is None:
            action, reinit = REINITIALIZE, "the table has no dt frontier (created or rewritten outside dt)"
        elif frontier.get("definition_hash") != digest:
            action, reinit = REINITIALIZE, "the definition changed (query, columns or refresh mode)"
        elif full_refresh:
            action = FULL
        elif not changed:
            action = NO_DATA
        else:
            action = INCREMENTAL if mode.mode == INCREMENTAL and INCREMENTAL_REFRESH_ENABLED else FULL
        if action != NO_DATA:
            refreshed.add(name)
        steps.append(RefreshStep(
            name=name, path=project.table_path(name), action=action, trigger=step_trigger,
            sql=table.spark_sql, inputs=inputs, definition_hash=digest, refresh_mode=mode.mode,
            refresh_mode_reason=mode.reason, reinit_reason=reinit, previous=frontier,
            upstream=[u for u in graph.upstream[name] if u in names],
            options={"previous_rows": info.rows if info else 0,
                     "partition_by": table.config.get("partition_by"),
                     "changed_inputs": changed}))
    return Plan(run_id=run_id or uuid.uuid4().hex[:12], project=project.name,
                warehouse=project.warehouse, data_timestamp=snapshot.taken_at.isoformat(),
                source_versions=snapshot.source_versions, steps=steps)
