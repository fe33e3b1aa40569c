"""The scheduler aims at the target lag: periods leave room for the measured refresh time,
passes follow one another when they must, the longest chain starts first, and a DT that cannot
meet its lag says so. Simulated on an injected clock (no JVM, no wall clock)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dtcli.model import CREATION, FULL, INCREMENTAL, NO_DATA, SCHEDULED, SUCCEEDED, RefreshRecord, RefreshStep
from dtcli.planning import refresh_times, scheduler
from dtcli.planning.critical_path import critical_path_first
from dtcli.planning.schedule import lag_period, period_seconds
from tests.sched_helpers import T0, chain_project, checked_at, info, simulate_watch


def _record(name, start, to_commit, work=None, action=INCREMENTAL, state=SUCCEEDED, app=None, trigger=SCHEDULED):
    stamp = T0 + timedelta(seconds=start)
    end = stamp + timedelta(seconds=to_commit)
    began = end - timedelta(seconds=work if work is not None else to_commit)
    return RefreshRecord(name, state, action, trigger, stamp.isoformat(), began.isoformat(), end.isoformat(), "r",
                         query_id=f"{app}/r{start}" if app else None)


@pytest.mark.parametrize(("lag", "to_commit", "period"), [
    (60, None, 48), (60, 9, 48), (60, 10, 24), (60, 33, 24), (60, 34, 12), (60, 40, 12),
    (60, 50, 6), (60, 58, 6), (60, 90, 6), (600, None, 384), (600, 186, 384), (600, 187, 192),
])
def test_the_period_leaves_room_for_the_measured_refresh_time(lag, to_commit, period):
    assert lag_period(lag, to_commit) == period
    assert 48 % period == 0 or period % 48 == 0      # still on the aligned grid: ticks coincide
    if to_commit is not None and period > 6:
        assert period + to_commit <= 0.95 * lag     # with a margin of 5 % of the lag


def test_estimates_ignore_one_outlier_and_no_data_refreshes():
    rows = [_record("a", 500, 9), _record("a", 400, 70), _record("a", 300, 10), _record("a", 200, 11),
            _record("a", 100, 12), _record("a", 0, 99),            # the sixth is not looked at
            _record("a", 530, 0.5, action=NO_DATA), _record("b", 0, 5, state="FAILED")]
    rows.sort(key=lambda r: r.refresh_end_time, reverse=True)
    timings = refresh_times.measured(rows)
    assert set(timings) == {"a"}
    assert [x.to_commit for x in timings["a"].samples] == [9, 70, 10, 11, 12]
    assert timings["a"].to_commit == 12             # second largest: the 70 s outlier ignored
    assert refresh_times.estimate([80, 10]) == 80   # two samples: the larger (the creation's)
    # a watcher adds what its pass measured to what it knew
    later = refresh_times.measured([_record("a", 600, 30)], timings)
    assert [x.to_commit for x in later["a"].samples] == [30, 9, 70, 10, 11]


def test_a_watchers_first_pass_and_the_runs_before_it_do_not_count_once_it_has_more():
    """The creation run and a watcher's first pass each start a JVM: several times a later pass."""
    creation, first = _record("a", 0, 300, app="local-1"), _record("a", 400, 200, app="local-2")
    second, third = _record("a", 700, 20, app="local-2"), _record("a", 800, 25, app="local-2")
    assert refresh_times.measured([first, creation])["a"].to_commit == 300      # all there is
    assert refresh_times.measured([second, first, creation])["a"].to_commit == 20
    assert refresh_times.measured([third, second, first, creation])["a"].to_commit == 25
    # dt run from cron: an application per run, every one of them counts
    cron = [_record("a", 60 * k, 30 + k, app=f"local-{k}") for k in range(5, 0, -1)]
    assert refresh_times.measured(cron)["a"].to_commit == 34


