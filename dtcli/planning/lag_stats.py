"""Each DT's lag as its readers live it: now, at its peak over the last hour, and against target.

A DT's lag is now minus the data timestamp of its current content. It grows by a second a
second and drops at each refresh, so over a window it peaks either now or just before one of the
refreshes that ended in the window; just before a refresh the content was the previous refresh's,
whose data timestamp the refresh's history row keeps (`completion_target` minus
`target_lag_sec`, Snowflake's columns). NO_DATA refreshes count: they advance the data timestamp
without a commit, as in Snowflake. Pure functions over history rows: no JVM.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from dtcli.model import SUCCEEDED, RefreshRecord

WINDOW_SECONDS = 3600


@dataclass(frozen=True)
class Lag:
    now: float | None            # seconds; None: never refreshed
    peak: float | None           # the highest lag over the window, now included
    peak_at: str | None          # when it peaked (ISO; the end of the refresh that ended it, or now)
    target: int | None           # the effective target lag in seconds (None: not scheduled)
    refreshes: int               # successful refreshes (NO_DATA too) that ended in the window

    @property
    def met(self) -> bool | None:
        """Whether the lag stayed within its target over the window (None: no target, or no lag yet)."""
        if self.target is None or self.peak is None:
            return None
        return self.peak <= self.target

    def to_dict(self) -> dict:
        return {"lag_seconds": _round(self.now), "peak_lag_seconds": _round(self.peak),
                "peak_lag_at": self.peak_at, "target_lag_met": self.met,
                "refreshes_last_hour": self.refreshes}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _ts(value) -> datetime | None:
    if not value:
        return None
    try:
        return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return None


def previous_stamp(record: RefreshRecord) -> datetime | None:
    """The data timestamp of the content this refresh replaced (None: a creation, or a row
    written before dt recorded completion targets)."""
    target = _ts(record.completion_target)
    if target is None or record.target_lag_sec is None:
        return None
    return target - timedelta(seconds=int(record.target_lag_sec))


def lags(records: Iterable[RefreshRecord], stamps: Mapping[str, datetime | None],
         targets: Mapping[str, int | None], now: datetime,
         window: int = WINDOW_SECONDS) -> dict[str, Lag]:
    """Per DT of `stamps` (its current data timestamp), its lag now and its peak over the
    `window` seconds before `now`, from the history rows that ended in that window (older
    rows are ignored, so a caller reads only the window)."""
    start = now - timedelta(seconds=window)
    peaks: dict[str, tuple[float, str]] = {}
    counts: dict[str, int] = {}
    for row in records:
        end = _ts(row.refresh_end_time)
        if row.state != SUCCEEDED or end is None or not start <= end <= now:
            continue
        counts[row.name] = counts.get(row.name, 0) + 1
        before = previous_stamp(row)
        if before is None:
            continue
        lag = (end - before).total_seconds()
        if row.name not in peaks or lag > peaks[row.name][0]:
            peaks[row.name] = (lag, row.refresh_end_time)
    out: dict[str, Lag] = {}
    for name, stamp in stamps.items():
        current = (now - stamp).total_seconds() if stamp else None
        peak, at = peaks.get(name, (None, None))
        if current is not None and (peak is None or current >= peak):
            peak, at = current, now.isoformat()
        out[name] = Lag(current, peak, at, targets.get(name), counts.get(name, 0))
    return out
