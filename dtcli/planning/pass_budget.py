"""How much of what is due one `dt run --watch` pass takes on, so that each DT's lag stays short.

A DT's lag peaks just before a refresh commits, at the time between its two snapshots plus the
time the second refresh took from its snapshot to its commit (refresh_times.py). When every due
DT refreshes in one pass from one snapshot, a pass of P seconds that follows the previous one
leaves the DT committed last with a lag of about 2P. Issue 39 measured it: 22 TPC-H DTs at SF0.1
on 2 cores, warm passes of 28-43 s and peaks of 47-70 s against a one-minute target.

Cut into shorter passes, each taking its own snapshot, the DTs refresh in turn, the oldest data
first: a DT's snapshots are then one round of all the work apart, and its commit comes at most
one short pass after its snapshot, so its lag peaks near the round plus one pass instead of two
rounds. So a watch pass takes the due DTs whose estimated work fits in PASS_SHARE of the
shortest target lag among them, and leaves the rest due for the next pass, which starts at once.

What stays together: a DT and the DTs of the plan it reads (a pass refreshes a DT from the same
snapshot as its upstream DTs, DESIGN.md section 6), so the unit of a pass is a connected group of
the plan's steps. Unrelated DTs may then carry different data timestamps, as they do in Snowflake
when their refreshes do not coincide. A plain `dt run` is one pass and one snapshot, as before.

A pass still waits for its slowest refresh, and the machine may sit half idle meanwhile (issue
39 saw a 42 s pass whose last 30 s ran one refresh). So the DTs left to the next pass that stand
alone in the plan (no upstream or downstream step in it) go along as spares (`Plan.spare`): the
pass starts one, from its own snapshot, only while a step that fitted still runs and fewer
refreshes run than the driver has cores (engine/runtime/executor.py); a spare never started is
simply due in the next pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from dtcli.model import NO_DATA, RefreshStep
from dtcli.planning.checked import Checked
from dtcli.planning.critical_path import alone, own_work
from dtcli.planning.schedule import EPOCH, PASS_SHARE
from dtcli.planning.scheduler import Decision

# PASS_SHARE (planning/schedule.py): shorter passes would cut the lag further, but each costs a
# check of the project, a plan and a history append, and leaves a thread idle at its end when its
# last refresh runs alone.


def groups(steps: list[RefreshStep]) -> list[list[RefreshStep]]:
    """The plan's steps split into groups connected by the DTs they read within the plan (a DT
    with its upstream and downstream steps), each in plan order, in the order of their first step."""
    parent = {s.name: s.name for s in steps}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for step in steps:
        for up in step.upstream:
            if up in parent:
                parent[root(up)] = root(step.name)
    out: dict[str, list[RefreshStep]] = {}
    for step in steps:
        out.setdefault(root(step.name), []).append(step)
    return list(out.values())


def pass_seconds(work: float, longest: float, threads: int) -> float:
    """A pass's estimated length: its work spread over the threads, or its longest refresh."""
    return max(longest, work / max(1, threads))


def take(steps: list[RefreshStep], due: set[str], stamps: Mapping[str, datetime | None],
         work: Mapping[str, float], threads: int, budget: float) -> set[str]:
    """The DTs of `due` this pass refreshes: whole groups of `steps` (the plan of all of `due`),
    the group holding the oldest data first (never refreshed counts as oldest), for as long as
    the pass's estimated length stays within `budget` seconds (or within the first group's own
    length, when that is longer: the other threads take what fits beside it); a step costs its
    `critical_path.own_work`."""
    own = own_work(steps, work)

    def oldest_first(group: list[RefreshStep]) -> tuple[int, datetime]:
        dates = [stamps.get(s.name) for s in group if s.name in due]
        if not dates:
            return (2, EPOCH)
        if any(d is None for d in dates):
            return (0, EPOCH)
        return (1, min(d for d in dates if d is not None))

    ordered = sorted(groups(steps), key=oldest_first)
    taken: set[str] = set()
    total = longest = 0.0
    limit = budget
    for group in ordered:
        group_work = sum(own[s.name] for s in group)
        group_longest = max((own[s.name] for s in group), default=0.0)
        seconds = pass_seconds(total + group_work, max(longest, group_longest), threads)
        if not taken:
            limit = max(budget, seconds)    # a group longer than the budget: fill the other threads
        elif seconds > limit:
            continue
        taken.update(s.name for s in group)
        total += group_work
        longest = max(longest, group_longest)
    return taken & due


def spares(steps: list[RefreshStep], later: set[str], stamps: Mapping[str, datetime | None]) -> list[str]:
    """The DTs of `later` (left to the next pass by `defer`) that this pass may still refresh
    on an idle core: those whose step in `steps` (the plan of every due DT) stands `alone`
    and needs Spark, the oldest data first (never refreshed counts as oldest)."""
    free = alone(steps)
    names = [s.name for s in steps if s.name in later and s.name in free and s.action != NO_DATA]
    return sorted(names, key=lambda n: (stamps.get(n) is not None, stamps.get(n) or EPOCH, n))


def budget_seconds(lags: Mapping[str, int | None], due: set[str]) -> float | None:
    """PASS_SHARE of the shortest target lag among the due DTs (None: none has a lag)."""
    known = [lags[n] for n in due if lags.get(n)]
    return min(known) * PASS_SHARE if known else None


def defer(checked: Checked, decision: Decision, steps: list[RefreshStep], threads: int) -> set[str]:
    """Leave the due DTs that do not fit this watch pass (see `take`) to the next one: they move
    from `decision.refresh` to its skipped DTs, due now, so the watcher wakes again at once.
    Returns them (empty: the plan of `steps` stands)."""
    budget = budget_seconds(checked.effective_lags, decision.refresh)
    if budget is None:
        return set()
    work = {name: timing.work for name, timing in decision.timings.items()}
    later = decision.refresh - take(steps, decision.refresh, decision.stamps, work, threads, budget)
    for name in later:
        decision.refresh.discard(name)
        decision.skipped[name] = (f"due, left to the next pass, which starts when this one ends "
                                  f"(a watch pass takes about {budget:.0f} s of work, so that lags stay short)")
        decision.not_due[name] = checked.now
    return later
