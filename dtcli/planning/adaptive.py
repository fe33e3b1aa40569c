"""ADAPTIVE refresh: before each refresh, INCREMENTAL or FULL, whichever is expected cheaper.

The estimate is made without a JVM: the size of the change comes from the inputs' commit metrics
since the DT's frontier (`dtcli.state.change_size`), the size of a recompute from the inputs'
row counts (Delta file statistics). Their cost comes from this DT's own measured refreshes: its
recent INCREMENTAL refreshes give seconds per changed row on top of a fixed cost, its recent
recomputes (FULL, REINITIALIZE, creation) seconds per input row. Until a DT has history, a
changed row is taken to cost as much as ten rows of a recompute (an incremental refresh reads
the change, joins it and applies it in a commit that removes rows), so a change of about a tenth
of the input is where FULL starts to win; measurements replace that guess as they come in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from dtcli.model import CREATION, FULL, INCREMENTAL, REINITIALIZE, SUCCEEDED, RefreshRecord

DEFAULT_FIXED_SECONDS = 2.0          # per refresh: planning the Spark work, one commit
DEFAULT_SECONDS_PER_ROW = 1 / 2_000_000   # a recompute, per input row, on a small cluster
DEFAULT_CHANGE_FACTOR = 10           # a changed row costs this many recomputed rows
SAMPLES = 8                          # recent refreshes of each kind the model learns from


@dataclass(frozen=True)
class Line:
    """Seconds = fixed + per_row × rows."""

    fixed: float
    per_row: float

    def at(self, rows: int) -> float:
        return self.fixed + self.per_row * rows


@dataclass(frozen=True)
class CostModel:
    incremental: Line      # by changed input rows
    full: Line             # by input rows
    basis: str             # where the figures come from, for the reason text


def learn(history: list[RefreshRecord]) -> CostModel:
    """The cost model of one DT from its refresh history (any order)."""
    done = sorted((r for r in history if r.state == SUCCEEDED), key=lambda r: r.refresh_end_time or "",
                  reverse=True)
    incremental = [(r.change_rows, _seconds(r)) for r in done
                   if r.refresh_action == INCREMENTAL and r.change_rows is not None][:SAMPLES]
    recomputes = [(r.input_rows, _seconds(r)) for r in done
                  if (r.refresh_action in (FULL, REINITIALIZE) or r.refresh_trigger == CREATION)
                  and r.input_rows is not None][:SAMPLES]
    default = Line(DEFAULT_FIXED_SECONDS, DEFAULT_SECONDS_PER_ROW)
    full = _fit(recomputes, default) or default
    guess = Line(full.fixed, full.per_row * DEFAULT_CHANGE_FACTOR)
    inc = _fit(incremental, guess) or guess
    basis = (f"measured: {len(incremental)} incremental and {len(recomputes)} full refreshes"
             if incremental or recomputes else "no refresh measured yet: default costs")
    return CostModel(inc, full, basis)


def _seconds(record: RefreshRecord) -> float:
    try:
        start = datetime.fromisoformat(record.refresh_start_time)
        end = datetime.fromisoformat(record.refresh_end_time)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, (end - start).total_seconds())


def _fit(points: list[tuple[int, float]], prior: Line) -> Line | None:
    """A line through measured (rows, seconds): least squares over distinct sizes; refreshes of
    one size only tell the level, so the prior's cost per row is kept and the fixed cost moved."""
    points = [(max(int(n), 0), s) for n, s in points if s > 0]
    if not points:
        return None
    sizes = {n for n, _ in points}
    if len(sizes) >= 2:
        mean_n = sum(n for n, _ in points) / len(points)
        mean_s = sum(s for _, s in points) / len(points)
        var = sum((n - mean_n) ** 2 for n, _ in points)
        slope = max(0.0, sum((n - mean_n) * (s - mean_s) for n, s in points) / var)
        fixed = max(0.0, mean_s - slope * mean_n)
        return Line(fixed, slope)
    n = points[0][0]
    seconds = sorted(s for _, s in points)[len(points) // 2]
    return Line(max(0.0, seconds - prior.per_row * n), prior.per_row)


@dataclass(frozen=True)
class Estimate:
    change_rows: int
    input_rows: int
    incremental_seconds: float
    full_seconds: float
    threshold_rows: int | None     # changed rows from which FULL is expected cheaper
    basis: str

    @property
    def action(self) -> str:
        return INCREMENTAL if self.incremental_seconds <= self.full_seconds else FULL

    @property
    def reason(self) -> str:
        share = f" ({100 * self.change_rows / self.input_rows:.3g}% of {self.input_rows:,} input rows)" \
            if self.input_rows else ""
        limit = f"; FULL is expected cheaper from {self.threshold_rows:,} changed rows" \
            if self.threshold_rows is not None else ""
        return (f"adaptive: {self.change_rows:,} changed input rows{share}; expected INCREMENTAL "
                f"{self.incremental_seconds:.1f} s, FULL {self.full_seconds:.1f} s{limit} ({self.basis})")

    def to_dict(self) -> dict:
        return {"action": self.action, "change_rows": self.change_rows, "input_rows": self.input_rows,
                "expected_incremental_seconds": round(self.incremental_seconds, 3),
                "expected_full_seconds": round(self.full_seconds, 3),
                "threshold_rows": self.threshold_rows, "basis": self.basis, "reason": self.reason}


def estimate(change_rows: int, input_rows: int, model: CostModel) -> Estimate:
    inc, full = model.incremental, model.full
    cost_full = full.at(input_rows)
    threshold = None
    if inc.per_row > 0:
        threshold = max(0, int((cost_full - inc.fixed) / inc.per_row) + 1)
    return Estimate(change_rows, input_rows, inc.at(change_rows), cost_full, threshold, model.basis)