def test_a_creation_counts_only_until_a_later_refresh_is_measured():
    """Creating 22 DTs side by side took 132-152 s each to commit; their first refreshes a tenth."""
    creation = _record("a", 0, 140, action=FULL, app="local-1", trigger=CREATION)
    first, second = _record("a", 300, 12, app="local-2"), _record("a", 400, 14, app="local-3")
    assert refresh_times.measured([creation])["a"].to_commit == 140          # all there is
    assert refresh_times.measured([first, creation])["a"].to_commit == 12
    assert refresh_times.measured([second, first, creation])["a"].to_commit == 14
    why = refresh_times.cannot_meet("a", 60, refresh_times.reaches(
        refresh_times.measured([first, creation]), {}, {"a": 60}, 4)["a"])
    assert why is None


def test_a_dt_commits_after_its_upstreams_so_it_inherits_their_time():
    timings = {"up": refresh_times.Timing((refresh_times.Sample(30.0, 30.0),)),
               "down": refresh_times.Timing((refresh_times.Sample(5.0, 5.0),))}
    seconds = refresh_times.to_commit(timings, {"up": [], "down": ["up"], "new": ["down"]})
    assert seconds == {"up": 30.0, "down": 30.0, "new": 30.0}


def test_cannot_meet_says_so_with_the_measured_time():
    assert refresh_times.cannot_meet("q09", 60, refresh_times.Reach(30)) is None
    why = refresh_times.cannot_meet("q09", 60, refresh_times.Reach(41.4))
    assert why.startswith("q09 cannot meet its target lag of 1 minute: its refreshes take 41 s")
    assert "about 83 s" in why and "at least 2 minutes" in why


def test_cannot_meet_counts_a_round_of_the_work_of_the_dts_of_its_lag_or_shorter():
    """22 one-minute DTs whose refreshes each take 10 s of work on 4 threads: each commits 12 s
    after its snapshot, but a round of all of them takes 55 s, so no short pass brings any
    back within the minute; an hourly DT's work is not in their round."""
    def timing(work, to_commit):
        return refresh_times.Timing((refresh_times.Sample(to_commit, work),))
    timings = {f"q{i:02d}": timing(10.0, 12.0) for i in range(22)}
    timings["hourly"] = timing(300.0, 300.0)
    lags = {**{name: 60 for name in timings}, "hourly": 3600}
    reach = refresh_times.reaches(timings, {}, lags, 4)
    assert reach["q00"].round == 55.0 and reach["q00"].seconds == 67.0
    why = refresh_times.cannot_meet("q00", 60, reach["q00"])
    assert why.startswith("q00 cannot meet its target lag of 1 minute: one round of the DTs of its lag or "
                          "shorter takes 55 s of work on 4 threads and its refreshes 12 s")
    assert "at least 2 minutes" in why
    assert reach["hourly"].round == (22 * 10 + 300) / 4
    assert refresh_times.cannot_meet("hourly", 3600, reach["hourly"]) is None
    # 8 s each: a round of 44 s and 12 s to commit stay within the minute
    fewer = refresh_times.reaches({n: timing(8.0, 12.0) for n in lags}, {}, lags, 4)
    assert refresh_times.cannot_meet("q00", 60, fewer["q00"]) is None


def test_a_one_minute_dt_taking_20_s_stays_within_its_lag(tmp_path):
    project = chain_project(tmp_path, {"a": "1 minute"}, {"a": "src"})
    log = simulate_watch(project, 600, lambda name, refreshed: 20)
    # the first refresh has no measurement yet: the lag's own period, 48 s, and 68 s of lag
    assert log.lags["a"][0] == 68
    assert log.peak("a", skip=1) <= 60
    offsets = [offset for offset, _ in log.passes]
    assert all(b - a == 24 for a, b in zip(offsets[1:], offsets[2:]))   # on the 24 s grid
    # with the period of the lag alone, it would have been 48 + 20 every time
    assert period_seconds(60) + 20 > 60


