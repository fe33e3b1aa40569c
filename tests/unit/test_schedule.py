"""Aligned refresh periods, ticks and due decisions (no JVM)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dtcli.planning.lag import parse_target_lag, resolve_lags
from dtcli.planning.schedule import (
    EPOCH,
    ManualClock,
    SystemClock,
    current_tick,
    is_due,
    next_due,
    next_tick,
    period_seconds,
)

UTC = timezone.utc
T0 = datetime(2022, 12, 1, tzinfo=UTC)  # a multiple of 96 s (and 48 s) after the Unix epoch


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize("lag, period", [
    (30, 48), (48, 48), (60, 48), (95, 48), (96, 96), (120, 96), (191, 96), (192, 192),
    (600, 384), (3600, 3072), (86400, 49152),
])
def test_period_is_largest_48_times_power_of_two_not_above_lag(lag, period):
    assert period_seconds(lag) == period


@given(st.integers(min_value=48, max_value=10**8))
def test_period_properties(lag):
    p = period_seconds(lag)
    assert p <= lag < 2 * p
    assert p % 48 == 0 and (p // 48) & (p // 48 - 1) == 0  # 48 x a power of two


def test_current_and_next_tick():
    assert current_tick(T0, 96) == T0
    assert current_tick(at(95.999), 96) == T0
    assert current_tick(at(96), 96) == at(96)
    assert next_tick(T0, 96) == at(96)
    assert next_tick(at(95.5), 96) == at(96)
    assert current_tick(T0, 96).tzinfo is not None


def test_ticks_are_counted_from_the_unix_epoch():
    assert current_tick(EPOCH + timedelta(seconds=100), 48) == EPOCH + timedelta(seconds=96)
    assert current_tick(EPOCH - timedelta(seconds=1), 48) == EPOCH - timedelta(seconds=48)


def test_ticks_accept_other_time_zones_and_return_utc():
    cet = timezone(timedelta(hours=1))
    now = datetime(2022, 12, 1, 1, 0, 50, tzinfo=cet)  # 00:00:50 UTC
    tick = current_tick(now, 48)
    assert tick == at(48) and tick.utcoffset() == timedelta(0)


def test_naive_datetimes_are_rejected():
    with pytest.raises(ValueError, match="timezone-aware"):
        current_tick(datetime(2022, 12, 1), 48)
    with pytest.raises(ValueError, match="timezone-aware"):
        is_due(T0, 48, datetime(2022, 12, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        ManualClock(datetime(2022, 12, 1))


@given(st.integers(min_value=-10**11, max_value=10**11), st.integers(0, 6), st.integers(0, 6))
def test_longer_period_ticks_are_ticks_of_shorter_periods(us, k1, k2):
    now = EPOCH + timedelta(microseconds=us)
    short, long_ = 48 * 2 ** min(k1, k2), 48 * 2 ** max(k1, k2)
    tick = current_tick(now, long_)
    assert tick <= now < next_tick(now, long_)
    assert current_tick(tick, short) == tick  # a long tick is also a short tick
    assert current_tick(now, short) >= tick   # so the short schedule never falls behind it


def test_is_due():
    assert is_due(T0, 48, None)
    assert not is_due(at(47), 48, T0)       # refreshed at this tick already
    assert is_due(at(48), 48, T0)           # a new tick has passed
    assert not is_due(at(50), 48, at(49))   # refreshed after the latest tick
    assert is_due(at(96), 48, at(49))


def test_next_due():
    assert next_due(at(10), 48, None) == at(10)
    assert next_due(at(10), 48, T0) == at(48)
    assert next_due(at(10), 48, at(5)) == at(48)
    assert next_due(at(100), 48, T0) == at(100)  # overdue: due now
    for ts in (None, T0, at(5), at(60)):
        for now in (at(0), at(30), at(100)):
            due_at = next_due(now, 48, ts)
            assert is_due(due_at, 48, ts)
            assert due_at == now or not is_due(due_at - timedelta(microseconds=1), 48, ts)


def test_manual_clock():
    clock = ManualClock(T0)
    assert clock.now() == T0
    assert clock.advance(1.5) == at(1.5)
    clock.sleep(10)
    assert clock.now() == at(11.5)
    clock.set(at(100))
    assert clock.now() == at(100)


def test_system_clock_is_utc_aware():
    now = SystemClock().now()
    assert now.utcoffset() == timedelta(0)


def simulate(clock: ManualClock, effective: dict[str, int | None], seconds: int,
             step: float = 1.0) -> dict[str, list[datetime]]:
    """Step the clock, refreshing whatever is due with data as of that moment."""
    stamps: dict[str, datetime | None] = {name: None for name in effective}
    refreshed: dict[str, list[datetime]] = {name: [] for name in effective}
    end = clock.now() + timedelta(seconds=seconds)
    while clock.now() <= end:
        now = clock.now()
        for name in [n for n, lag in effective.items()
                     if lag is not None and is_due(now, period_seconds(lag), stamps[n])]:
            stamps[name] = now
            refreshed[name].append(now)
        clock.advance(step)
    return refreshed


def test_snowflake_example_a_two_minutes_reads_b_one_minute():
    lags = {"a": parse_target_lag("2 minutes"), "b": parse_target_lag("1 minute")}
    effective = resolve_lags(lags, {"a": ["b"]}).effective_seconds
    assert period_seconds(effective["a"]) == 96 and period_seconds(effective["b"]) == 48

    refreshed = simulate(ManualClock(T0), effective, seconds=600)
    assert refreshed["a"] == [at(s) for s in range(0, 601, 96)]
    assert refreshed["b"] == [at(s) for s in range(0, 601, 48)]
    assert set(refreshed["a"]) <= set(refreshed["b"])  # A always refreshes with B
    assert refreshed["b"][:4] == [at(0), at(48), at(96), at(144)]


@given(start=st.integers(min_value=0, max_value=10**6),
       lag_b=st.integers(min_value=60, max_value=900), extra=st.integers(0, 900))
def test_consumer_refreshes_always_coincide_with_upstream(start, lag_b, extra):
    # Whatever the start time and lags (consumer lag >= upstream lag), each time the consumer
    # is due its upstream is due at the same instant.
    effective = {"a": lag_b + extra, "b": lag_b}
    refreshed = simulate(ManualClock(T0 + timedelta(seconds=start)), effective, seconds=1200,
                         step=4)
    assert set(refreshed["a"]) <= set(refreshed["b"])
    assert refreshed["a"] and refreshed["b"]
