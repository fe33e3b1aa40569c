"""Set operations, grouping sets, unselected GROUP BY keys and outer-join forms, hand-written,
checked on DuckDB against a recompute over random change histories (the oracle's machinery).

Each query runs over the fuzzer's sources a(k, g, v) and b(k, g, w) (skewed keys with NULLs,
duplicate rows, inserts, deletes, updates of keys and values, overwrites) for SEEDS histories of
STEPS refreshes; after every refresh the DT must equal the query recomputed at the new versions.
Every query must be accepted for INCREMENTAL: these are constructs dt rewrites (sql/rules/
set_operations.py, grouping_sets.py) or keys, not ones it may refuse.
"""

from __future__ import annotations

import os
import random

import pytest

duckdb = pytest.importorskip("duckdb")

from tests.fuzz import generator  # noqa: E402
from tests.fuzz.oracle import Case, Mismatch, Outcome, _check, judge, norm  # noqa: E402

SEEDS = int(os.environ.get("DT_SETOP_SEEDS", "3"))
STEPS = 4

CASES = {
    # set operations: NULLs compare equal, duplicates on each side, both sides changing
    "union": "SELECT t1.k, t1.g FROM a AS t1 UNION SELECT t2.k, t2.g FROM b AS t2",
    "union_chain": "SELECT t1.k FROM a AS t1 UNION ALL SELECT t2.k FROM b AS t2 "
                   "UNION SELECT t3.v FROM a AS t3 WHERE t3.g = 'x'",
    "union_self": "SELECT t1.g FROM a AS t1 WHERE t1.v > 1 UNION SELECT t2.g FROM a AS t2",
    "intersect": "SELECT t1.k, t1.g FROM a AS t1 INTERSECT SELECT t2.k, t2.g FROM b AS t2",
    "except": "SELECT t1.k, t1.g FROM a AS t1 EXCEPT SELECT t2.k, t2.g FROM b AS t2",
    "intersect_all": "SELECT t1.k, t1.g FROM a AS t1 INTERSECT ALL SELECT t2.k, t2.g FROM b AS t2",
    "except_all": "SELECT t1.k, t1.g FROM a AS t1 EXCEPT ALL SELECT t2.k, t2.g FROM b AS t2",
    "except_all_self": "SELECT t1.g FROM a AS t1 EXCEPT ALL SELECT t2.g FROM a AS t2 WHERE t2.v > 2",
    "minus_expr": "SELECT t1.k + 1 AS k1, upper(t1.g) AS g FROM a AS t1 "
                  "MINUS SELECT t2.w, t2.g FROM b AS t2",
    # INTERSECT binds tighter than UNION and EXCEPT
    "precedence": "SELECT t1.k FROM a AS t1 UNION SELECT t2.k FROM b AS t2 "
                  "INTERSECT SELECT t3.v FROM a AS t3",
    "nested": "SELECT t1.k, t1.g FROM a AS t1 EXCEPT (SELECT t2.k, t2.g FROM b AS t2 "
              "EXCEPT ALL SELECT t3.k, t3.g FROM a AS t3 WHERE t3.v = 1)",
    "over_aggregate": "SELECT t1.g, COUNT(*) AS n FROM a AS t1 GROUP BY t1.g "
                      "INTERSECT SELECT t2.g, COUNT(*) FROM b AS t2 GROUP BY t2.g",
    "in_from": "SELECT s.k, COUNT(*) AS n FROM (SELECT t1.k, t1.g FROM a AS t1 "
               "EXCEPT ALL SELECT t2.k, t2.g FROM b AS t2) AS s GROUP BY s.k",
    "in_cte": "WITH s AS (SELECT t1.k FROM a AS t1 INTERSECT ALL SELECT t2.k FROM b AS t2) "
              "SELECT x.k FROM s AS x JOIN s AS y ON x.k = y.k",
    # grouping sets: keys with NULLs of their own (told apart by GROUPING()), HAVING, duplicates
    "rollup": "SELECT t1.k, t1.g, COUNT(*) AS n, SUM(t1.v) AS s FROM a AS t1 GROUP BY ROLLUP (t1.k, t1.g)",
    "cube": "SELECT t1.k, t1.g, GROUPING(t1.k) AS gk, GROUPING_ID(t1.k, t1.g) AS gid, MAX(t1.v) AS m "
            "FROM a AS t1 GROUP BY CUBE (t1.k, t1.g)",
    "sets": "SELECT t1.g, t1.k, COUNT(t1.v) AS n FROM a AS t1 WHERE t1.v <> 3 "
            "GROUP BY GROUPING SETS ((t1.g, t1.k), (t1.g), (t1.g), ())",
    "mixed": "SELECT t1.k, t1.g, SUM(t1.v) AS s FROM a AS t1 GROUP BY t1.k, ROLLUP (t1.g)",
    "having": "SELECT t1.g, COUNT(*) AS n FROM a AS t1 GROUP BY ROLLUP (t1.g) "
              "HAVING COUNT(*) > 1 OR GROUPING(t1.g) = 1",
    "keyed_expr": "SELECT t1.k + 1 AS k1, COALESCE(t1.g, 'all') AS g, COUNT(t1.k) AS nk "
                  "FROM a AS t1 GROUP BY ROLLUP (t1.k, t1.g)",
    "joined": "SELECT t1.g, t2.w, COUNT(*) AS n FROM a AS t1 JOIN b AS t2 ON t1.k = t2.k "
              "GROUP BY CUBE (t1.g, t2.w)",
    "with_rollup": "SELECT t1.g, t1.k, SUM(t1.v) AS s FROM a AS t1 GROUP BY t1.g, t1.k WITH ROLLUP",
    "only_total": "SELECT COUNT(*) AS n, SUM(t1.v) AS s FROM a AS t1 WHERE t1.v > 2 GROUP BY GROUPING SETS (())",
    "two_totals": "SELECT COUNT(*) AS n, MIN(t1.g) AS g FROM a AS t1 WHERE t1.v > 2 GROUP BY GROUPING SETS ((), ())",
    # windows over the groups of every set (TPC-DS q36, q70, q86): evaluated over the UNION ALL
    "rollup_rank": "SELECT t1.k, t1.g, SUM(t1.v) AS s, GROUPING(t1.k) + GROUPING(t1.g) AS lvl, "
                   "RANK() OVER (PARTITION BY GROUPING(t1.k) + GROUPING(t1.g), CASE WHEN GROUPING(t1.g) = 0 "
                   "THEN t1.k END ORDER BY SUM(t1.v) DESC) AS r FROM a AS t1 GROUP BY ROLLUP (t1.k, t1.g)",
    "cube_level_share": "SELECT t1.g, t1.k, COUNT(*) AS n, COUNT(*) * 100 / SUM(COUNT(*)) OVER "
                        "(PARTITION BY GROUPING_ID(t1.g, t1.k)) AS pct FROM a AS t1 WHERE t1.v <> 2 "
                        "GROUP BY CUBE (t1.g, t1.k)",
    "sets_global_rank": "SELECT t1.g, MAX(t1.v) AS m, DENSE_RANK() OVER (ORDER BY MAX(t1.v)) + 1 AS dr "
                        "FROM a AS t1 GROUP BY GROUPING SETS ((t1.g), ()) HAVING COUNT(*) > 1",
    # outer joins in the forms users write
    "on_parens": "SELECT t1.k, t1.v, t2.w FROM a AS t1 LEFT JOIN b AS t2 ON (t1.k = t2.k AND t2.w > 1)",
    "on_parens_full": "SELECT t1.k AS k1, t2.k AS k2, t2.w FROM a AS t1 FULL OUTER JOIN b AS t2 "
                      "ON ((t1.k = t2.k) AND (t1.g = t2.g))",
    "on_unqualified": "SELECT v, w FROM a AS t1 RIGHT JOIN b AS t2 ON v = w",
    "null_safe": "SELECT t1.k AS k1, t1.g, t2.w FROM a AS t1 FULL JOIN b AS t2 ON t1.k <=> t2.k",
    "null_safe_left": "SELECT t1.k, t2.w FROM a AS t1 LEFT JOIN b AS t2 ON t1.k <=> t2.k AND t1.g = t2.g",
    "comma_then_left": "SELECT t1.k, t2.w, t3.w AS w3 FROM a AS t1, b AS t2 LEFT JOIN b AS t3 ON t3.k = t2.k "
                       "WHERE t1.g = t2.g",
    "using_chain": "SELECT k, t2.w, t3.w AS w3 FROM a AS t1 JOIN b AS t2 USING (k) LEFT JOIN b AS t3 USING (k)",
    "theta_left": "SELECT t1.k, t1.v, t2.w FROM a AS t1 LEFT JOIN b AS t2 ON t1.v < t2.w",
    "theta_or": "SELECT t1.k, t1.g, t2.w FROM a AS t1 LEFT JOIN b AS t2 ON t1.k = t2.k OR t1.g = t2.g",
    "theta_right": "SELECT t1.v, t2.k, t2.w FROM a AS t1 RIGHT JOIN b AS t2 ON t1.k + t2.w = 3",
    "theta_one_side": "SELECT t1.k, t2.w FROM a AS t1 LEFT JOIN b AS t2 ON t2.w = 1",
    "theta_grouped": "SELECT t1.g, COUNT(t2.w) AS n FROM a AS t1 LEFT JOIN b AS t2 ON t1.v <= t2.w "
                     "GROUP BY t1.g",
    "theta_then_inner": "SELECT t1.k, t2.w, t3.v AS v3 FROM a AS t1 LEFT JOIN b AS t2 ON t1.v > t2.w "
                        "JOIN a AS t3 ON t3.k = t1.k",
    "theta_after_inner": "SELECT t1.k, t3.w FROM a AS t1 JOIN a AS t2 ON t1.k = t2.k "
                         "LEFT JOIN b AS t3 ON t2.v <> t3.w",
}


