"""Joins whose changes meet at a hub (sql/incremental_rewrite/hub.py), hand-written, checked on
DuckDB against a recompute over random change histories (the oracle's machinery, oracle.py).

The fuzzer's generator seldom joins three inputs by equalities, which a hub needs, so these
queries do: over the sources a(k, g, v) and b(k, g, w) (NULLs in the keys, duplicate rows,
inserts, deletes and updates of keys and values), read through self-joins so that two or more
changed FROM items meet at one. Every case must read a hub's kept rows at least once, or the
test would pass without checking it.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter

import pytest

duckdb = pytest.importorskip("duckdb")

from dtcli.sql.incremental_rewrite import DeltaCompiler, hub  # noqa: E402
from tests.fuzz import generator, oracle  # noqa: E402

SEEDS = int(os.environ.get("DT_HUB_SEEDS", "6"))

CASES = {
    # two changes joined to the hub directly
    "star": "SELECT t1.k, t2.w, t3.v FROM a AS t1, b AS t2, a AS t3 WHERE t1.k = t2.k AND t1.g = t3.g",
    # one reached through another (t3 through t2), one directly (t4)
    "chain": "SELECT t1.v, t2.w, t3.v AS v3, t4.w AS w4 FROM a AS t1 JOIN b AS t2 ON t1.k = t2.k "
             "JOIN a AS t3 ON t2.g = t3.g JOIN b AS t4 ON t4.k = t1.v",
    # two equalities between the hub and one change, a filter on each side
    "two_columns": "SELECT t1.k, t1.g, t2.w, t3.w AS w3 FROM a AS t1, b AS t2, b AS t3 WHERE t1.k = t2.k "
                   "AND t1.g = t2.g AND t3.k = t1.v AND t2.w > 0 AND t1.v IS NOT NULL",
    # an aggregate over the join in a derived table, as TPC-H Q9 is written
    "grouped_derived": "SELECT d.g, SUM(d.x) AS s, COUNT(*) AS n FROM (SELECT t1.g AS g, t2.w - t3.v AS x "
                       "FROM a AS t1, b AS t2, a AS t3, b AS t4 WHERE t2.k = t1.k AND t3.k = t1.k "
                       "AND t4.g = t1.g) AS d GROUP BY d.g",
    # a change joined by no equality (t4): its terms read the hub whole
    "unreached": "SELECT t1.k, t2.w, t3.v, t4.w AS w4 FROM a AS t1, b AS t2, a AS t3, b AS t4 "
                 "WHERE t1.k = t2.k AND t1.g = t3.g AND t4.w > t1.v",
    # DISTINCT: keyed by its rows, the affected keys found by terms that read no hub
    "distinct": "SELECT DISTINCT t1.g, t2.w FROM a AS t1, b AS t2, a AS t3 WHERE t1.k = t2.k AND t1.v = t3.v",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_join_reading_its_hubs_kept_rows_matches_its_recompute(name, monkeypatch):
    monkeypatch.setattr(oracle, "HUB_SHARE", 1.0)
    found = []
    real = hub.find

    def spy(*args):
        out = real(*args)
        found.append(out is not None)
        return out
    monkeypatch.setattr(hub, "find", spy)
    con = duckdb.connect()
    for seed in range(SEEDS):
        out = oracle.run_sql(CASES[name], seed, steps=4, con=con)
        assert out.refused is None, f"{name}: refused: {out.refused}"
        assert out.mismatch is None, f"{name}, seed {seed}: {out.mismatch}\n{out.sql}"
    if name != "distinct":
        assert any(found), f"{name}: no block read a hub"


def test_the_hubs_kept_rows_hold_only_the_columns_its_block_reads(monkeypatch):
    """The kept rows are a scan of the hub, often the widest input: Parquet reads only the
    columns asked for, so they name the hub's columns the block reads (t1.v is not among them),
    not `*`, and the result still matches the recompute."""
    monkeypatch.setattr(oracle, "HUB_SHARE", 1.0)
    kept = []
    real = hub.Hub.rows

    def spy(self, *args):
        out = real(self, *args)
        kept.append(out)
        return out
    monkeypatch.setattr(hub.Hub, "rows", spy)
    out = oracle.run_sql(CASES["star"], 0, steps=3, con=duckdb.connect())
    assert out.refused is None and out.mismatch is None, out.mismatch
    assert kept, "no block read a hub"
    for query in kept:
        assert sorted(e.name for e in query.expressions) == ["g", "k"], query.sql()


# Aggregates the engine maintains from their own rows (own_rows.py), which the oracle does not
# run (it recomputes their affected groups): the weighted change of the rows under the GROUP BY,
# `AggregateUpkeep.rows`, is checked against those rows at the new version less the old. Each
# with the rows it aggregates: its keys, then its aggregates' arguments.
GROUPED = {
    # three changed items: the inclusion-exclusion terms over new versions
    "three": ("SELECT t1.g, COUNT(*) AS n, SUM(t2.w) AS s, SUM(t3.v) AS s3 FROM a AS t1, b AS t2, a AS t3 "
              "WHERE t1.k = t2.k AND t1.g = t3.g GROUP BY t1.g",
              "SELECT t1.g, t2.w, t3.v FROM a AS t1, b AS t2, a AS t3 WHERE t1.k = t2.k AND t1.g = t3.g"),
    # four: the delta rule in the hub's order, later changes read as PRIOR rows
    "four": ("SELECT t1.g, COUNT(*) AS n, SUM(t4.w) AS s FROM a AS t1, b AS t2, a AS t3, b AS t4 "
             "WHERE t1.k = t2.k AND t1.g = t3.g AND t2.g = t4.g GROUP BY t1.g",
             "SELECT t1.g, t4.w FROM a AS t1, b AS t2, a AS t3, b AS t4 "
             "WHERE t1.k = t2.k AND t1.g = t3.g AND t2.g = t4.g"),
    "four_chain": ("SELECT t3.g, COUNT(*) AS n, SUM(t1.v) AS s FROM b AS t4, a AS t3, b AS t2, a AS t1 "
                   "WHERE t1.k = t2.k AND t2.g = t3.g AND t3.v = t4.w AND t1.v = t4.k GROUP BY t3.g",
                   "SELECT t3.g, t1.v FROM b AS t4, a AS t3, b AS t2, a AS t1 "
                   "WHERE t1.k = t2.k AND t2.g = t3.g AND t3.v = t4.w AND t1.v = t4.k"),
    # a derived table the block only projects, read as the block's own joins (flatten.py), as
    # TPC-H Q7, Q8 and Q9 are written
    "derived_four": ("SELECT d.g, COUNT(*) AS n, SUM(d.x) AS s FROM (SELECT t1.g AS g, t2.w - t3.v AS x "
                     "FROM a AS t1, b AS t2, a AS t3, b AS t4 WHERE t2.k = t1.k AND t3.k = t1.k "
                     "AND t4.g = t1.g) AS d WHERE d.x > 0 GROUP BY d.g",
                     "SELECT t1.g, t2.w - t3.v FROM a AS t1, b AS t2, a AS t3, b AS t4 WHERE t2.k = t1.k "
                     "AND t3.k = t1.k AND t4.g = t1.g AND t2.w - t3.v > 0"),
    "four_unreached": ("SELECT t1.g, COUNT(*) AS n, SUM(t4.w) AS s FROM a AS t1, b AS t2, a AS t3, b AS t4 "
                       "WHERE t1.k = t2.k AND t1.g = t3.g AND t4.w < t1.v GROUP BY t1.g",
                       "SELECT t1.g, t4.w FROM a AS t1, b AS t2, a AS t3, b AS t4 "
                       "WHERE t1.k = t2.k AND t1.g = t3.g AND t4.w < t1.v"),
}


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_an_aggregates_weighted_change_read_through_a_hub_is_its_rows_new_less_old(name, monkeypatch):
    sql, rows_sql = GROUPED[name]
    monkeypatch.setattr(oracle, "HUB_SHARE", 1.0)
    delta_sql, refused = oracle.judge(sql)
    assert refused is None, refused
    con, hubs = duckdb.connect(), 0
    for seed in range(SEEDS):
        rng = random.Random(seed)
        case = oracle.Case(con, seed, rng, sql)
        data = {n: generator.initial_rows(rng, n) for n in case.inputs}
        for _ in range(3):
            before = {n: list(r) for n, r in data.items()}
            feeds: dict[str, list] = {}
            for _ in range(rng.randint(1, 3)):
                table = rng.choice(case.inputs)
                data[table], feed, _statement = generator.commit(rng, table, data[table])
                feeds.setdefault(table, []).extend(feed)
            bindings = case.bind(before, data, feeds)
            if not bindings.changed:
                continue
            compiler = DeltaCompiler(bindings, case.materialize, keep=case.keep, size=case.size)
            upkeep = compiler.own_rows(delta_sql)
            assert upkeep is not None, f"{name}: not maintained from its own rows"
            got: Counter = Counter()
            for row in case.run(upkeep.rows.sql(dialect="spark")):     # compiled here
                got[row[:-1]] += row[-1]
            hubs += any(h is not None for h in compiler._hubs.values())
            old = {name: views["old"] for name, views in bindings.views.items()}
            old_sql = re.sub(r"\b([ab]) AS", lambda m, old=old: f"{old[m.group(1)]} AS", rows_sql)
            want = oracle.norm(case.run(rows_sql))
            want.subtract(oracle.norm(case.run(old_sql)))
            assert +oracle.norm([(*r, ) for r, n in got.items() for _ in range(max(n, 0))]) == +want, \
                f"{name}, seed {seed}: gained rows differ"
            assert +oracle.norm([r for r, n in got.items() for _ in range(max(-n, 0))]) == -want, \
                f"{name}, seed {seed}: lost rows differ"
    assert hubs, f"{name}: no block read a hub"