def test_two_dts_sharing_passes_both_meet_a_one_minute_lag(tmp_path):
    project = chain_project(tmp_path, {"fast": "1 minute", "slow": "1 minute"}, {"fast": "src", "slow": "src"})

    def took(name, refreshed):         # a pass of both takes longer for each (they share 2 cores)
        alone = {"fast": 2, "slow": 18}[name]
        return alone + (6 if len(refreshed) > 1 else 0)
    log = simulate_watch(project, 900, took)
    assert log.peak("fast", skip=2) <= 60 and log.peak("slow", skip=2) <= 60
    # the fast one is not refreshed more often than it needs
    assert len(log.lags["fast"]) < len(log.lags["slow"])


def test_a_dt_that_cannot_meet_its_lag_refreshes_back_to_back_and_says_so(tmp_path):
    project = chain_project(tmp_path, {"a": "1 minute"}, {"a": "src"})
    log = simulate_watch(project, 600, lambda name, refreshed: 40)
    starts = [offset for offset, _ in log.passes]
    assert all(b - a == 40 for a, b in zip(starts[1:], starts[2:]))    # no idle time between passes
    assert log.peak("a", skip=2) == 80
    timings = refresh_times.measured(log.records)
    checked = checked_at(project, {"a": info(project, "a")})
    from dtcli.api.runs import behind

    assert behind(checked, timings, {"a"})["a"].startswith("a cannot meet its target lag of 1 minute: its "
                                                            "refreshes take 40 s")


def test_next_wake_follows_a_pass_that_outlasted_a_period_but_not_a_failure(tmp_path):
    project = chain_project(tmp_path, {"a": "1 minute", "b": "1 minute"}, {"a": "src", "b": "src"})
    checked = checked_at(project, {n: info(project, n) for n in project.tables})
    chosen = {"a": 24, "b": 24}
    ended = T0 + timedelta(seconds=30)                 # the pass began at T0 and ran past T0 + 24
    stamps = {"a": T0, "b": T0 - timedelta(seconds=24)}   # b failed in it: its stamp did not move
    assert scheduler.next_wake(checked, stamps, {}, ended, chosen=chosen, ready={"a"}) == ended
    # b alone (failed): retried at the next tick of its lag's own period, not at once
    refreshed_later = {"a": T0 + timedelta(seconds=24), "b": stamps["b"]}     # a is due at T0 + 48
    assert scheduler.next_wake(checked, refreshed_later, {}, ended, chosen=chosen, ready={"a"}) \
        == T0 + timedelta(seconds=48)
    # b not tried in the pass (it was not due when it began): refreshed at once
    assert scheduler.next_wake(checked, refreshed_later, {}, ended, chosen=chosen, ready={"a", "b"}) == ended


def _step(name, upstream=(), action=FULL):
    return RefreshStep(name=name, path=f"/w/{name}", action=action, trigger=SCHEDULED, sql="", inputs=[],
                       definition_hash="h", refresh_mode=FULL, upstream=list(upstream))


def test_critical_path_first_starts_the_longest_chain_and_keeps_dependencies():
    steps = [_step("a"), _step("b"), _step("c", ["a"]), _step("d"), _step("e", ["c"])]
    work = {"a": 2, "b": 10, "c": 3, "d": 1, "e": 8}   # a -> c -> e is 13 s, b is 10 s
    order = [s.name for s in critical_path_first(steps, work)]
    assert order == ["a", "c", "b", "e", "d"]   # c heads 11 s of chain, b 10 s
    assert order.index("a") < order.index("c") < order.index("e")
    # without measurements the DAG order is kept
    assert [s.name for s in critical_path_first(steps, {})] == ["a", "b", "c", "d", "e"]
    # an unmeasured refresh counts as the mean; NO_DATA as nothing
    steps = [_step("x", action=NO_DATA), _step("y"), _step("z")]
    assert [s.name for s in critical_path_first(steps, {"z": 4, "x": 50})] == ["y", "z", "x"]
