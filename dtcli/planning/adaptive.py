"""ADAPTIVE refresh: before each refresh, INCREMENTAL or FULL, whichever is expected cheaper.

The estimate is made without a JVM: the size of the change comes from the inputs' commit metrics
since the DT's frontier (`dtcli.state.change_size`), the size of a recompute from the inputs'
row counts (Delta file statistics). Their cost comes from this DT's own measured refreshes: its
recent INCREMENTAL refreshes give seconds per changed row on top of a fixed cost, its recent
recomputes (FULL, REINITIALIZE, creation) seconds per input row. Until a DT has history, a
changed row is taken to cost as much as a hundred rows of a recompute (an incremental refresh
reads the change, joins it and applies it in a commit that removes rows), so a change of about
1 % of the input is where FULL starts to win; measurements replace that guess as they come in.

Small changes measure only the fixed cost: a history of refreshes of 100 and 1,000 changed rows
that took the same time fits a line with no cost per row, and extrapolated flat it would
predict that a change of a million rows is as cheap. So the learned line is trusted up to the
largest change measured; beyond it, each further row costs at least the guess's cost per row.

That guess prices a changed row at a hundred input rows of the DT's measured recompute, its
fixed cost spread over its rows: recomputes that all read the same input size measure only a
level, and the default's cost per row alone (1 / 2,000,000 s) priced a changed row of a
1.5 M-row DT at 0.05 ms where it cost 0.6 ms (TPC-H SF1, `order_rank`, 1 % of the orders).
A small table's recompute is all fixed cost, so that price is capped at the dearest changed row
measured in that sweep: a few changed rows of a 500-row table must not look like seconds.

A DT that ADAPTIVE keeps refreshing FULL never measures its incremental cost again, so after
REMEASURE_AFTER recomputes in a row it refreshes INCREMENTAL once, for a change no larger than
one it has measured: at most one slower refresh in eleven, and a choice that follows the engine
and the data instead of a measurement taken once. The same holds the other way: a DT kept
INCREMENTAL against a recompute measured once (often its creation, beside every other DT of the
project) recomputes once after REMEASURE_AFTER incremental refreshes in a row, but only while
the expected recompute costs at most FULL_REMEASURE_FACTOR times the expected incremental
refresh: a DT whose change is far cheaper to apply never pays for a recompute to find out.

A creation is a poor measure of a recompute: it runs cold (the application's first queries)
beside every other DT's creation. Under `--watch` at TPC-H SF0.1 the creation priced Q1's
recompute at 24.8 s where one in the watch took 6-10 s, and kept it INCREMENTAL at 9-11 s a
refresh. So a DT whose only measured recomputes are its creations measures one again after
CREATION_REMEASURE_AFTER incremental refreshes, while the recompute is expected to cost at
most CREATION_REMEASURE_FACTOR times the incremental refresh, and once it has measured a
recompute outside its creation, its creations no longer count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from dtcli.model import CREATION, FULL, INCREMENTAL, REINITIALIZE, SUCCEEDED, RefreshRecord

DEFAULT_FIXED_SECONDS = 2.0          # per refresh: planning the Spark work, one commit
DEFAULT_SECONDS_PER_ROW = 1 / 2_000_000   # a recompute, per input row, on a small cluster
# a changed row costs this many recomputed rows: measured at TPC-H SF1 (benchmarks/adaptive_sweep.py),
# 85 to 230 for the three DTs once a change reaches 1 % of the orders
DEFAULT_CHANGE_FACTOR = 100
# the most a changed row is guessed to cost (seconds): the dearest measured in that sweep was
# 0.67 ms (order_rank at 1 %, where the change names more keys than the refresh lists)
MAX_GUESS_PER_CHANGED_ROW = 0.001
SAMPLES = 8                          # recent refreshes of each kind the model learns from
# FULL is chosen only when it is expected to save this much: it rewrites every file of the table
# (another copy kept for time travel) and downstream DTs read the whole rewrite from the change
# feed to find what changed, so near a tie applying the change is the better refresh. On small
# tables both estimates are the fixed cost and differ by milliseconds.
MIN_SAVING_SECONDS = 1.0
MIN_SAVING_SHARE = 0.1               # of the FULL estimate
# After this many recomputes in a row since its newest INCREMENTAL refresh, a DT's incremental
# cost is measured again (one INCREMENTAL refresh of a change no larger than one it has measured):
# the measurement behind every FULL since may be stale (a faster engine, a table grown or
# reorganised, a busier machine when it was taken), and a DT refreshed FULL never measures it
# again by itself (the 22 TPC-H DTs under --watch at SF0.1, issue 39: FULL on every pass).
REMEASURE_AFTER = 10
# ... and a recompute is measured again after as many INCREMENTAL refreshes in a row only when
# it is expected to cost at most this many times an incremental refresh (what re-measuring may
# cost, once in eleven refreshes)
FULL_REMEASURE_FACTOR = 2.0
# ... or after this many when the only recomputes measured are creations (see the docstring),
# while the recompute is expected to cost at most this many times an incremental refresh: a
# creation's figure runs high (Q1 at SF0.1 under --watch: 26.5 s created, 6-10 s in the watch)
CREATION_REMEASURE_AFTER = 3
CREATION_REMEASURE_FACTOR = 4.0


@dataclass(frozen=True)
class Line:
    """Seconds = fixed + per_row × rows, up to `known_up_to` rows (None: everywhere); beyond it
    each row costs at least `beyond_per_row`."""

    fixed: float
    per_row: float
    known_up_to: int | None = None
    beyond_per_row: float = 0.0

    def at(self, rows: int) -> float:
        if self.known_up_to is None or rows <= self.known_up_to:
            return self.fixed + self.per_row * rows
        return self.at(self.known_up_to) + self._steep * (rows - self.known_up_to)

    def rows_at(self, seconds: float) -> int | None:
        """The fewest rows that cost more than `seconds` (None: never)."""
        if seconds < self.fixed:
            return 0
        if self.known_up_to is not None and self.at(self.known_up_to) <= seconds:
            return self.known_up_to + int((seconds - self.at(self.known_up_to)) / self._steep) + 1 \
                if self._steep > 0 else None
        return int((seconds - self.fixed) / self.per_row) + 1 if self.per_row > 0 else None

    @property
    def _steep(self) -> float:
        return max(self.per_row, self.beyond_per_row)


@dataclass(frozen=True)
class CostModel:
    incremental: Line      # by changed input rows
    full: Line             # by input rows
    basis: str             # where the figures come from, for the reason text
    # recomputes since the newest INCREMENTAL refresh (None: it never refreshed INCREMENTAL)
    recomputes_since: int | None = None
    # INCREMENTAL refreshes since the newest recompute (None: no recompute measured)
    incrementals_since: int | None = None
    # whether every recompute measured is a creation (cold, beside the other DTs' creations)
    full_from_creation: bool = False


def learn(history: list[RefreshRecord]) -> CostModel:
    """The cost model of one DT from its refresh history (any order)."""
    done = sorted((r for r in history if r.state == SUCCEEDED), key=lambda r: r.refresh_end_time or "",
                  reverse=True)
    incremental = [(r.change_rows, _seconds(r)) for r in done
                   if r.refresh_action == INCREMENTAL and r.change_rows is not None][:SAMPLES]
    measured = [r for r in done if _recompute(r) and r.input_rows is not None]
    # a creation counts only until a recompute outside one is measured (see the docstring)
    later = [r for r in measured if r.refresh_trigger != CREATION]
    recomputes = [(r.input_rows, _seconds(r)) for r in (later or measured)][:SAMPLES]
    default = Line(DEFAULT_FIXED_SECONDS, DEFAULT_SECONDS_PER_ROW)
    full = _fit(recomputes, default) or default
    guess = Line(full.fixed, _changed_row_guess(full, [n for n, _ in recomputes]))
    inc = _fit(incremental, guess) or guess
    if incremental:     # measured up to the largest change; no flatter than the guess beyond it
        inc = Line(inc.fixed, inc.per_row, max(n for n, _ in incremental), guess.per_row)
    basis = (f"measured: {len(incremental)} incremental and {len(recomputes)} full refreshes"
             if incremental or recomputes else "no refresh measured yet: default costs")
    return CostModel(inc, full, basis, _in_a_row(done, _recompute, _incremental),
                     _in_a_row(done, _incremental, _recompute), bool(measured) and not later)


def _recompute(record: RefreshRecord) -> bool:
    return record.refresh_action in (FULL, REINITIALIZE) or record.refresh_trigger == CREATION


def _incremental(record: RefreshRecord) -> bool:
    return record.refresh_action == INCREMENTAL


def _in_a_row(done: list[RefreshRecord], counted, until) -> int | None:
    """The records of `done` (newest first) that are `counted` before the first that is
    `until`; None without one (recomputes since the newest INCREMENTAL, and the other way)."""
    count = 0
    for r in done:
        if until(r):
            return count
        count += counted(r)
    return None


def _changed_row_guess(full: Line, recompute_sizes: list[int]) -> float:
    """Seconds per changed row before the DT has measured changes that large: a hundred input
    rows of its recompute, fixed cost included when a recompute was measured (capped)."""
    per_input_row = full.per_row
    sizes = sorted(n for n in recompute_sizes if n > 0)
    if sizes:
        n = sizes[len(sizes) // 2]
        per_input_row = max(per_input_row, min(full.at(n) / n, MAX_GUESS_PER_CHANGED_ROW / DEFAULT_CHANGE_FACTOR))
    return per_input_row * DEFAULT_CHANGE_FACTOR


def _seconds(record: RefreshRecord) -> float:
    try:
        start = datetime.fromisoformat(record.refresh_start_time)
        end = datetime.fromisoformat(record.refresh_end_time)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, (end - start).total_seconds())


SPREAD = 1.5      # sizes that differ less than this (largest ÷ smallest) are one size to a fit


def _fit(points: list[tuple[int, float]], prior: Line) -> Line | None:
    """A line through measured (rows, seconds): least squares when the sizes differ enough to
    tell a cost per row; otherwise (one size, or recomputes of a table that grew by a few rows)
    they only tell the level, so the prior's cost per row is kept and the fixed cost moved. A
    slope fitted through sizes 20 rows apart would turn a second of noise into a cost per row
    that predicts days."""
    points = [(max(int(n), 0), s) for n, s in points if s > 0]
    if not points:
        return None
    sizes = [n for n, _ in points]
    if max(sizes) >= SPREAD * max(min(sizes), 1):
        mean_n = sum(n for n, _ in points) / len(points)
        mean_s = sum(s for _, s in points) / len(points)
        var = sum((n - mean_n) ** 2 for n, _ in points)
        slope = max(0.0, sum((n - mean_n) * (s - mean_s) for n, s in points) / var)
        fixed = max(0.0, mean_s - slope * mean_n)
        return Line(fixed, slope)
    n = sorted(sizes)[len(sizes) // 2]
    seconds = sorted(s for _, s in points)[len(points) // 2]
    return Line(max(0.0, seconds - prior.per_row * n), prior.per_row)


@dataclass(frozen=True)
class Estimate:
    change_rows: int
    input_rows: int
    incremental_seconds: float
    full_seconds: float
    threshold_rows: int | None     # changed rows from which FULL is chosen
    basis: str
    # the action taken whatever the figures, to measure its cost again (None: the cheaper one)
    remeasure: str | None = None
    full_from_creation: bool = False    # CostModel's: every recompute measured is a creation

    @property
    def full_remeasure_after(self) -> int:
        """Incremental refreshes in a row before a recompute is measured again."""
        return CREATION_REMEASURE_AFTER if self.full_from_creation else REMEASURE_AFTER

    @property
    def full_remeasure_factor(self) -> float:
        """The most times an incremental refresh a recompute measured again may be expected to cost."""
        return CREATION_REMEASURE_FACTOR if self.full_from_creation else FULL_REMEASURE_FACTOR

    @property
    def action(self) -> str:
        return self.remeasure or self.cheaper

    @property
    def cheaper(self) -> str:
        return FULL if self.incremental_seconds > self.full_seconds + saving(self.full_seconds) else INCREMENTAL

    @property
    def reason(self) -> str:
        share = f" ({100 * self.change_rows / self.input_rows:.3g}% of {self.input_rows:,} input rows)" \
            if self.input_rows else ""
        limit = f"; FULL is chosen from {self.threshold_rows:,} changed rows" \
            if self.threshold_rows is not None else ""
        if self.remeasure == INCREMENTAL:
            limit += (f"; INCREMENTAL to measure it again after {REMEASURE_AFTER} or more recomputes "
                      f"since its last incremental refresh")
        elif self.remeasure == FULL:
            limit += (f"; FULL to measure it again after {self.full_remeasure_after} or more incremental "
                      f"refreshes since its last recompute"
                      + (" (measured only at its creation)" if self.full_from_creation else ""))
        return (f"adaptive: {self.change_rows:,} changed input rows{share}; expected INCREMENTAL "
                f"{self.incremental_seconds:.1f} s, FULL {self.full_seconds:.1f} s{limit} ({self.basis})")

    def to_dict(self) -> dict:
        return {"action": self.action, "change_rows": self.change_rows, "input_rows": self.input_rows,
                "expected_incremental_seconds": round(self.incremental_seconds, 3),
                "expected_full_seconds": round(self.full_seconds, 3),
                "threshold_rows": self.threshold_rows, "basis": self.basis, "remeasure": self.remeasure is not None,
                "reason": self.reason}


def saving(full_seconds: float) -> float:
    """How much cheaper FULL must be expected to be to be chosen."""
    return max(MIN_SAVING_SECONDS, MIN_SAVING_SHARE * full_seconds)


def estimate(change_rows: int, input_rows: int, model: CostModel) -> Estimate:
    inc, full = model.incremental, model.full
    cost_full = full.at(input_rows)
    threshold = inc.rows_at(cost_full + saving(cost_full))
    guess = Estimate(change_rows, input_rows, inc.at(change_rows), cost_full, threshold, model.basis,
                     full_from_creation=model.full_from_creation)
    return replace(guess, remeasure=_remeasure(guess, model))


def _remeasure(guess: Estimate, model: CostModel) -> str | None:
    """The action whose cost is measured again now, against the figures (see the module's
    docstring), or None."""
    if guess.cheaper == FULL:
        # only a change of a size already measured: re-measuring must not try a change far larger
        inc = model.incremental
        if (model.recomputes_since or 0) >= REMEASURE_AFTER and inc.known_up_to is not None \
                and guess.change_rows <= inc.known_up_to:
            return INCREMENTAL
    elif (model.incrementals_since or 0) >= guess.full_remeasure_after \
            and guess.full_seconds <= guess.full_remeasure_factor * guess.incremental_seconds:
        return FULL
    return None
