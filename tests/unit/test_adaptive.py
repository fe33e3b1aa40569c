"""ADAPTIVE's estimate: INCREMENTAL for small changes, FULL for large ones, learnt from the DT's
own refreshes without trusting a flat line beyond the changes it has measured."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from dtcli.model import CREATION, FULL, INCREMENTAL, SUCCEEDED, RefreshRecord
from dtcli.planning import adaptive

INPUT = 7_500_000                # rows of the inputs (TPC-H SF1's lineitem and orders)
_start = datetime(2026, 11, 1, tzinfo=timezone.utc)


def record(action: str, seconds: float, *, change: int | None = None, minute: int = 0,
           trigger: str = "SCHEDULED") -> RefreshRecord:
    start = _start + timedelta(minutes=minute)
    return RefreshRecord(name="t", state=SUCCEEDED, refresh_action=action, refresh_trigger=trigger,
                         data_timestamp=None, refresh_start_time=start.isoformat(),
                         refresh_end_time=(start + timedelta(seconds=seconds)).isoformat(), run_id="r",
                         change_rows=change, input_rows=INPUT)


def choose(change: int, history: list[RefreshRecord]) -> adaptive.Estimate:
    return adaptive.estimate(change, INPUT, adaptive.learn(history))


def test_without_history_a_small_change_is_incremental_and_a_few_percent_is_full():
    assert choose(7_500, []).action == INCREMENTAL            # 0.1 % of the input
    assert choose(300_000, []).action == FULL                 # 4 %


def test_small_refreshes_that_cost_the_same_are_not_extrapolated_flat_to_a_large_change():
    """Refreshes of 750 and 7,500 changed rows both took ~4.5 s: the fit has no cost per row.
    A change of 75,000 rows (1 %) cost 16.5 s on TPC-H SF1 against FULL's 6 s: ADAPTIVE must
    not predict 4.5 s for it."""
    history = [record(FULL, 6.0, trigger=CREATION),
               record(INCREMENTAL, 4.6, change=750, minute=1),
               record(INCREMENTAL, 4.5, change=7_500, minute=2),
               record(INCREMENTAL, 4.4, change=750, minute=3),
               record(INCREMENTAL, 4.5, change=7_500, minute=4)]
    assert choose(7_000, history).cheaper == INCREMENTAL      # within what was measured
    big = choose(75_000, history)
    assert big.action == FULL, big.reason
    assert big.threshold_rows is not None and 7_500 < big.threshold_rows < 75_000


def test_a_large_change_measured_cheap_is_trusted():
    """An append-heavy DT whose 100,000-row changes refreshed in 4.5 s keeps choosing INCREMENTAL
    at that size: the floor on the cost per row applies only beyond what was measured."""
    history = [record(FULL, 60.0, trigger=CREATION),
               record(INCREMENTAL, 4.0, change=1_000, minute=1),
               record(INCREMENTAL, 4.5, change=100_000, minute=2)]
    assert choose(90_000, history).action == INCREMENTAL


def test_the_threshold_is_where_the_choice_turns():
    history = [record(FULL, 6.0, trigger=CREATION), record(INCREMENTAL, 4.5, change=7_500, minute=1)]
    threshold = choose(0, history).threshold_rows
    assert threshold is not None
    assert choose(threshold - 1, history).action == INCREMENTAL
    assert choose(threshold, history).action == FULL


def test_recomputes_of_a_table_that_changed_by_a_few_rows_tell_the_level_not_a_slope():
    """Three FULL refreshes at 7,501,193 to 7,501,215 input rows taking 5.4 to 9.9 s (noise):
    a least-squares slope through them predicted FULL at 864,412 s, and ADAPTIVE never chose it."""
    history = [record(FULL, 9.9, trigger=CREATION), record(FULL, 7.35, minute=1), record(FULL, 5.36, minute=2)]
    for n, r in zip((7_501_215, 7_501_193, 7_501_210), history):
        r.input_rows = n
    full = adaptive.learn(history).full.at(INPUT)
    assert 5 < full < 10
    assert choose(500_000, history).action == FULL


def test_full_is_chosen_only_when_it_saves_enough_to_be_worth_rewriting_the_table():
    """A 30-row table of which 10 rows changed: both estimates are the fixed cost and differ by
    microseconds, so the change is applied rather than the table rewritten."""
    tiny = adaptive.estimate(10, 30, adaptive.learn([]))
    assert tiny.full_seconds < tiny.incremental_seconds < tiny.full_seconds + 0.01
    assert tiny.action == INCREMENTAL, tiny.reason
    history = [record(FULL, 6.0, trigger=CREATION), record(INCREMENTAL, 4.5, change=7_500, minute=1)]
    model = adaptive.learn(history)
    full = model.full.at(INPUT)
    just_over = next(n for n in range(7_500, INPUT, 500) if model.incremental.at(n) > full + 0.5)
    assert choose(just_over, history).action == INCREMENTAL       # FULL would save only half a second


def _sized(records: list[RefreshRecord], input_rows: int) -> list[RefreshRecord]:
    for r in records:
        r.input_rows = input_rows
    return records


def test_a_recompute_measured_at_one_size_prices_a_large_change_from_its_whole_cost():
    """order_rank at TPC-H SF1 (1.5 M orders): every recompute read the same rows in about 3.2 s,
    and changes of 200 and 2,000 rows refreshed in about 2.3 s. A change of 20,000 rows then cost
    13.5 s incrementally against FULL's 3.2 s; priced with the default's cost per input row it
    looked like 3.2 s and ADAPTIVE chose INCREMENTAL."""
    orders = 1_500_000
    history = _sized([record(FULL, 3.3, trigger=CREATION), record(FULL, 3.3, minute=2),
                      record(INCREMENTAL, 2.1, change=200, minute=1), record(INCREMENTAL, 2.4, change=200, minute=3),
                      record(FULL, 3.1, minute=4), record(INCREMENTAL, 2.4, change=2_000, minute=5),
                      record(INCREMENTAL, 2.2, change=2_000, minute=6)], orders)
    model = adaptive.learn(history)
    big = adaptive.estimate(20_000, orders, model)
    assert big.action == FULL, big.reason
    assert adaptive.estimate(2_000, orders, model).action == INCREMENTAL


def test_a_small_tables_fixed_cost_does_not_price_its_changed_rows_as_seconds():
    """A 500-row DT recomputes in 3 s, all of it fixed cost: twenty changed rows are still applied."""
    history = _sized([record(FULL, 3.0, trigger=CREATION)], 500)
    model = adaptive.learn(history)
    assert adaptive.estimate(20, 500, model).action == INCREMENTAL
    assert adaptive.estimate(20, 500, model).incremental_seconds < model.full.at(500) + 0.1


def test_after_ten_recomputes_in_a_row_the_incremental_cost_is_measured_again():
    """An INCREMENTAL measured at 20 s against FULL's 3 s (issue 39, Q6 at SF0.1) made every later
    refresh FULL, so the figure was never measured again. After REMEASURE_AFTER recomputes in a
    row, one INCREMENTAL refresh of a change no larger than one measured; then FULL again until
    another ten, unless the new measurement says otherwise."""
    n = adaptive.REMEASURE_AFTER
    history = [record(FULL, 3.0, trigger=CREATION), record(INCREMENTAL, 20.0, change=100, minute=1)]
    history += [record(FULL, 3.0, minute=2 + k) for k in range(n - 1)]
    assert choose(80, history).action == FULL                 # nine recomputes: not yet
    history.append(record(FULL, 3.0, minute=2 + n))
    again = choose(80, history)
    assert again.action == INCREMENTAL and again.remeasure and "measure it again" in again.reason
    assert choose(5_000, history).action == FULL              # a larger change than any measured
    # measured again, still slow: FULL for the next ten
    slow = [*history, record(INCREMENTAL, 20.0, change=80, minute=3 + n)]
    assert choose(80, slow).action == FULL
    # measured again, now fast: INCREMENTAL from now on (two cheap samples outweigh the old one)
    fast = [*history, record(INCREMENTAL, 1.0, change=80, minute=3 + n),
            record(INCREMENTAL, 1.0, change=90, minute=4 + n)]
    assert choose(80, fast).action == INCREMENTAL and not choose(80, fast).remeasure


def test_a_recompute_measured_only_at_creation_is_measured_again_after_three_incremental_refreshes():
    """The other way (issue 39, the lag benchmark at SF0.1): a recompute measured once, at the
    creation (cold, beside every other DT), at 24.8 s kept Q1 INCREMENTAL at 9-11 s a refresh
    where a recompute in the watch took 6-10 s. After CREATION_REMEASURE_AFTER incremental
    refreshes, FULL once when it is expected within CREATION_REMEASURE_FACTOR of the incremental
    cost; from then on the creation no longer counts."""
    n = adaptive.CREATION_REMEASURE_AFTER
    history = [record(FULL, 9.0, trigger=CREATION)]
    history += [record(INCREMENTAL, 7.6, change=100 + k, minute=1 + k) for k in range(n - 1)]
    assert choose(100, history).action == INCREMENTAL          # not yet
    history.append(record(INCREMENTAL, 7.6, change=100, minute=1 + n))
    again = choose(100, history)
    assert again.action == FULL and again.remeasure and "FULL to measure it again" in again.reason
    assert "only at its creation" in again.reason and again.to_dict()["remeasure"] is True
    # measured again, fast: FULL from now on (one recompute outside the creation replaces it)
    fast = [*history, record(FULL, 4.0, minute=2 + n)]
    assert choose(100, fast).action == FULL and not choose(100, fast).remeasure
    # measured again, slow as before: INCREMENTAL, and the next re-measure after REMEASURE_AFTER
    slow = [*history, record(FULL, 9.0, minute=2 + n)]
    assert choose(100, slow).action == INCREMENTAL and not choose(100, slow).remeasure
    later = [*slow, *(record(INCREMENTAL, 7.6, change=100, minute=3 + n + k)
                      for k in range(adaptive.REMEASURE_AFTER - 1))]
    assert choose(100, later).action == INCREMENTAL
    later.append(record(INCREMENTAL, 7.6, change=100, minute=3 + n + adaptive.REMEASURE_AFTER))
    assert choose(100, later).action == FULL and "only at its creation" not in choose(100, later).reason
    # a creation priced at 3.5 times the incremental refresh is measured again too (Q1: 26.5 s
    # created, 7.6 s a refresh), but not one at ten times
    dear = [record(FULL, 26.5, trigger=CREATION)]
    dear += [record(INCREMENTAL, 7.6, change=100, minute=1 + k) for k in range(n)]
    assert choose(100, dear).action == FULL and choose(100, dear).remeasure
    # a DT whose change costs a tenth of its recompute never recomputes to find out
    cheap = [record(FULL, 9.0, trigger=CREATION)]
    cheap += [record(INCREMENTAL, 0.9, change=100, minute=1 + k) for k in range(3 * adaptive.REMEASURE_AFTER)]
    assert all(choose(100, cheap[:k]).action == INCREMENTAL for k in range(1, len(cheap) + 1))


def test_after_ten_incremental_refreshes_in_a_row_a_close_recompute_is_measured_again():
    """A recompute measured outside the creation at 9 s, against incremental refreshes of 7.6 s:
    after REMEASURE_AFTER incremental refreshes in a row, FULL once."""
    n = adaptive.REMEASURE_AFTER
    history = [record(FULL, 30.0, trigger=CREATION), record(FULL, 9.0, minute=1)]
    history += [record(INCREMENTAL, 7.6, change=100 + k, minute=2 + k) for k in range(n - 1)]
    assert choose(100, history).action == INCREMENTAL          # nine: not yet
    history.append(record(INCREMENTAL, 7.6, change=100, minute=2 + n))
    again = choose(100, history)
    assert again.action == FULL and again.remeasure and "after 10 or more" in again.reason
    # the creation's 30 s does not count once a later recompute is measured
    assert again.full_seconds < 10
