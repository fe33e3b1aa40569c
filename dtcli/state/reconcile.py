"""History reconciliation: the refresh history is never missing a committed refresh.

A refresh commits its data and frontier (with the run's id) in one Delta commit, and its
history row is appended just after. Between the two, the run can die: dt killed together with
its Spark application, the JVM killed, the machine lost. The next command that reads or writes
state compares each DT's own commits with the history and

- gives a committed refresh without a row one (its action, source versions and data timestamp
  from the frontier, statistics from the commit's operationMetrics, and a message saying its
  run was interrupted before recording it);
- records as FAILED the refreshes a dead run planned but never finished (its plan is kept under
  `target/runs/<run id>/`; a run that recorded all its refreshes leaves a `recorded` marker).

Only the DTs whose log moved past the newest version the history knows are read, and only the
commits after it, from Delta logs (no JVM): a JVM-free command stays at about a second. Rows are
written under the warehouse lock (so no application of a dead run can still be committing); a
read-only command that finds the lock busy leaves the work to the next one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from dtcli.model import SCHEDULED, SUCCEEDED, Frontier, Plan, Project, RefreshRecord
from dtcli.state import history, ledger, owner
from dtcli.state.delta_log import FRONTIER_KEY, HISTORY_DEPTH, TableInfo, open_table

RECORDED = "recorded"        # marker file in a run's folder: every refresh of it has its row
OWNER_FILE = "owner"         # `PID:START` of the dt process that launched the run


@dataclass
class Commit:
    version: int
    timestamp: str
    frontier: Frontier
    metrics: dict[str, str]


def frontier_commits(path: str, after: int, newest: int) -> list[Commit]:
    """Commits after version `after` (up to `newest`) that carry a frontier, oldest first."""
    table = open_table(path)
    if table is None or newest <= after:
        return []
    out = []
    for info in table.history(min(table.version() - after, HISTORY_DEPTH)):   # newest first
        version = info.get("version")
        try:
            payload = json.loads(info.get("userMetadata") or "{}")
        except ValueError:
            continue
        frontier = Frontier.from_dict(payload.get(FRONTIER_KEY)) if isinstance(payload, dict) else None
        if frontier is None or not frontier.run_id or version is None or not after < version <= newest:
            continue      # (a frontier naming no run was not written by a dt run: no refresh to record)
        stamp = datetime.fromtimestamp(int(info.get("timestamp") or 0) / 1000, tz=timezone.utc).isoformat()
        metrics = {k: str(v) for k, v in (info.get("operationMetrics") or {}).items()}
        out.append(Commit(version, stamp, frontier, metrics))
    return sorted(out, key=lambda c: c.version)


def _metric(metrics: dict[str, str], *names: str) -> int:
    return sum(int(metrics.get(n) or 0) for n in names)


def record_for_commit(name: str, commits: list[Commit], previous: Frontier | None,
                      trigger: str = SCHEDULED) -> RefreshRecord:
    """The row a refresh would have written, from the commits it left (oldest first)."""
    last = commits[-1]
    frontier = last.frontier
    updated = sum(_metric(c.metrics, "numTargetRowsUpdated", "numUpdatedRows") for c in commits)
    before = previous.source_versions if previous else {}
    # Spark's metric names, and delta-rs's for a commit it wrote
    counts = (updated + sum(_metric(c.metrics, "numTargetRowsInserted", "numOutputRows", "num_added_rows")
                            for c in commits),
              updated + sum(_metric(c.metrics, "numTargetRowsDeleted", "numDeletedRows") for c in commits),
              sum(_metric(c.metrics, "numTargetRowsCopied", "numCopiedRows") for c in commits))
    changed = sorted(n for n, v in frontier.source_versions.items() if before.get(n) != v)
    return ledger.recovered(name, frontier, commits[0].timestamp, last.timestamp, last.version, counts, changed,
                            trigger)


def missing(project: Project, tables: dict[str, TableInfo | None],
            past: list[RefreshRecord]) -> tuple[list[RefreshRecord], list[str]]:
    """Rows the history lacks (committed refreshes, then the unfinished refreshes of dead runs),
    and the dead runs whose folders can then be marked recorded."""
    recorded = {(r.name, r.run_id) for r in past}
    known: dict[str, int] = {}
    for r in past:
        if r.table_version is not None:
            known[r.name] = max(known.get(r.name, -1), r.table_version)
    plans = _unrecorded_plans(project)
    triggers = {(s.name, p.run_id): s.trigger for p in plans for s in p.steps}
    new: list[RefreshRecord] = []
    for name, info in tables.items():
        if info is None or info.version <= known.get(name, -1):
            continue
        commits = frontier_commits(project.table_path(name), known.get(name, -1), info.version)
        previous = next((r.source_versions for r in past if r.name == name and r.state == SUCCEEDED
                         and r.source_versions), None)
        prev = Frontier(previous) if previous else None
        for run_id in dict.fromkeys(c.frontier.run_id for c in commits):
            mine = [c for c in commits if c.frontier.run_id == run_id]
            if (name, run_id) not in recorded:
                new.append(record_for_commit(name, mine, prev, triggers.get((name, run_id), SCHEDULED)))
                recorded.add((name, run_id))
            prev = mine[-1].frontier
    dead = []
    for plan, who in ((p, _owner(project, p.run_id)) for p in plans):
        if who is not None and who[0] != os.getpid() and owner.alive(*who):
            continue      # its dt still runs (on another target's warehouse, or starting up)
        dead.append(plan.run_id)
        stamp = datetime.now(timezone.utc).isoformat()
        gone = f"dt (pid {who[0]})" if who else "the dt process"
        for step in plan.spark_steps:
            if step.name in plan.spare:
                continue      # a spare may not have started: its commit, if any, is recorded above
            if (step.name, plan.run_id) not in recorded:
                new.append(ledger.gone(step, plan.run_id, f"{gone} of run {plan.run_id} is gone; its Spark "
                                       "application ended before this refresh committed", stamp))
                recorded.add((step.name, plan.run_id))
    return new, dead


def reconcile(project: Project, tables: dict[str, TableInfo | None],
              past: list[RefreshRecord] | None = None) -> list[RefreshRecord]:
    """Append the missing rows; call under the warehouse lock. Returns what was appended."""
    past = recorded_history(project) if past is None else past
    new, dead = missing(project, tables, past)
    ledger.append(project.warehouse, new)
    for run_id in dead:
        mark_recorded(project, run_id)
    return new


def recorded_history(project: Project) -> list[RefreshRecord]:
    """What `missing` reads of the history: each DT's newest rows (its newest table version and
    success among them) and every row of the runs not marked recorded."""
    return history.recent(project.warehouse, run_ids=[p.run_id for p in _unrecorded_plans(project)])


def committed_in_run(name: str, path: str, run_id: str, trigger: str = SCHEDULED) -> RefreshRecord | None:
    """The row for a refresh of run `run_id` that committed although its application died
    before saying so (the JVM killed just after the commit), or None when it did not commit."""
    table = open_table(path)
    if table is None:
        return None
    commits = frontier_commits(path, max(-1, table.version() - HISTORY_DEPTH), table.version())
    mine = [c for c in commits if c.frontier.run_id == run_id]
    if not mine:
        return None
    before = [c for c in commits if c.version < mine[0].version]
    return record_for_commit(name, mine, before[-1].frontier if before else None, trigger)


def mark_recorded(project: Project, run_id: str) -> None:
    folder = project.target_dir / "runs" / run_id
    if folder.is_dir():
        (folder / RECORDED).write_text("every refresh of this run has its history row\n")


def note_owner(run_dir: Path) -> None:
    (run_dir / OWNER_FILE).write_text(owner.token() + "\n")


def _owner(project: Project, run_id: str) -> tuple[int, str | None] | None:
    try:
        return owner.parse((project.target_dir / "runs" / run_id / OWNER_FILE).read_text().strip())
    except OSError:
        return None


def _unrecorded_plans(project: Project) -> list[Plan]:
    """Plans of runs on this warehouse that did not (yet) say all their refreshes are recorded."""
    runs = project.target_dir / "runs"
    if not runs.is_dir():
        return []
    plans = []
    for folder in sorted(runs.iterdir()):
        plan_file = folder / "plan.json"
        if (folder / RECORDED).exists() or not plan_file.exists():
            continue
        try:
            plan = Plan.from_json(plan_file.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError, KeyError):
            continue
        if plan.warehouse == project.warehouse:
            plans.append(plan)
    return plans


def settle(project: Project, tables: dict[str, TableInfo | None]) -> None:
    """For a command that only reads (show, explain): reconcile when something is missing and
    the warehouse lock is free; a busy lock means a run is on it, and that run reconciles."""
    from dtcli.errors import LockTimeout
    from dtcli.state.lock import warehouse_lock

    new, dead = missing(project, tables, recorded_history(project))
    if not new and not dead:
        return
    try:
        with warehouse_lock(project, "show (recording an interrupted run)"):
            reconcile(project, tables)
    except LockTimeout:
        pass
