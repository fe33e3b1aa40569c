"""Aligned refresh periods and "is it due" decisions.

Periods are 48 s x 2^k and ticks are counted from the Unix epoch, so every tick of a longer
period is also a tick of every shorter one: when a slow DT refreshes, the faster DTs it reads
refresh at the same instant and all of them show one consistent snapshot (DESIGN.md section 6).

A DT's lag peaks just before a refresh commits, at its period plus the time that refresh takes
from its snapshot to its commit. So the period is chosen to leave room for the measured time
(`lag_period`): the largest aligned period whose sum with it stays within the target lag (less a
margin of 5 %), down to 6 s (48 s / 8: passes then follow one another). Until a DT has been
measured, its period is the largest 48 s x 2^k not above the lag, as Snowflake's example has it.
All datetimes are timezone-aware; naive ones are rejected rather than guessed at.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Protocol

BASE_PERIOD_SECONDS = 48
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)


# 48 / 2^3: every tick of 48 s is one of these. A period this short is chosen only for a DT whose
# refreshes take nearly its whole lag, which cannot meet it anyway (cannot_meet); shorter would
# only add passes that find no new data (each a check of the project and a history row).
MIN_PERIOD_SECONDS = 6


def period_seconds(effective_lag_seconds: int) -> int:
    """The largest 48 x 2^k (k >= 0) not above the lag; 48 for anything shorter."""
    period = BASE_PERIOD_SECONDS
    while period * 2 <= effective_lag_seconds:
        period *= 2
    return period


# A `--watch` pass takes on due work of this share of the shortest target lag among its DTs (10 s
# for one minute; planning/pass_budget.py), so a DT that falls due while a pass runs waits up to
# about this long before its own pass takes its snapshot: its period leaves room for that too.
PASS_SHARE = 1 / 6

# The share of the lag kept free beyond the measured refresh time: refresh times move from pass
# to pass (load, the size of the change), and a pass starts a moment after its tick.
LAG_MARGIN = 0.05


def lag_period(effective_lag_seconds: int, to_commit: float | None = None) -> int:
    """The period that keeps the lag under target for a DT whose refreshes take `to_commit`
    seconds from snapshot to commit: the largest 48 x 2^k (k may be negative, down to
    MIN_PERIOD_SECONDS) with period + to_commit within the lag less LAG_MARGIN of it, and never
    longer than `period_seconds` (the period of a DT not measured yet, `to_commit` None)."""
    period = period_seconds(effective_lag_seconds)
    if to_commit is None:
        return period
    budget = effective_lag_seconds * (1 - LAG_MARGIN)
    while period > MIN_PERIOD_SECONDS and period + to_commit > budget:
        period //= 2
    return period


def _aware(dt: datetime, what: str) -> datetime:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware, got naive {dt.isoformat()}")
    return dt


def current_tick(now: datetime, period: int) -> datetime:
    """The latest tick <= now (UTC)."""
    # Integer microseconds, not float seconds, so a `now` exactly on a tick stays on it.
    elapsed_us = (_aware(now, "now") - EPOCH) // _US
    period_us = period * 1_000_000
    return EPOCH + (elapsed_us // period_us) * period_us * _US


def next_tick(now: datetime, period: int) -> datetime:
    """The first tick > now (UTC)."""
    return current_tick(now, period) + timedelta(seconds=period)


def is_due(now: datetime, period: int, data_timestamp: datetime | None) -> bool:
    """Due when never refreshed, or when a tick has passed since the data's timestamp."""
    if data_timestamp is None:
        return True
    return current_tick(now, period) > _aware(data_timestamp, "data_timestamp")


def next_due(now: datetime, period: int, data_timestamp: datetime | None) -> datetime:
    """When the DT will next be due: `now` if it already is, else the first tick after its data."""
    if data_timestamp is None:
        return _aware(now, "now")
    # is_due(t) holds exactly when t >= next_tick(data_timestamp).
    return max(_aware(now, "now"), next_tick(_aware(data_timestamp, "data_timestamp"), period))


class Clock(Protocol):
    def now(self) -> datetime: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time in UTC."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that only moves when told to: for tests and accelerated watch mode."""

    def __init__(self, start: datetime):
        self._now = _aware(start, "start").astimezone(timezone.utc)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=seconds)
        return self._now

    def set(self, dt: datetime) -> None:
        self._now = _aware(dt, "dt").astimezone(timezone.utc)

    def sleep(self, seconds: float) -> None:
        # Sleeping on a manual clock just moves it on, so a watch loop runs at full speed.
        self.advance(max(0.0, seconds))
