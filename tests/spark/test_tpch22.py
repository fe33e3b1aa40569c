"""Issue 38's acceptance, in the suite: the 22 TPC-H queries as published, each a DT
(`tables/qNN.sql`, the specification's text unchanged), over tiny TPC-H data in Delta
(tests/tpch.py: every query returns rows), created and then refreshed after two change batches
on lineitem, orders, customer, part, partsupp and supplier (inserts, deletes, updates of the
columns the queries filter and join on).

`dt validate` accepts every query but those tests/tpch.py lists as not valid yet; each query dt
is expected to refresh incrementally has `refresh_mode: incremental` and every one of its
refreshes after a batch must be INCREMENTAL; the others (tests/tpch.py NOT_INCREMENTAL_YET,
`refresh_mode: full`) refresh FULL. After each refresh every DT equals its query recomputed at
the versions its frontier records (the top-N queries Q2, Q3, Q10, Q18, Q21: one of the answers
their ties allow). When every rule of issue 38 has landed, both lists are empty and this is the
acceptance as the issue states it.

One project of 22 DTs, one creation run and one refresh per batch on the shared in-process
session, opt-in: DT_TPCH_BATCHES=1 runs one batch (the run costs minutes: 25 at load 22 with two batches, of
which each refresh and its check about 10), DT_TPCH_BATCHES=2 both.
"""

from __future__ import annotations

import os
import time

import pytest

from dtcli.model import FULL, INCREMENTAL, SUCCEEDED
from tests import tpch
from tests.spark.harness import Env

pytestmark = [pytest.mark.spark, pytest.mark.skipif(
    not os.environ.get("DT_TPCH_BATCHES"),
    reason="the 22 TPC-H DTs cost 13-25 min at load 20: `make acceptance` runs them "
           "(DT_TPCH_BATCHES=1, or 2)")]
BATCHES = int(os.environ.get("DT_TPCH_BATCHES", "1"))


def _check_all(env: Env, names: list[str]) -> list[str]:
    """What differs between each DT and its recompute (one project load for all of them)."""
    from tests.helpers import frontier_mismatch

    project = env.project(names[0])
    problems = []
    for name in names:
        wrong = frontier_mismatch(env.spark, project, name)
        if wrong:
            problems.append(f"{name}: {wrong[:600]}")
    return problems


def test_the_22_tpch_queries_refresh_incrementally_and_equal_their_recompute(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.sources.update(tpch.write_tables(tmp_path / "src", tpch.generate()))
    queries = {n: sql for n, sql in tpch.queries().items() if n not in tpch.NOT_VALID_YET}
    full = {n for n in queries if n in tpch.NOT_INCREMENTAL_YET}
    env.write(queries, table_yml={n: "refresh_mode: full\n" for n in full})
    names = sorted(queries)

    clock = time.monotonic()
    created = env.refresh()
    print(f"\ncreation {time.monotonic() - clock:.0f} s")
    assert {n: r.state for n, r in created.items() if r.state != SUCCEEDED} == {}
    # (no check of the creation, a FULL refresh: the data makes every query return rows,
    # tests/unit/test_tpch_data.py)

    for k in range(1, BATCHES + 1):
        clock = time.monotonic()
        changed = tpch.apply_batch({t: env.sources[t] for t in tpch.CHANGED}, k)
        print(f"batch {time.monotonic() - clock:.0f} s")
        clock = time.monotonic()
        assert all(changed.values()), changed          # every changed table got a commit
        records = env.refresh()
        print(f"refresh {time.monotonic() - clock:.0f} s")
        clock = time.monotonic()
        failed = {n: r.state_message for n, r in records.items() if r.state != SUCCEEDED}
        assert failed == {}, f"batch {k}"
        actions = {n: records[n].refresh_action for n in names}
        expected = {n: FULL if n in full else INCREMENTAL for n in names}
        assert actions == expected, f"batch {k}: " + ", ".join(
            f"{n} {actions[n]} ({records[n].refresh_action_reason})" for n in names if actions[n] != expected[n])
        assert _check_all(env, names) == [], f"batch {k}"
        print(f"check {time.monotonic() - clock:.0f} s")
