"""`scheduler: disable`: DTs refreshed only when a user asks for them (Snowflake's
`SCHEDULER = DISABLE`).

Such a DT is a boundary of the schedule, in both directions:
- the lag-aware pass of `dt run` (and `--watch`) never refreshes it, neither because it is due
  (it has no target lag) nor because a DT downstream of it is: that DT reads it as it was last
  refreshed, like a source table (Snowflake's manual refreshes of such a DT do not cascade);
- it is refreshed by `dt refresh NAME` and by `dt run --select ... --all` when the selection
  names it. Its own refresh brings the scheduled DTs it reads up to date with it, as every
  dt refresh does, so its query still reads one snapshot; other on-demand DTs it reads are
  read as they are.
Creation and reinitialization (a new or edited definition) still happen at `dt run`, as
Snowflake's `CREATE [OR REPLACE]` refreshes an on-create DT at once.
"""

from __future__ import annotations

from dtcli.model import Project, TableDef
from dtcli.planning.graph import Graph

ENABLE, DISABLE = "enable", "disable"


def is_on_demand(table: TableDef) -> bool:
    return table.config.scheduler == DISABLE


def on_demand(project: Project) -> set[str]:
    return {n for n, t in project.tables.items() if is_on_demand(t)}


def scheduler_value(table: TableDef) -> str:
    """As Snowflake's SHOW DYNAMIC TABLES prints it."""
    return DISABLE.upper() if is_on_demand(table) else ENABLE.upper()


def needed(project: Project, graph: Graph, selected: set[str]) -> set[str]:
    """`selected` and the upstream DTs they need for one snapshot, without crossing an
    on-demand DT that is not itself selected (it is read as it is)."""
    boundary = on_demand(project) - set(selected)
    out: set[str] = set()
    stack = list(selected)
    while stack:
        name = stack.pop()
        if name in out:
            continue
        out.add(name)
        stack.extend(u for u in graph.upstream.get(name, ()) if u not in boundary and u not in out)
    return out


def read_as_is(project: Project, graph: Graph, selected: set[str]) -> dict[str, set[str]]:
    """For each DT `needed` brings in, the on-demand DTs it reads without refreshing them."""
    boundary = on_demand(project) - set(selected)
    return {n: {u for u in graph.upstream.get(n, ()) if u in boundary}
            for n in needed(project, graph, selected)}


def missing_upstream(checked, selected: set[str]) -> dict[str, str]:
    """DTs of `selected` that cannot refresh because a DT they need reads an on-demand DT
    that was never created (and is not created by this plan): name -> that on-demand DT."""
    project, graph, snapshot = checked.project, checked.graph, checked.snapshot
    missing = {u for u in on_demand(project) - set(selected) if snapshot.tables.get(u) is None}
    if not missing:
        return {}
    out: dict[str, str] = {}
    for name in graph.ordered(set(selected)):
        reads = read_as_is(project, graph, {name})
        gone = sorted(u for us in reads.values() for u in us if u in missing)
        if gone:
            out[name] = gone[0]
    return out


def missing_reason(name: str) -> str:
    return (f"it reads {name} (scheduler: disable), which has not been created yet; "
            f"create it with `dt refresh {name}`")


def check_created(checked, selected: set[str]) -> None:
    """`dt refresh`: refuse, before anything runs, a refresh that needs an on-demand DT that
    does not exist yet."""
    from dtcli.errors import UsageError

    blocked = missing_upstream(checked, selected)
    if blocked:
        name, gone = next(iter(blocked.items()))
        raise UsageError(f"cannot refresh {name}: {missing_reason(gone)}")
