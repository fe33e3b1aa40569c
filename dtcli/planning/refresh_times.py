"""How long a DT's refresh takes to land, measured from its refresh history.

A DT's lag (now minus the data timestamp of its content) peaks just before a refresh commits: at
the time between the two refreshes' snapshots plus the time the second took from its snapshot to
its commit. That second part — planning, the Spark application, waiting for the upstream
refreshes of the pass and for a free thread, the refresh itself — is what the scheduler must
leave room for, so it is measured as a whole: `refresh_end_time - data_timestamp` of each
refresh that did work (NO_DATA refreshes commit nothing and take no time).

Pure functions over history records: unit-testable, no JVM.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from dtcli.model import CREATION, NO_DATA, SUCCEEDED, RefreshRecord
from dtcli.planning.lag import lag_text

SAMPLES = 5     # the newest refreshes per DT the estimate looks at


@dataclass(frozen=True)
class Sample:
    to_commit: float        # seconds from the refresh's snapshot to its commit
    work: float             # seconds of the refresh itself, start to end
    app: str | None = None  # the Spark application that ran it (its query_id's first part)
    creation: bool = False  # the DT's creation: a recompute of everything, often beside all the others


@dataclass(frozen=True)
class Timing:
    """The newest refreshes of one DT that did work, newest first (at most SAMPLES)."""

    samples: tuple[Sample, ...]

    def current(self) -> list[Sample]:
        """The samples that tell how the DT refreshes now. When the newest ones come from one
        long-lived application (`dt run --watch`), only that application's, without its
        oldest: its first pass started the JVM, as did every earlier `dt run` (21 TPC-H DTs at
        SF0.1 on 2 cores, issue 39: a first watch pass of 88 s, later passes 24-45 s). A
        `dt run` from cron starts an application each time: then every sample counts, but the
        creation only while there is nothing else (the 22 TPC-H DTs created side by side at SF1:
        132-152 s each from snapshot to commit, where their first refreshes took a tenth of it)."""
        app = self.samples[0].app
        same = [s for s in self.samples if app and s.app == app]
        if len(same) >= 2:
            return same[:-1]
        later = [s for s in self.samples if not s.creation]
        return later or list(self.samples)

    @property
    def to_commit(self) -> float:
        return estimate([s.to_commit for s in self.current()])

    @property
    def work(self) -> float:
        return estimate([s.work for s in self.current()])


def _ts(value) -> datetime | None:
    if not value:
        return None
    try:
        return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return None


def estimate(samples: Sequence[float]) -> float:
    """A high but robust figure of recent samples (newest first): the second largest of the
    last SAMPLES when there are three or more, else the largest. One slow outlier (the pass that
    started the JVM, a burst of load) is ignored; two in five are taken as how it runs now."""
    ordered = sorted(samples[:SAMPLES], reverse=True)
    return ordered[1] if len(ordered) >= 3 else ordered[0]


def measured(records: Iterable[RefreshRecord],
             earlier: Mapping[str, Timing] | None = None) -> dict[str, Timing]:
    """Per DT, the timing of its newest SUCCEEDED refreshes that did work (`records` newest
    first, as history.read returns them), followed by the `earlier` timings' samples (a
    watcher adds the refreshes of the pass it just ran to what it knew before the pass)."""
    samples: dict[str, list[Sample]] = {}
    for row in records:
        if row.state != SUCCEEDED or row.refresh_action == NO_DATA:
            continue
        stamp, start, end = _ts(row.data_timestamp), _ts(row.refresh_start_time), _ts(row.refresh_end_time)
        if stamp is None or start is None or end is None:
            continue
        seen = samples.setdefault(row.name, [])
        if len(seen) < SAMPLES:
            app = row.query_id.split("/")[0] if row.query_id and "/" in row.query_id else None
            seen.append(Sample(max(0.0, (end - stamp).total_seconds()), max(0.0, (end - start).total_seconds()), app,
                               row.refresh_trigger == CREATION))
    for name, before in (earlier or {}).items():
        samples.setdefault(name, []).extend(before.samples)
    return {name: Timing(tuple(seen[:SAMPLES])) for name, seen in samples.items()}


def to_commit(timings: Mapping[str, Timing], upstream: Mapping[str, Iterable[str]]) -> dict[str, float]:
    """Each measured DT's snapshot-to-commit estimate, and for DTs that read measured DTs at
    least the longest of theirs (a DT commits after the upstream refreshes of its pass; a DT
    not measured yet inherits its upstreams' figure, or has none)."""
    out: dict[str, float] = {}

    def of(name: str, seen: frozenset[str] = frozenset()) -> float | None:
        if name in out:
            return out[name]
        ups = [of(u, seen | {name}) for u in upstream.get(name, ()) if u not in seen]
        figures = [f for f in ups if f is not None]
        own = timings[name].to_commit if name in timings else None
        if own is not None:
            figures.append(own)
        value = max(figures) if figures else None
        if value is not None:
            out[name] = value
        return value

    for name in list(upstream) + [n for n in timings if n not in upstream]:
        of(name)
    return out


@dataclass(frozen=True)
class Reach:
    """How far a DT's lag reaches at its peak, from measured times: the time between two of its
    snapshots plus `to_commit`. Refreshed back to back, its snapshots are at least its own time
    to commit apart (a pass starts when the previous one ended) and at least one `round` apart:
    the work of the DTs of its lag or shorter, spread over the run's threads, which must all be
    refreshed between two of its refreshes once the scheduler cannot keep up (a `--watch` then
    refreshes them in turn in short passes, planning/pass_budget.py)."""

    to_commit: float
    round: float = 0.0
    threads: int = 1

    @property
    def seconds(self) -> float:
        return self.to_commit + max(self.to_commit, self.round)


def reaches(timings: Mapping[str, Timing], upstream: Mapping[str, Iterable[str]],
            lags: Mapping[str, int | None], threads: int) -> dict[str, Reach]:
    """Each measured DT's Reach (see to_commit for its time to commit)."""
    work = {name: timing.work for name, timing in timings.items()}
    out = {}
    for name, seconds in to_commit(timings, upstream).items():
        lag = lags.get(name)
        share = 0.0 if lag is None else sum(w for n, w in work.items()
                                            if lags.get(n) is not None and lags[n] <= lag)
        out[name] = Reach(seconds, share / max(1, threads), threads)
    return out


def cannot_meet(name: str, lag_seconds: int | None, reach: Reach | None) -> str | None:
    """Why `name` cannot keep its lag under target, or None (`reach`: its Reach, see `reaches`)."""
    if lag_seconds is None or reach is None or reach.seconds <= lag_seconds:
        return None
    at_least = lag_text(_minutes_up(reach.seconds))
    if reach.round > reach.to_commit:
        return (f"{name} cannot meet its target lag of {lag_text(int(lag_seconds))}: one round of the "
                f"DTs of its lag or shorter takes {reach.round:.0f} s of work on {reach.threads} threads "
                f"and its refreshes {reach.to_commit:.0f} s from snapshot to commit (measured over their "
                f"recent refreshes), so its lag reaches about {reach.seconds:.0f} s; make the refreshes "
                f"cheaper, or raise target_lag to at least {at_least}")
    return (f"{name} cannot meet its target lag of {lag_text(int(lag_seconds))}: its refreshes take "
            f"{reach.to_commit:.0f} s from snapshot to commit (measured over their recent refreshes), so even "
            f"refreshed back to back its lag reaches about {reach.seconds:.0f} s; make the refresh "
            f"cheaper or raise target_lag to at least {at_least}")


def _minutes_up(seconds: float) -> int:
    return int(-(-seconds // 60) * 60)