def spark_semantics(sql: str) -> str:
    """`sql` as DuckDB must run it to give Spark's answer. A grouping-sets aggregate over an
    empty input: Spark yields no row for the empty set when there are other sets (it groups by
    the set's id), DuckDB yields the grand total; `HAVING COUNT(*) > 0` keeps Spark's (every
    other group counts at least one row)."""
    import sqlglot
    from sqlglot import exp

    from dtcli.sql.rules.grouping_sets import expand

    tree = sqlglot.parse_one(sql, read="spark")
    for sel in tree.find_all(exp.Select):
        group = sel.args.get("group")
        if group is None or not any(isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets))
                                    for e in group.expressions) and not group.args.get("rollup") \
                and not group.args.get("cube"):
            continue
        sets = expand(group, sel.expressions)
        for kind, node in (("rollup", exp.Rollup), ("cube", exp.Cube)):    # DuckDB has no WITH ROLLUP
            if group.args.get(kind):
                group.set(kind, None)
                group.set("expressions", [node(expressions=group.expressions)])
        if len(sets) == 1 and not sets[0]:       # GROUPING SETS (()) alone: a scalar aggregate
            continue
        nonempty = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
        having = sel.args.get("having")
        sel.set("having", exp.Having(this=nonempty if having is None else exp.And(
            this=exp.Paren(this=having.this), expression=nonempty)))
    return tree.sql(dialect="spark")


