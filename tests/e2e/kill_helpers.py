"""Reading who committed what, straight from the DTs' Delta logs (independent of dt's history)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from deltalake import DeltaTable


@dataclass(frozen=True)
class Commit:
    name: str
    version: int
    run_id: str
    timestamp: int          # ms, as the writer's clock put it in commitInfo
    action: str | None


def dt_commits(project, names) -> list[Commit]:
    """Every commit that carries a frontier (a refresh), of every named DT."""
    out = []
    for name in names:
        for info in DeltaTable(project.table_path(name)).history():
            meta = json.loads(info.get("userMetadata") or "{}").get("dt_frontier")
            if meta:
                out.append(Commit(name, info["version"], meta["run_id"], info["timestamp"],
                                  meta.get("refresh_action")))
    return out


def commits_by_run(project, names) -> list[tuple[str, list[Commit]]]:
    """Commits grouped by the run that wrote them, runs in the order of their first commit."""
    runs: dict[str, list[Commit]] = {}
    for commit in sorted(dt_commits(project, names), key=lambda c: (c.timestamp, c.version)):
        runs.setdefault(commit.run_id, []).append(commit)
    return list(runs.items())


def committed_refreshes(project, names) -> list[tuple[str, str]]:
    """(DT, run id) of each refresh that committed (a refresh's commits share its run id)."""
    return sorted({(c.name, c.run_id) for c in dt_commits(project, names)})
