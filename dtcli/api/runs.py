"""Planning and running refreshes: `dt run`, `dt refresh`, and the records they leave.

A run plans under the warehouse lock, from what the previous run committed: the snapshot of
the checked project is brought up to date once the lock is held. NO_DATA steps are recorded
without a JVM; the rest runs in one spark-submit application.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import TypedDict

from dtcli.api.lineage_transport import destination as lineage_destination
from dtcli.engine.launch.contract import Launcher, LaunchResult
from dtcli.events import Events, RefreshFinished, Suspended
from dtcli.model import MANUAL, NO_DATA, SCHEDULED, Plan, Project, RefreshRecord
from dtcli.model.refresh_record import any_failed
from dtcli.planning import on_demand, pass_budget, refresh_times, scheduler, selectors
from dtcli.planning.checked import Checked
from dtcli.planning.plan import build_plan
from dtcli.state import catalog as catalog_state
from dtcli.state import history, ledger, reconcile, scheduling
from dtcli.state.lock import Held, WarehouseLock

# Waiting longer than this for the lock means another run committed meanwhile: plan at the
# moment the lock was obtained, not at the moment the command started.
_WAITED = 0.5


def plan_run(checked: Checked, names: list[str] | None = None, *, trigger: str = SCHEDULED,
             full_refresh: bool = False) -> Plan:
    """A plan for the selected DTs and their upstream, whatever their schedule (`dt refresh`,
    `dt run --all`); `plan_scheduled` is the lag-aware pass of a plain `dt run`."""
    selected = selectors.select(checked.project, checked.graph, names)
    on_demand.check_created(checked, selected)
    past = history.recent(checked.project.warehouse)
    return build_plan(checked, selected, trigger, full_refresh=full_refresh, history=past,
                      catalog_events=catalog_state.recorded(checked.project))


@dataclass
class ScheduledPlan:
    plan: Plan
    decision: scheduler.Decision


def plan_scheduled(checked: Checked, names: list[str] | None = None, *, all_tables: bool = False,
                   full_refresh: bool = False, short_pass: bool = False, cold: bool = False) -> ScheduledPlan:
    """Reconcile + one scheduling pass: new and redefined DTs, plus the selected DTs whose own
    schedule is due (all selected ones with `all_tables`), with the upstream DTs they need.
    `short_pass` (a watch's pass): only as many of them as keep the pass short, the oldest data
    first (planning/pass_budget.py); the rest are due at once, in the next pass, and those that
    stand alone in the plan come along as its spares (`Plan.spare`). `cold` (a
    watch's pass with no Spark application running): when the pass needs Spark, every scheduled
    DT is refreshed, due or not, so that the application's cold start and every DT's first
    refresh in it are paid in this one pass rather than spread over the passes after it."""
    project = checked.project
    candidates = selectors.select(project, checked.graph, names)
    states = scheduling.current(project.warehouse)
    past = history.recent(project.warehouse)
    stamps = scheduler.data_timestamps(checked.snapshot, past)
    timings = refresh_times.measured(past)
    decide = partial(scheduler.decide, checked, stamps, states, candidates,
                     all_tables=all_tables or full_refresh, asked=names is not None, timings=timings,
                     short_passes=short_pass)
    decision = decide()
    events = catalog_state.recorded(project)
    plan = build_plan(checked, decision.refresh, SCHEDULED, full_refresh=full_refresh, history=past,
                      catalog_events=events)
    if cold and plan.needs_spark and not all_tables and not full_refresh:
        decision = decide(catch_up=True)
        plan = build_plan(checked, decision.refresh, SCHEDULED, history=past, catalog_events=events)
    elif short_pass and not all_tables and not full_refresh:
        later = pass_budget.defer(checked, decision, plan.steps, plan.threads)
        if later:
            plan = build_plan(checked, decision.refresh, SCHEDULED, history=past, catalog_events=events,
                              spare=pass_budget.spares(plan.steps, later, decision.stamps))
    return ScheduledPlan(plan, decision)


class AutoSuspension(TypedDict):
    """A DT this run suspended after repeated failures, and the DTs held back with it."""

    name: str
    reason: str | None
    downstream: list[str]


@dataclass
class RunResult:
    plan: Plan
    records: list[RefreshRecord] = field(default_factory=list)
    launched: bool = False
    log_path: str | None = None
    decision: scheduler.Decision | None = None
    suspended: list[AutoSuspension] = field(default_factory=list)   # auto-suspensions of this run
    interrupted: bool = False     # stopped by the user (Ctrl-C, SIGTERM) between refreshes
    not_started: str | None = None    # why the Spark application could not start (no refresh ran)
    # DT -> why it cannot meet its target lag, for the DTs this scheduled run refreshed
    behind: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Whether a refresh failed (FAILURE_STATES): the exit code, the summary and
        run_results' `success` all say this."""
        return any_failed(self.records)

    @property
    def success(self) -> bool:
        return not self.failed and not self.interrupted


def no_data_records(plan: Plan) -> list[RefreshRecord]:
    stamp = ledger.now()
    return [ledger.no_data(plan, s, stamp) for s in plan.steps if s.action == NO_DATA]


def spark_submit(project: Project, plan: Plan, on_event: Events, lock: Held | None = None) -> LaunchResult:
    """The default launcher: one spark-submit application for the whole plan."""
    from dtcli.engine.launch.launcher import launch

    return launch(project, plan, on_event, lock)


def _announce(record: RefreshRecord, result: RunResult, on_event: Events) -> None:
    result.records.append(record)
    on_event(RefreshFinished(record))


def execute(checked: Checked, plan: Plan, on_event: Events = lambda e: None,
            launcher: Launcher = spark_submit, lock: Held | None = None) -> RunResult:
    """Record NO_DATA steps without a JVM; run the rest in one spark-submit application
    (`launcher` is injectable: tests and notebooks run the plan in-process), which is handed
    `lock`, the warehouse lock the caller holds."""
    project = checked.project
    result = RunResult(plan)
    quiet = no_data_records(plan)
    ledger.append(project.warehouse, quiet)
    for record in quiet:
        _announce(record, result, on_event)
    if not plan.needs_spark:
        return result
    launched = launcher(project, plan, on_event, lock)
    result.launched, result.log_path = True, str(launched.log_path)
    result.interrupted = launched.interrupted
    result.records.extend(launched.records)
    finished = {r.name for r in result.records} | set(plan.spare)     # a spare not started is not lost
    lost = [s for s in plan.spark_steps if s.name not in finished]
    not_started = _not_started(launched) if lost and not result.records else None
    if not_started:
        # No refresh ran: one error for the run, and records that do not count toward
        # auto-suspension (a mistyped setting must not suspend the project after five runs).
        result.not_started = not_started
        stamp = ledger.now()
        records = [ledger.not_started(s, plan.run_id, not_started, stamp) for s in lost]
        ledger.append(project.warehouse, records)
        result.records.extend(records)
        lost = []
    if lost:
        # The application died (killed, out of memory): those refreshes did not commit, unless
        # it died between a commit and its history row. Or after that row: the driver, its JVM
        # killed, may have written it without dt hearing (the launcher waited for the driver to
        # end), and such a refresh is announced from its row, not recorded a second time.
        written = {r.name: r for r in history.recent(project.warehouse, run_ids=[plan.run_id])
                   if r.run_id == plan.run_id}
        unheard = [written[s.name] for s in lost if s.name in written]
        lost = [s for s in lost if s.name not in written]
        why = (f"spark-submit exited with code {launched.returncode} before this refresh finished; "
               f"see {launched.log_path}")
        stamp = ledger.now()
        records = [reconcile.committed_in_run(s.name, s.path, plan.run_id, s.trigger)
                   or ledger.exited(s, plan.run_id, why, stamp) for s in lost]
        ledger.append(project.warehouse, records)
        for record in unheard + records:
            _announce(record, result, on_event)
    reconcile.mark_recorded(project, plan.run_id)
    if result.failed:
        result.suspended = _auto_suspend(checked, on_event)
    return result


def _not_started(launched: LaunchResult) -> str | None:
    """Why the application could not start a Spark session (a setting Spark rejects, a missing
    jar, no Java, a master it cannot reach), in Spark's own words; None if it started."""
    if launched.not_started:
        return launched.not_started
    if launched.started:
        return None
    from dtcli.engine.launch.launcher import last_error

    return last_error(launched.log_path) or f"spark-submit exited with code {launched.returncode}"


def _auto_suspend(checked: Checked, on_event: Events) -> list[AutoSuspension]:
    """Suspend DTs whose scheduled refreshes failed five times in a row (their downstream DTs
    are then held back too, see scheduler.blocked)."""
    project, graph = checked.project, checked.graph
    events = scheduling.read_events(project.warehouse)
    streaks = scheduler.failure_streaks(history.recent(project.warehouse), scheduling.resumed_at(events))
    new = scheduler.auto_suspensions(streaks, scheduling.current(project.warehouse, events), ledger.now())
    scheduling.append(project.warehouse, new)
    out = []
    for event in new:
        down = []
        if event.name in graph.upstream:
            down = graph.ordered(graph.downstream_closure({event.name}) - {event.name})
        out.append(AutoSuspension(name=event.name, reason=event.reason, downstream=down))
        on_event(Suspended(event.name, event.reason, down))
    return out


def run(checked: Checked, names: list[str] | None = None, *, full_refresh: bool = False,
        trigger: str = SCHEDULED, on_event: Events = lambda e: None, all_tables: bool = False,
        wait: float = 0.0, launcher: Launcher = spark_submit,
        on_plan: Callable[[Plan], None] = lambda plan: None, locker: WarehouseLock | None = None,
        short_pass: bool = False, cold: bool = False) -> RunResult:
    """One `dt run` pass under the warehouse lock (`all_tables=False`: the lag-aware pass),
    taken by `locker` (a watch keeps one across its passes: see WarehouseLock) and handed to
    the launcher. `short_pass`: a watch's pass, which leaves what does not fit a short pass to
    the next one; `cold`: a watch's pass that would start its Spark application, which then
    refreshes every scheduled DT (plan_scheduled).

    The project was checked before the lock is taken, so a project that does not validate
    writes nothing, not even the lock file; under the lock the snapshot is brought up to date,
    so a queued run plans from what the previous one committed."""
    project = checked.project
    lineage_to = lineage_destination(project)      # a bad OPENLINEAGE_CONFIG: an error before the lock
    asked = time.monotonic()
    with (locker or WarehouseLock()).hold(project, "run" if trigger != MANUAL else "refresh", wait) as held:
        waited = time.monotonic() - asked > _WAITED
        checked.snapshot.refresh(project, datetime.now(timezone.utc) if waited else checked.now)
        # a run killed before it recorded everything: its rows first, then plan from them
        reconcile.reconcile(project, checked.snapshot.tables)
        if trigger == MANUAL:
            plan, decision = plan_run(checked, names, trigger=trigger, full_refresh=full_refresh), None
        else:
            scheduled = plan_scheduled(checked, names, all_tables=all_tables, full_refresh=full_refresh,
                                       short_pass=short_pass, cold=cold)
            plan, decision = scheduled.plan, scheduled.decision
            scheduling.register(project.warehouse, decision.register, plan.data_timestamp)
        on_plan(plan)
        # OpenLineage events (openlineage:), from what the engine streams back: dtcli/api/lineage_emitter.py
        lineage = None
        if lineage_to is not None:
            from dtcli.api.lineage_emitter import lineage_run

            lineage = lineage_run(checked, plan, on_event, lineage_to)
        result = execute(checked, plan, lineage or on_event, launcher, held)
    if lineage is not None:
        lineage.finish(result.records, interrupted=result.interrupted)
    result.decision = decision
    if decision is not None:
        _spares_refreshed(decision, plan, result.records)
        result.behind = behind(checked, refresh_times.measured(result.records, decision.timings),
                               {r.name for r in result.records})
    return result


def _spares_refreshed(decision: scheduler.Decision, plan: Plan, records: list[RefreshRecord]) -> None:
    """The pass's spares that did run are no longer left to the next pass."""
    for name in set(plan.spare) & {r.name for r in records}:
        decision.skipped.pop(name, None)
        decision.not_due.pop(name, None)


def behind(checked: Checked, timings: dict[str, refresh_times.Timing], names: set[str]) -> dict[str, str]:
    """The DTs among `names` whose measured refresh time keeps them from their target lag, with
    why (refresh_times.cannot_meet)."""
    seconds = refresh_times.reaches(timings, checked.graph.upstream, checked.effective_lags,
                                    checked.project.threads)
    out = {}
    for name in checked.graph.ordered(names & set(checked.project.tables)):
        if on_demand.is_on_demand(checked.project.tables[name]):
            continue
        why = refresh_times.cannot_meet(name, checked.effective_lags.get(name), seconds.get(name))
        if why:
            out[name] = why
    return out


def refresh(checked: Checked, name: str, on_event: Events = lambda e: None, *, wait: float = 0.0,
            launcher: Launcher = spark_submit,
            on_plan: Callable[[Plan], None] = lambda plan: None) -> RunResult:
    """MANUAL refresh of one DT now, with the upstream DTs it needs, suspended or not."""
    return run(checked, [checked.project.table_key(name)], trigger=MANUAL, on_event=on_event,
               wait=wait, launcher=launcher, on_plan=on_plan)