def run_sql(sql: str, seed: int, steps: int = STEPS, con=None) -> Outcome:
    """`sql` over the sources' rows and change history of `seed` (as oracle.run_case does for
    a generated query)."""
    rng = random.Random(seed)
    out = Outcome(seed, sql, "hand-written")
    delta_sql, refused = judge(sql)
    if refused:
        out.refused = refused
        return out
    con = con or duckdb.connect()
    case = Case(con, seed, rng, sql)
    data = {n: generator.initial_rows(rng, n) for n in case.inputs}
    for n in case.inputs:
        case.load(n, data[n], generator.SOURCES[n])
    recompute = spark_semantics(sql)
    table = norm(case.run(recompute))
    for _ in range(steps):
        before = {n: list(r) for n, r in data.items()}
        feeds: dict[str, list] = {}
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(case.inputs)
            data[name], feed, _statement = generator.commit(rng, name, data[name])
            feeds.setdefault(name, []).extend(feed)
        try:
            bindings = case.bind(before, data, feeds)
            table = case.refresh(delta_sql, table, bindings, out)
            _check(table, norm(case.run(recompute)), "")
        except Mismatch as err:
            out.mismatch = str(err)
            return out
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_written_case_matches_its_recompute(name):
    con = duckdb.connect()
    for seed in range(SEEDS):
        out = run_sql(CASES[name], seed, con=con)
        assert out.refused is None, f"{name}: refused: {out.refused}"
        assert out.mismatch is None, f"{name}, seed {seed}: {out.mismatch}\n{out.sql}"
