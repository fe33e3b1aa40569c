"""A watch pass takes on only as much due work as keeps it short, the oldest data first, so that
each DT's lag peaks near one round of all the work plus one short pass instead of two rounds
(planning/pass_budget.py). Simulated on an injected clock: no JVM, no wall clock."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from dtcli.model import FULL, NO_DATA, SCHEDULED, RefreshStep, StepOptions
from dtcli.planning import critical_path, pass_budget, scheduler
from tests.sched_helpers import T0, chain_project, checked_at, info, simulate_watch


def _step(name, upstream=(), action=FULL):
    return RefreshStep(name=name, path=f"/w/{name}", action=action, trigger=SCHEDULED, sql="", inputs=[],
                       definition_hash="h", refresh_mode=FULL, upstream=list(upstream))


def test_groups_keep_a_dt_with_the_dts_it_reads():
    steps = [_step("a"), _step("b"), _step("c", ["a"]), _step("d", ["c", "b"]), _step("e")]
    assert [[s.name for s in g] for g in pass_budget.groups(steps)] == [["a", "b", "c", "d"], ["e"]]
    assert [[s.name for s in g] for g in pass_budget.groups(steps[:3] + steps[4:])] == [["a", "c"], ["b"], ["e"]]


def test_take_fills_a_pass_with_the_oldest_data_first_and_always_takes_one_group():
    steps = [_step(n) for n in "abcde"]
    stamps = {"a": T0, "b": T0 - timedelta(seconds=30), "c": T0 - timedelta(seconds=20), "d": None, "e": T0}
    work = {n: 4.0 for n in "abcde"}
    due = set("abcde")
    # 2 threads, 8 s: four refreshes of 4 s; never refreshed first, then the oldest data
    assert pass_budget.take(steps, due, stamps, work, 2, 8) == {"d", "b", "c", "a"}
    assert pass_budget.take(steps, due, stamps, work, 1, 8) == {"d", "b"}
    # a refresh longer than the budget still runs, with what fits beside it on the other thread
    assert pass_budget.take(steps, due, stamps, {**work, "d": 30.0}, 2, 8) == due
    assert pass_budget.take(steps, due, stamps, {**work, "d": 30.0}, 1, 8) == {"d"}
    # NO_DATA refreshes cost nothing: they always come along
    quiet = [_step(n, action=NO_DATA if n in "ce" else FULL) for n in "abcde"]
    assert pass_budget.take(quiet, due, stamps, work, 1, 8) == {"d", "b", "c", "e"}
    # a group goes whole, and only its due DTs are returned (its upstream is added by the planner)
    chained = [_step("a"), _step("b", ["a"]), _step("c")]
    assert pass_budget.take(chained, {"b", "c"}, {"b": T0 - timedelta(seconds=9), "c": T0},
                            {"a": 4.0, "b": 4.0, "c": 4.0}, 1, 8) == {"b"}


def test_defer_leaves_the_rest_due_at_once_and_says_why(tmp_path):
    lags = {f"q{i}": "1 minute" for i in range(4)}
    project = chain_project(tmp_path, lags, {n: "src" for n in lags})
    checked = checked_at(project, {n: info(project, n) for n in project.tables})
    decision = scheduler.Decision(refresh=set(lags), stamps={n: T0 - timedelta(seconds=i) for i, n in enumerate(lags)})
    decision.timings = {}
    assert pass_budget.defer(checked, decision, [_step(n) for n in lags], 2) == set()   # nothing measured
    from dtcli.planning.refresh_times import Sample, Timing

    decision.timings = {n: Timing((Sample(6.0, 6.0),)) for n in lags}
    later = pass_budget.defer(checked, decision, [_step(n) for n in lags], 2)
    assert decision.refresh == {"q3", "q2", "q1"} and later == {"q0"}    # 10 s of a 1-minute lag
    assert decision.not_due == {"q0": checked.now}
    assert decision.skipped["q0"].startswith("due, left to the next pass")


def test_short_passes_keep_a_pipeline_within_a_lag_that_one_snapshot_per_pass_misses(tmp_path):
    """22 independent DTs of one minute, 3 s of work each, 2 threads: one pass of all of them
    takes 33 s, so the DT committed last waits two passes (66 s); short passes of about 10 s
    keep every DT near one round plus one pass."""
    lags = {f"q{i:02d}": "1 minute" for i in range(1, 23)}
    project = chain_project(tmp_path, lags, {n: "src" for n in lags})

    def finish(name, refreshed):        # side by side, two at a time, in name order
        return 3.0 * (sorted(refreshed).index(name) // 2 + 1)

    def own(name, refreshed):
        return 3.0

    one = simulate_watch(project, 900, finish, work=own, threads=2)
    short = simulate_watch(project, 900, finish, work=own, threads=2, short_pass=True)
    assert max(one.peak(n, skip=2) for n in lags) > 60
    assert max(short.peak(n, skip=2) for n in lags) <= 60
    assert max(len(refreshed) for _, refreshed in short.passes[2:]) <= 8
    # the same work gets done: every DT refreshed about as often
    assert min(len(short.lags[n]) for n in lags) >= min(len(one.lags[n]) for n in lags)


def test_a_watch_pass_plans_the_oldest_due_dts_and_the_next_pass_takes_the_rest(tmp_path):
    """On a warehouse written without Spark: six due DTs whose refreshes took 12 s of work each;
    a watch's pass (4 threads, the default) plans the four with the oldest data (one 12 s round
    of the threads), a plain `dt run` all six."""
    from dtcli import api
    from dtcli.state import ledger
    from tests.sched_helpers import fake_dt, write_source

    lags = {f"q{i}": "1 minute" for i in range(6)}
    project = chain_project(tmp_path, lags, {n: "src" for n in lags}, extra_yml={})
    assert project.threads == 4
    write_source(project, [1, 2, 3])
    for i, name in enumerate(lags):
        fake_dt(project, name, T0 - timedelta(seconds=60 + i))
    write_source(project, [4])              # every DT has a change to refresh
    ledger.append(project.warehouse, [
        _record(name, T0 - timedelta(seconds=60 + i)) for i, name in enumerate(lags)])
    checked = api.check(project, now=T0 + timedelta(seconds=1))
    whole = api.plan_scheduled(checked)
    assert {s.name for s in whole.plan.steps} == set(lags)
    short = api.plan_scheduled(api.check(project, now=T0 + timedelta(seconds=1)), short_pass=True)
    fitted = [s.name for s in short.plan.steps if s.name not in short.plan.spare]
    assert set(fitted) == {"q5", "q4", "q3", "q2"}
    assert set(short.decision.skipped) == {"q0", "q1"} and set(short.decision.not_due) == {"q0", "q1"}
    # the two left over read nothing the pass refreshes: they come along as its spares, oldest first
    assert short.plan.spare == ["q1", "q0"]
    assert api.plan_scheduled(api.check(project, now=T0 + timedelta(seconds=1))).plan.spare == []


def test_only_a_step_that_stands_alone_in_the_plan_can_be_a_spare():
    steps = [_step("a"), _step("b", ["a"]), _step("c"), _step("d"), _step("e", action=NO_DATA), _step("f")]
    steps[3] = dataclasses.replace(steps[3], options=StepOptions(after=["c"]))  # d is ordered after c
    assert critical_path.alone(steps) == {"e", "f"}
    stamps = {"a": T0, "b": T0, "f": T0 - timedelta(seconds=5)}
    # b reads a, c and d are ordered, e needs no Spark (it is recorded without it anyway)
    assert pass_budget.spares(steps, {"b", "d", "e", "f"}, stamps) == ["f"]
    steps.append(_step("g"))
    assert pass_budget.spares(steps, {"f", "g", "a"}, stamps) == ["g", "f"]    # never refreshed first


def test_a_spare_that_ran_is_no_longer_left_to_the_next_pass_and_one_that_did_not_is_not_lost(tmp_path):
    """The pass's bookkeeping, with a launcher that reports what an application ran: the spare
    it ran counts as refreshed, the one it never started is neither a lost refresh (no record,
    no history row) nor refreshed (still due, at once)."""
    from dtcli import api
    from dtcli.engine.launch.contract import LaunchResult
    from dtcli.state import history, ledger
    from tests.sched_helpers import fake_dt, write_source

    lags = {f"q{i}": "1 minute" for i in range(6)}
    project = chain_project(tmp_path, lags, {n: "src" for n in lags}, extra_yml={})
    write_source(project, [1, 2, 3])
    for i, name in enumerate(lags):
        fake_dt(project, name, T0 - timedelta(seconds=60 + i))
    write_source(project, [4])
    ledger.append(project.warehouse, [_record(name, T0 - timedelta(seconds=60 + i)) for i, name in enumerate(lags)])
    seen = {}

    def launch(project, plan, on_event, lock=None):     # the application ran every step but spare q0
        seen["plan"] = plan
        records = [ledger.refreshed(plan, s, "SUCCEEDED", ledger.now()) for s in plan.steps if s.name != "q0"]
        ledger.append(project.warehouse, records)
        return LaunchResult(returncode=0, records=records, done=True, started=True)

    result = api.run(api.check(project, now=T0 + timedelta(seconds=1)), launcher=launch, short_pass=True)
    assert seen["plan"].spare == ["q1", "q0"]
    assert {r.name for r in result.records} == {"q1", "q2", "q3", "q4", "q5"}
    assert set(result.decision.skipped) == {"q0"} and set(result.decision.not_due) == {"q0"}
    run_id = seen["plan"].run_id
    assert "q0" not in {r.name for r in history.recent(project.warehouse, run_ids=[run_id]) if r.run_id == run_id}


def _record(name, stamp):
    from dtcli.model import INCREMENTAL, SUCCEEDED, RefreshRecord

    end = stamp + timedelta(seconds=13)
    return RefreshRecord(name, SUCCEEDED, INCREMENTAL, SCHEDULED, stamp.isoformat(),
                         (end - timedelta(seconds=12)).isoformat(), end.isoformat(), "r")


def test_the_pass_that_starts_the_application_refreshes_every_scheduled_dt(tmp_path):
    """A watcher's pass with no Spark application running (`cold`): when it needs Spark, every
    scheduled DT is refreshed, due or not, so the cold start is paid once; when it needs no
    Spark, it stays the lag-aware pass."""
    from dtcli import api
    from tests.sched_helpers import fake_dt, write_source

    project = chain_project(tmp_path, {"due": "1 minute", "early": "1 hour", "manual": "1 hour"},
                            {"due": "src", "early": "src", "manual": "src"},
                            extra_yml={"manual": "scheduler: disable\n"})
    write_source(project, [1, 2, 3])
    fake_dt(project, "due", T0 - timedelta(seconds=120))
    fake_dt(project, "early", T0)
    fake_dt(project, "manual", T0)
    now = T0 + timedelta(seconds=1)
    quiet = api.plan_scheduled(api.check(project, now=now), cold=True)
    assert {s.name for s in quiet.plan.steps} == {"due"} and not quiet.plan.needs_spark
    write_source(project, [4])
    plain = api.plan_scheduled(api.check(project, now=now), short_pass=True)
    assert {s.name for s in plain.plan.steps} == {"due"}
    cold = api.plan_scheduled(api.check(project, now=now), cold=True)
    assert {s.name for s in cold.plan.steps} == {"due", "early"}      # never an on-demand DT
