"""The order a run starts its refreshes in: the longest chain of measured work first.

A run executes up to `threads` refreshes side by side, each once the refreshes of the plan it
reads have finished, taking the next ready step in plan order (engine/runtime/executor.py). A pass lasts
as long as its longest chain of refreshes, so starting that chain first shortens the pass (the
longest-processing-time-first rule), and with it the lag of every DT the pass refreshes: a DT's
lag peaks at the time between two snapshots plus its time to commit. Without measurements the
plan keeps its DAG order.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from dtcli.model import NO_DATA, RefreshStep


def own_work(steps: list[RefreshStep], work: Mapping[str, float]) -> dict[str, float]:
    """Each step's own measured work: an unmeasured refresh counts as the mean of the measured
    ones, NO_DATA as nothing."""
    known = [work[s.name] for s in steps if s.name in work and s.action != NO_DATA]
    default = sum(known) / len(known) if known else 0.0
    return {s.name: 0.0 if s.action == NO_DATA else work.get(s.name, default) for s in steps}


def chain_seconds(steps: list[RefreshStep], work: Mapping[str, float]) -> dict[str, float]:
    """Per step, its own measured work plus the longest chain of work downstream of it in the
    plan. An unmeasured refresh counts as the mean of the measured ones; NO_DATA as nothing."""
    downstream: dict[str, list[str]] = {s.name: [] for s in steps}
    for step in steps:
        for up in step.upstream:
            if up in downstream:
                downstream[up].append(step.name)
    own = own_work(steps, work)
    chain: dict[str, float] = {}
    for step in reversed(steps):        # steps are in DAG order: downstream ones come later
        chain[step.name] = own[step.name] + max((chain[d] for d in downstream[step.name]), default=0.0)
    return chain


def critical_path_first(steps: list[RefreshStep], work: Mapping[str, float]) -> list[RefreshStep]:
    """`steps` (in DAG order) reordered so that each step still follows the steps it reads, and
    among the steps whose upstream is placed, the one heading the longest chain comes first
    (ties keep the DAG order)."""
    if not work or len(steps) < 2:
        return list(steps)
    chain = chain_seconds(steps, work)
    index = {s.name: i for i, s in enumerate(steps)}
    waiting = {s.name: sum(1 for u in s.upstream if u in index) for s in steps}
    downstream: dict[str, list[str]] = {s.name: [] for s in steps}
    for step in steps:
        for up in step.upstream:
            if up in index:
                downstream[up].append(step.name)
    ready = [(-chain[s.name], index[s.name]) for s in steps if waiting[s.name] == 0]
    heapq.heapify(ready)
    out: list[RefreshStep] = []
    while ready:
        _, i = heapq.heappop(ready)
        step = steps[i]
        out.append(step)
        for d in downstream[step.name]:
            waiting[d] -= 1
            if waiting[d] == 0:
                heapq.heappush(ready, (-chain[d], index[d]))
    return out


def alone(steps: list[RefreshStep]) -> set[str]:
    """The steps that neither read nor are read by another step of `steps`, and are not ordered
    after one (`after`): a pass can start them at any moment, in any order."""
    in_plan = {s.name for s in steps}
    tied = set()
    for step in steps:
        near = {u for u in [*step.upstream, *(step.options.after or ())] if u in in_plan}
        if near:
            tied.update(near | {step.name})
    return in_plan - tied
