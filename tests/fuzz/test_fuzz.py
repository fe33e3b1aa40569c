"""Random queries and change histories checked against a recompute on DuckDB (issues 27, 38).

`make test` runs DT_FUZZ_CASES (default 300) seeded cases, a minute or less; the long mode is
`DT_FUZZ_CASES=10000 .venv/bin/python -m pytest -p no:xdist -s tests/fuzz`. DT_FUZZ_SEED moves
the seed range (cases are seeds SEED .. SEED+CASES-1), so a failing case is replayed with
`DT_FUZZ_SEED=<seed> DT_FUZZ_CASES=1`. The summary line gives cases run, mismatches, distinct
query shapes (by operator tree), the share of generated DTs dt refuses by class (issue 38 item 7's
constructs, which stay FULL by design; `oracle`, a query DuckDB cannot run; `outside item 7`, a
finding, listed on a line of its own by reason with a seed) and the apply paths taken; the next
line, per construct of issue 38, how many cases using it ran of those drawn.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

duckdb = pytest.importorskip("duckdb")

from tests.fuzz.generator import PENDING, REFUSED_BY_DESIGN  # noqa: E402
from tests.fuzz.oracle import (  # noqa: E402
    FOUND,
    OUTSIDE,
    Outcome,
    refusal_class,
    refused_outside_design,
    refused_share,
    run_case,
    run_sql,
    summary,
)

CASES = int(os.environ.get("DT_FUZZ_CASES", "300"))
SEED = int(os.environ.get("DT_FUZZ_SEED", "0"))
PROGRESS = 1000     # cases between two progress lines of a long run

def unexpected_refusals(outcomes) -> list[str]:
    """Cases refused though they draw no pending construct and are not refused by design."""
    return [f"seed {o.seed} ({o.shape}): {o.refused}\n  {o.sql}" for o in outcomes
            if o.refused and not (o.features & PENDING)
            and refusal_class(o.refused) not in REFUSED_BY_DESIGN.values()]


def test_refusals_are_counted_by_class_and_only_item_7s_are_by_design():
    """The summary's refused share groups reasons into item 7's classes, the oracle's own and
    the rest (a finding), by the analyzer's reason, not by the why after it."""
    nondet = "nondeterministic function rand() cannot be refreshed incrementally — rand() gives a new value"
    assert refusal_class(nondet) == "nondeterministic function"
    assert refusal_class("WITH RECURSIVE r cannot be refreshed incrementally — its depth") == "recursive CTE"
    assert refusal_class("LATERAL subquery cannot be refreshed incrementally") == "LATERAL join"
    assert refusal_class("duckdb: Binder Error: column c0 must appear in the GROUP BY") == "oracle"
    assert refusal_class("IN subquery cannot be refreshed incrementally — unlike a LATERAL subquery") == OUTSIDE
    assert refusal_class("invalid: cannot resolve column x") == OUTSIDE
    outcomes = [Outcome(1, "q", "s", refused=nondet), Outcome(2, "q", "s"),
                Outcome(3, "q", "s", downstream_refused="IN subquery cannot be refreshed incrementally"),
                Outcome(4, "q", "s")]
    assert refused_share(outcomes) == ("refused 2 of 4 (50.0 %): nondeterministic function 1 (25.0 %), "
                                       f"{OUTSIDE} 1 (25.0 %)")
    assert refused_outside_design(outcomes) == ["1 IN subquery cannot be refreshed incrementally (seed 3)"]
    assert refused_share([Outcome(1, "q", "s")]) == "refused 0 of 1 (0.0 %)"


def test_random_queries_match_their_recompute():
    start = time.monotonic()
    con = duckdb.connect()
    outcomes = []
    for seed in range(SEED, SEED + CASES):
        outcomes.append(run_case(seed, con=con))
        if len(outcomes) % PROGRESS == 0 and CASES > PROGRESS:     # the long mode: where it is
            bad = [o.seed for o in outcomes if o.mismatch]
            print(f"\n[{len(outcomes)}/{CASES}] {sum(1 for o in outcomes if not o.refused)} run, "
                  f"{len(bad)} mismatches {bad[:20]}, {refused_share(outcomes)}, {time.monotonic() - start:.0f} s",
                  flush=True)
    line, failures = summary(outcomes, time.monotonic() - start)
    print("\n" + line)
    assert not failures, "\n\n".join(failures)
    # the generator reaches what it is for: every case runs but the pending and by-design ones,
    # of many shapes
    unexpected = unexpected_refusals(outcomes)
    assert not unexpected, f"{len(unexpected)} refused:\n" + "\n".join(unexpected[:20])
    assert all(o.refused for o in outcomes if o.shape == "refused"), "a construct refused by design ran"
    assert len({o.shape for o in outcomes}) >= min(CASES // 3, 200)
    assert Counter(p for o in outcomes for p in o.paths)["keys_recomputed"] > 0 or CASES < 50


@pytest.mark.parametrize("seed", sorted(FOUND))
def test_cases_found_by_the_long_mode_stay_fixed(seed):
    sql, what = FOUND[seed]
    case = run_sql(sql, seed, con=duckdb.connect())
    assert not case.refused, case.refused
    assert case.mismatch is None, f"seed {seed} ({what}): {case.mismatch}\n{sql}"
    if what == "double key":       # a DOUBLE key set is joined, never replaced by literals
        assert "keys_recomputed" not in case.paths, case.paths


# subqueries in a block with a LATERAL VIEW: its FROM clause is wrapped in a derived table first
# (sql/rules/_laterals.py), then they become joins; over the fuzzer's `c` (an array per row)
LATERAL_CASES = {
    "exists": "SELECT t1.k, e.x FROM c AS t1 LATERAL VIEW explode(t1.arr) e AS x WHERE EXISTS "
              "(SELECT 1 FROM b AS t2 WHERE t2.k = t1.k AND t2.w <> e.x)",
    "not_in_grouped": "SELECT t1.k, COUNT(*) AS n FROM c AS t1 LATERAL VIEW explode(t1.arr) e AS x "
                      "WHERE e.x NOT IN (SELECT t2.w FROM b AS t2 WHERE t2.w IS NOT NULL) GROUP BY t1.k",
    "scalar": "SELECT t1.k, e.x, (SELECT MAX(t2.w) FROM b AS t2 WHERE t2.k = t1.k) AS m "
              "FROM c AS t1 LATERAL VIEW explode(t1.arr) e AS x",
}


@pytest.mark.parametrize("name", sorted(LATERAL_CASES))
def test_subqueries_beside_a_lateral_view_match_their_recompute(name):
    con = duckdb.connect()
    for seed in range(5):
        case = run_sql(LATERAL_CASES[name], seed, con=con)
        assert not case.refused, case.refused
        assert case.mismatch is None, f"seed {seed}: {case.mismatch}"
