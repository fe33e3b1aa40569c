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


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (spark-submit's JVM, the Python driver, ...), from /proc."""
    from pathlib import Path

    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def is_java(pid: int) -> bool:
    from pathlib import Path

    try:
        return (Path("/proc") / str(pid) / "exe").resolve().name == "java"
    except OSError:
        return False


def pids_gone(pids: list[int], timeout: float = 300.0) -> bool:
    """Wait until none of `pids` runs any more (zombies count as gone)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_running(p) for p in pids):
            return True
        time.sleep(0.2)
    return False


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
