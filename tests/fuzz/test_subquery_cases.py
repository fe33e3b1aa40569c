"""Subqueries, semi / anti joins and several keyed joins per SELECT, hand-written, checked on
DuckDB against a recompute over random change histories (the oracle's machinery, oracle.py).

Each query runs over the fuzzer's sources a(k, g, v) and b(k, g, w) (skewed keys with NULLs,
duplicate rows, inserts, deletes, updates of keys and values, overwrites) for SEEDS histories of
STEPS refreshes; after every refresh the DT must equal the query recomputed at the new versions.
Every query must be accepted for INCREMENTAL: these are the constructs dt rewrites (sql/rules)
or keys (incremental_rewrite/shapes.py), not ones it may refuse.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb")

from tests.fuzz import generator  # noqa: E402
from tests.fuzz.oracle import Case, Mismatch, Outcome, _check, judge, norm  # noqa: E402

SEEDS = int(os.environ.get("DT_SUBQUERY_SEEDS", "3"))
STEPS = 4

CASES = {
    # user-written semi / anti joins (DuckDB spells them SEMI / ANTI JOIN)
    "semi": "SELECT t1.k, t1.g, t1.v FROM a AS t1 LEFT SEMI JOIN b AS t2 ON t1.k = t2.k",
    "anti": "SELECT t1.k, t1.g, t1.v FROM a AS t1 LEFT ANTI JOIN b AS t2 ON t1.k = t2.k",
    "semi_residual": "SELECT t1.k, t1.v FROM a AS t1 LEFT SEMI JOIN b AS t2 "
                     "ON t1.k = t2.k AND t2.w <> t1.v",
    "anti_residual": "SELECT t1.k, t1.v FROM a AS t1 LEFT ANTI JOIN b AS t2 "
                     "ON t1.k = t2.k AND t2.g = t1.g AND t2.w > 1",
    "semi_null_safe": "SELECT t1.k, t1.g FROM a AS t1 LEFT SEMI JOIN b AS t2 ON t1.k <=> t2.k",
    "anti_grouped": "SELECT t1.g, COUNT(*) AS n, SUM(t1.v) AS s FROM a AS t1 "
                    "LEFT ANTI JOIN b AS t2 ON t1.k = t2.k GROUP BY t1.g",
    "semi_after_inner": "SELECT t1.k, t3.w FROM a AS t1 JOIN b AS t3 ON t1.g = t3.g "
                        "LEFT SEMI JOIN b AS t2 ON t1.k = t2.k",
    "semi_then_inner": "SELECT t1.k, t3.w FROM a AS t1 LEFT SEMI JOIN b AS t2 ON t1.k = t2.k "
                       "JOIN b AS t3 ON t1.g = t3.g",
    "anti_self": "SELECT t1.k, t1.v FROM a AS t1 LEFT ANTI JOIN a AS t2 "
                 "ON t1.k = t2.k AND t2.v > t1.v",
    "semi_over_derived": "SELECT t1.k, t1.g FROM a AS t1 LEFT SEMI JOIN "
                         "(SELECT t2.k AS k, COUNT(*) AS n FROM b AS t2 GROUP BY t2.k) AS t3 "
                         "ON t1.k = t3.k AND t3.n > 1",
    # without an equality between the sides: keyed by the left side's columns
    "semi_theta_grouped": "SELECT t1.g, COUNT(*) AS n FROM a AS t1 LEFT SEMI JOIN b AS t2 "
                          "ON t2.w <= t1.v GROUP BY t1.g",
    "anti_theta_star": "SELECT * FROM a AS t1 LEFT ANTI JOIN b AS t2 ON t2.w = t1.v + 1 OR t2.k < t1.k",
    # EXISTS / NOT EXISTS (sql/rules/subqueries.py)
    "exists_theta": "SELECT t1.k, t1.v FROM a AS t1 WHERE EXISTS "
                    "(SELECT 1 FROM b AS t2 WHERE t2.w < t1.v AND t2.g = 'x')",
    "not_exists_theta": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.v > 0 AND NOT EXISTS "
                        "(SELECT 1 FROM b AS t2 WHERE t2.w > t1.v OR t2.g = t1.g)",
    "exists": "SELECT t1.k, t1.v FROM a AS t1 WHERE EXISTS "
              "(SELECT 1 FROM b AS t2 WHERE t2.k = t1.k AND t2.w > 1)",
    "not_exists_residual": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v IS NOT NULL AND NOT EXISTS "
                           "(SELECT 1 FROM b AS t2 WHERE t2.k = t1.k AND t2.w <> t1.v)",
    "exists_outer_only_conjunct": "SELECT t1.k, t1.v FROM a AS t1 WHERE EXISTS "
                                  "(SELECT 1 FROM b AS t2 WHERE t2.g = t1.g AND t1.v > 1)",
    "exists_limit": "SELECT t1.k, t1.v FROM a AS t1 WHERE EXISTS "
                    "(SELECT t2.w FROM b AS t2 WHERE t2.k = t1.k ORDER BY t2.w LIMIT 1)",
    "exists_uncorrelated": "SELECT t1.k, t1.v FROM a AS t1 WHERE EXISTS "
                           "(SELECT 1 FROM b AS t2 WHERE t2.w > 2)",
    "not_exists_uncorrelated_or": "SELECT t1.k FROM a AS t1 WHERE t1.v > 3 OR NOT EXISTS "
                                  "(SELECT 1 FROM b AS t2 WHERE t2.w = 5)",
    "exists_correlated_or": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.v > 3 OR EXISTS "
                            "(SELECT 1 FROM b AS t2 WHERE t2.k = t1.k AND t2.w > 0) OR NOT EXISTS "
                            "(SELECT 1 FROM b AS t3 WHERE t3.g = t1.g)",
    # correlated by more than equalities, under OR or in SELECT: a lookup of the outer values
    "exists_residual_under_or": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.v > 3 OR EXISTS "
                                "(SELECT 1 FROM b AS t2 WHERE t2.k = t1.k AND t2.g <> t1.g)",
    "not_exists_theta_select": "SELECT t1.k, NOT EXISTS (SELECT 1 FROM b AS t2 WHERE t2.w < t1.v) "
                               "AS e FROM a AS t1",
    "exists_residual_join_or": "SELECT t1.k, t3.w FROM a AS t1 JOIN b AS t3 ON t1.k = t3.k WHERE "
                               "t3.w > 2 OR NOT EXISTS (SELECT 1 FROM b AS t2 WHERE t2.k = t1.k "
                               "AND t2.w <> t1.v)",
    # ... reading columns of two FROM items, or in a block with an outer join: the lookup is over
    # the block's FROM clause, padded rows included (a COALESCE makes their NULLs match)
    "exists_residual_two_items_or": "SELECT t1.k, t3.w FROM a AS t1, b AS t3 WHERE t1.g = t3.g AND "
                                    "(t3.w > 2 OR EXISTS (SELECT 1 FROM b AS t2 WHERE t2.k = t1.k "
                                    "AND t2.w <> t3.w))",
    "exists_residual_outer_or": "SELECT t1.k AS k1, t3.w FROM a AS t1 FULL JOIN b AS t3 ON t1.k = t3.k "
                                "WHERE t1.v > 3 OR NOT EXISTS (SELECT 1 FROM b AS t2 WHERE "
                                "t2.g = COALESCE(t1.g, 'x') AND t2.w <> COALESCE(t3.w, 0))",
    "exists_in_select": "SELECT t1.k, EXISTS (SELECT 1 FROM b AS t2 WHERE t2.k = t1.k) AS e FROM a AS t1",
    "exists_and_not_exists_grouped": "SELECT t1.g, COUNT(*) AS n FROM a AS t1 WHERE EXISTS "
                                     "(SELECT 1 FROM b AS t2 WHERE t2.k = t1.k AND t2.g <> t1.g) "
                                     "AND NOT EXISTS (SELECT 1 FROM b AS t3 WHERE t3.k = t1.k "
                                     "AND t3.g <> t1.g AND t3.w > 2) GROUP BY t1.g",
    # IN / NOT IN
    "in": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.k IN (SELECT t2.k FROM b AS t2 WHERE t2.w > 0)",
    "in_correlated": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.v IN "
                     "(SELECT t2.w FROM b AS t2 WHERE t2.g = t1.g)",
    "in_tuple": "SELECT t1.k, t1.v FROM a AS t1 WHERE (t1.k, t1.g) IN (SELECT t2.k, t2.g FROM b AS t2)",
    "in_grouped": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.k IN "
                  "(SELECT t2.k FROM b AS t2 GROUP BY t2.k HAVING COUNT(*) > 1)",
    "not_in": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.k NOT IN (SELECT t2.k FROM b AS t2 WHERE t2.w > 1)",
    "not_in_nullable_set": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v NOT IN (SELECT t2.w FROM b AS t2)",
    "not_in_correlated": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v NOT IN "
                         "(SELECT t2.w FROM b AS t2 WHERE t2.k = t1.k)",
    "not_in_grouped": "SELECT t1.g, COUNT(*) AS n FROM a AS t1 WHERE t1.v NOT IN "
                      "(SELECT t2.w FROM b AS t2 WHERE t2.g = 'x') GROUP BY t1.g",
    # IN / NOT IN under OR or in the SELECT list: a LEFT JOIN of the set's distinct values (and,
    # for NOT IN, its emptiness and NULL flags). Spark answers them TRUE or FALSE, never NULL
    # (DuckDB answers SQL's NULL): in the SELECT list they are compared through COALESCE(.., FALSE),
    # the same in both; tests/spark/test_subqueries.py checks them bare
    "in_under_or": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.v > 3 OR t1.k IN "
                   "(SELECT t2.k FROM b AS t2 WHERE t2.w > 0)",
    "in_correlated_under_or": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.v IS NULL OR t1.v IN "
                              "(SELECT t2.w FROM b AS t2 WHERE t2.g = t1.g)",
    "not_in_under_or": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.g = 'x' OR t1.v NOT IN "
                       "(SELECT t2.w FROM b AS t2)",
    "in_select_nullable": "SELECT t1.k, COALESCE(t1.v IN (SELECT t2.w FROM b AS t2), FALSE) AS f "
                          "FROM a AS t1",
    "not_in_select_correlated": "SELECT t1.k, COALESCE(t1.v NOT IN (SELECT t2.w FROM b AS t2 "
                                "WHERE t2.k = t1.k), FALSE) AS f FROM a AS t1",
    "in_under_or_grouped": "SELECT t1.g, COUNT(*) AS n FROM a AS t1 WHERE t1.v > 2 OR t1.k IN "
                           "(SELECT t2.k FROM b AS t2) GROUP BY t1.g",
    # a correlated subquery with GROUP BY: its groups per correlated key (_correlation.ungrouped)
    "in_correlated_grouped": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.k IN (SELECT t2.k FROM b AS t2 "
                             "WHERE t2.g = t1.g GROUP BY t2.k HAVING COUNT(*) > 1)",
    "not_in_correlated_grouped": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.k NOT IN (SELECT t2.k FROM "
                                 "b AS t2 WHERE t2.g = t1.g GROUP BY t2.k HAVING COUNT(*) > 1)",
    "exists_grouped": "SELECT t1.k FROM a AS t1 WHERE EXISTS (SELECT t2.k FROM b AS t2 WHERE "
                      "t2.k = t1.k GROUP BY t2.k, t2.g HAVING SUM(t2.w) > 3)",
    "in_select_correlated_grouped": "SELECT t1.k, COALESCE(t1.v IN (SELECT MAX(t2.w) FROM b AS t2 "
                                    "WHERE t2.k = t1.k GROUP BY t2.g), FALSE) AS f FROM a AS t1",
    "scalar_correlated_grouped": "SELECT t1.k, (SELECT SUM(t2.w) FROM b AS t2 WHERE t2.k = t1.k "
                                 "GROUP BY t2.k) AS s FROM a AS t1",
    # a correlation written in every branch of an OR (TPC-DS q41)
    "scalar_or_factored": "SELECT t1.k, t1.v FROM a AS t1 WHERE (SELECT COUNT(*) FROM b AS t2 "
                          "WHERE (t2.k = t1.k AND t2.w > 1) OR (t2.k = t1.k AND t2.g = 'x')) > 0",
    "exists_or_factored": "SELECT t1.k FROM a AS t1 WHERE EXISTS (SELECT 1 FROM b AS t2 WHERE "
                          "(t2.k = t1.k AND t2.w > 1) OR (t2.g = 'y' AND t2.k = t1.k))",
    # scalar subqueries
    "scalar_where": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v > (SELECT AVG(t2.w) FROM b AS t2)",
    "scalar_select": "SELECT t1.k, (SELECT MAX(t2.w) FROM b AS t2 WHERE t2.g = 'x') AS m FROM a AS t1",
    "scalar_correlated_where": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v < "
                               "(SELECT MAX(t2.w) FROM b AS t2 WHERE t2.k = t1.k)",
    "scalar_correlated_two_keys": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v >= "
                                  "(SELECT 0.5 * SUM(t2.w) FROM b AS t2 WHERE t2.k = t1.k AND t2.g = t1.g)",
    "scalar_count_select": "SELECT t1.k, (SELECT COUNT(*) FROM b AS t2 WHERE t2.k = t1.k) AS n FROM a AS t1",
    "scalar_count_bug": "SELECT t1.k, t1.v FROM a AS t1 WHERE "
                        "(SELECT COUNT(t2.w) FROM b AS t2 WHERE t2.k = t1.k) = 0",
    "scalar_coalesce": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v > "
                       "(SELECT COALESCE(SUM(t2.w), 0) FROM b AS t2 WHERE t2.k = t1.k)",
    "scalar_having": "SELECT t1.g, SUM(t1.v) AS s FROM a AS t1 GROUP BY t1.g "
                     "HAVING SUM(t1.v) > (SELECT AVG(t2.w) FROM b AS t2) ORDER BY s DESC",
    "scalar_grouped_select": "SELECT t1.g, COUNT(*) + (SELECT MAX(t2.w) FROM b AS t2) AS x "
                             "FROM a AS t1 GROUP BY t1.g",
    "scalar_in_aggregate": "SELECT t1.g, SUM(t1.v * (SELECT MIN(t2.w) FROM b AS t2)) AS x "
                           "FROM a AS t1 GROUP BY t1.g",
    "scalar_correlated_in_aggregate": "SELECT t1.g, SUM((SELECT COUNT(*) FROM b AS t2 WHERE t2.k = t1.k)) AS x "
                                      "FROM a AS t1 GROUP BY t1.g",
    "scalar_not_aggregate": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.g = "
                            "(SELECT DISTINCT t2.g FROM b AS t2 WHERE t2.g = 'x')",
    "scalar_not_aggregate_select": "SELECT t1.k, (SELECT t2.g FROM b AS t2 GROUP BY t2.g "
                                   "HAVING t2.g = 'y') AS y FROM a AS t1",
    "scalar_correlated_not_aggregate": "SELECT t1.k, t1.v FROM a AS t1 WHERE t1.v < (SELECT t3.n FROM "
                                       "(SELECT t2.k AS k, COUNT(*) AS n FROM b AS t2 GROUP BY t2.k) AS t3 "
                                       "WHERE t3.k = t1.k)",
    "scalar_correlated_not_aggregate_select": "SELECT t1.k, (SELECT t3.n FROM (SELECT t2.k AS k, COUNT(*) "
                                              "AS n FROM b AS t2 GROUP BY t2.k) AS t3 WHERE t3.k = t1.k) "
                                              "AS n FROM a AS t1",
    # nesting and TPC-H shapes
    "nested_in_in_scalar": "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.k IN (SELECT t2.k FROM b AS t2 "
                           "WHERE t2.g IN (SELECT t3.g FROM a AS t3 WHERE t3.v > 1) AND t2.w > "
                           "(SELECT 0.5 * SUM(t4.v) FROM a AS t4 WHERE t4.k = t2.k AND t4.g = t2.g))",
    "q22_like": "SELECT t9.g, COUNT(*) AS n, SUM(t9.v) AS s FROM (SELECT t1.g AS g, t1.v AS v "
                "FROM a AS t1 WHERE t1.v > (SELECT AVG(t2.v) FROM a AS t2 WHERE t2.v > 0) AND NOT EXISTS "
                "(SELECT 1 FROM b AS t3 WHERE t3.k = t1.k)) AS t9 GROUP BY t9.g",
    "q15_like": "WITH r AS (SELECT t1.k AS k, SUM(t1.v) AS total FROM a AS t1 GROUP BY t1.k) "
                "SELECT t2.k, t2.w, r.total FROM b AS t2, r WHERE t2.k = r.k AND r.total = "
                "(SELECT MAX(r2.total) FROM r AS r2) ORDER BY t2.k",
    # TPC-DS q24: HAVING compares with a scalar subquery over the CTE the block groups (the lifted
    # aggregation's WITH stays where the joined subquery can read it)
    "q24_like": "WITH s AS (SELECT t1.g AS g, t1.k AS k, SUM(t1.v) AS net FROM a AS t1 GROUP BY t1.g, t1.k) "
                "SELECT s.g, SUM(s.net) AS paid FROM s GROUP BY s.g "
                "HAVING SUM(s.net) > (SELECT 0.5 * AVG(s2.net) FROM s AS s2)",
    "q18_like": "SELECT t1.k, t2.w, SUM(t1.v) AS s FROM a AS t1, b AS t2 WHERE t1.k IN "
                "(SELECT t3.k FROM a AS t3 GROUP BY t3.k HAVING SUM(t3.v) > 3) AND t1.k = t2.k "
                "GROUP BY t1.k, t2.w",
    # several keyed joins in one SELECT (sql/rules/keyed_joins.py)
    "two_left_joins": "SELECT t1.k, t2.w, t3.v AS v3 FROM a AS t1 LEFT JOIN b AS t2 ON t1.k = t2.k "
                      "LEFT JOIN a AS t3 ON t2.w = t3.v",
    "left_then_anti": "SELECT t1.k, t2.w FROM a AS t1 LEFT JOIN b AS t2 ON t1.k = t2.k "
                      "LEFT ANTI JOIN b AS t3 ON t3.g = t1.g WHERE t1.v > 0",
    "full_then_left": "SELECT t1.k AS k1, t2.k AS k2, t3.w FROM a AS t1 FULL JOIN b AS t2 ON t1.k = t2.k "
                      "LEFT JOIN b AS t3 ON t3.k = t2.k WHERE t1.v IS NULL OR t1.v > 1",
    "left_grouped": "SELECT t1.g, COUNT(*) AS n, COUNT(t2.w) AS nw FROM a AS t1 "
                    "LEFT JOIN b AS t2 ON t1.k = t2.k GROUP BY t1.g",
}


class _Case(Case):
    """The oracle's case, its tables loaded by one INSERT of literal rows (executemany costs
    about as much as the refresh it feeds)."""

    def load(self, name: str, rows: list[tuple], columns, weight: bool = False) -> None:
        from tests.fuzz.oracle import TYPES

        ddl = ", ".join(f"{c} {TYPES[t]}" for c, t in columns) + (", __dt_w BIGINT" if weight else "")
        self.con.execute(f"CREATE OR REPLACE TABLE {name} ({ddl})")
        if rows:
            self.con.execute(f"INSERT INTO {name} VALUES " + ", ".join(
                "(" + ", ".join(generator._lit(x) for x in r) + ")" for r in rows))


def run_sql(sql: str, seed: int, steps: int = STEPS, con=None) -> Outcome:
    """`sql` over the sources' rows and change history of `seed` (as oracle.run_case does for
    a generated query)."""
    rng = random.Random(seed)
    out = Outcome(seed, sql, "hand-written")
    delta_sql, refused = judge(sql)
    if refused:
        out.refused = refused
        return out
    con = con or connect()
    case = _Case(con, seed, rng, sql)
    data = {n: generator.initial_rows(rng, n) for n in case.inputs}
    for n in case.inputs:
        case.load(n, data[n], generator.SOURCES[n])
    table = norm(case.run(sql))
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
            _check(table, norm(case.run(sql)), "")
        except Mismatch as err:
            out.mismatch = str(err)
            return out
    return out


def connect():
    """A DuckDB connection that knows Spark's raise_error (a scalar subquery returning several
    rows raises it in dt's rewrite, as Spark's own check does)."""
    con = duckdb.connect()
    con.execute("CREATE MACRO raise_error(message) AS error(message)")
    return con


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_written_case_matches_its_recompute(name):
    con = connect()
    for seed in range(SEEDS):
        out = run_sql(CASES[name], seed, con=con)
        assert out.refused is None, f"{name}: refused: {out.refused}"
        assert out.mismatch is None, f"{name}, seed {seed}: {out.mismatch}\n{out.sql}"


# -- explain and the refresh mode agree; the TPC-H queries with subqueries are accepted ----------

TPCH = Path(__file__).resolve().parents[2] / "benchmarks" / "tpch_queries"
# TPC-H's tables (the columns the queries read, with the specification's types)
TPCH_SOURCES = {
    "nation": "n_nationkey BIGINT, n_name STRING, n_regionkey BIGINT, n_comment STRING",
    "region": "r_regionkey BIGINT, r_name STRING, r_comment STRING",
    "part": "p_partkey BIGINT, p_name STRING, p_mfgr STRING, p_brand STRING, p_type STRING, "
            "p_size INT, p_container STRING, p_retailprice DECIMAL(15,2), p_comment STRING",
    "supplier": "s_suppkey BIGINT, s_name STRING, s_address STRING, s_nationkey BIGINT, "
                "s_phone STRING, s_acctbal DECIMAL(15,2), s_comment STRING",
    "partsupp": "ps_partkey BIGINT, ps_suppkey BIGINT, ps_availqty INT, "
                "ps_supplycost DECIMAL(15,2), ps_comment STRING",
    "customer": "c_custkey BIGINT, c_name STRING, c_address STRING, c_nationkey BIGINT, "
                "c_phone STRING, c_acctbal DECIMAL(15,2), c_mktsegment STRING, c_comment STRING",
    "orders": "o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus STRING, o_totalprice DECIMAL(15,2), "
              "o_orderdate DATE, o_orderpriority STRING, o_clerk STRING, o_shippriority INT, "
              "o_comment STRING",
    "lineitem": "l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, "
                "l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), "
                "l_tax DECIMAL(15,2), l_returnflag STRING, l_linestatus STRING, l_shipdate DATE, "
                "l_commitdate DATE, l_receiptdate DATE, l_shipinstruct STRING, l_shipmode STRING, "
                "l_comment STRING",
}
# the queries with a subquery outside FROM, and what still makes some of them FULL (another
# construct: LIMIT, refreshed by top-N once it lands; Q18's unnamed column)
SUBQUERY_TPCH = ["q02", "q04", "q11", "q15", "q16", "q17", "q18", "q20", "q21", "q22"]


def _arrow(ddl: str):
    import pyarrow as pa

    types = {"BIGINT": pa.int64(), "INT": pa.int32(), "STRING": pa.string(), "DATE": pa.date32(),
             "DECIMAL(15,2)": pa.decimal128(15, 2)}
    return pa.schema([pa.field(name, types[kind]) for name, kind in
                      (c.split(" ", 1) for c in re.split(r", (?![^(]*\))", ddl))])


@pytest.fixture(scope="module")
def checked_subquery_projects(tmp_path_factory):
    from deltalake import write_deltalake

    from dtcli import api
    from dtcli.errors import ValidationError
    from tests.helpers import write_project

    out = []
    base = tmp_path_factory.mktemp("subqueries")
    for folder, tables, sources in (
            ("cases", {f"c_{n}": sql for n, sql in CASES.items()}, generator.DDL),
            ("tpch", {q: (TPCH / f"{q}.sql").read_text() for q in SUBQUERY_TPCH}, TPCH_SOURCES)):
        root = base / folder
        config = "sources:\n" + "".join(f"  {n}: {{path: data/{n}}}\n" for n in sources)
        for name, ddl in sources.items():
            schema = _arrow(ddl) if folder == "tpch" else _fuzz_arrow(name)
            write_deltalake(str(root / "data" / name), schema.empty_table(),
                            configuration={"delta.enableChangeDataFeed": "true"})
        write_project(root, tables, config=config)
        try:
            out.append(api.check(root, use_cache=False))
        except ValidationError as err:
            # Q18's `sum(l_quantity)` has no name until unnamed outputs take Spark's (issue 38
            # item 5, another change): checked without it meanwhile
            if "q18.sql" not in str(err) or "no column name" not in str(err):
                raise
            (root / "tables" / "q18.sql").unlink()
            out.append(api.check(root, use_cache=False))
    return out


def _fuzz_arrow(name: str):
    import pyarrow as pa

    types = {"int": pa.int32(), "str": pa.string(), "arr": pa.list_(pa.int32())}
    return pa.schema([pa.field(c, types[t]) for c, t in generator.SOURCES[name]])


def test_a_scalar_subquery_returning_several_rows_fails_the_refresh_as_it_fails_the_query():
    sql = "SELECT t1.k, t1.g FROM a AS t1 WHERE t1.v < (SELECT t2.w FROM b AS t2 WHERE t2.g = 'x')"
    delta_sql, refused = judge(sql)
    assert refused is None, refused
    con = connect()
    case = _Case(con, 0, random.Random(0), sql)
    before = {"a": [(1, "x", 0), (2, "y", 1)], "b": [(1, "x", 5), (2, "y", 7)]}
    for n, rows in before.items():
        case.load(n, rows, generator.SOURCES[n])
    table = norm(case.run(sql))
    after = {"a": before["a"], "b": before["b"] + [(3, "x", 6)]}
    bindings = case.bind(before, after, {"b": [((3, "x", 6), "insert")]})
    with pytest.raises(duckdb.Error, match="more than one row"):
        case.refresh(delta_sql, table, bindings, Outcome(0, sql, "hand-written"))
    with pytest.raises(duckdb.Error, match="More than one row"):
        case.run(sql)


def test_explain_and_the_refresh_mode_agree_on_every_case_and_tpch_query(checked_subquery_projects):
    from tests.fuzz.explain_agreement import disagreements, refused_as_incremental

    for checked in checked_subquery_projects:
        problems = disagreements(checked) + refused_as_incremental(checked)
        assert not problems, "\n".join(problems[:10])


def test_every_case_and_tpch_subquery_is_rewritten_into_joins(checked_subquery_projects):
    """Every hand-written case refreshes incrementally; every TPC-H query with a subquery does
    too, or is FULL only for a construct that is no subquery (LIMIT, an unnamed column)."""
    from dtcli.artifacts.typed_json import to_json
    from dtcli.model import FULL
    from dtcli.planning.explain import explain

    cases, tpch = checked_subquery_projects
    for name in cases.graph.order:
        assert cases.modes[name].mode != FULL, (name, cases.modes[name].reason)
    for name in tpch.graph.order:
        mode = tpch.modes[name]
        if mode.mode == FULL:
            assert re.search(r"^(LIMIT|.*has no column name|.*name)", mode.reason or ""), (name, mode.reason)
        rows = to_json(explain(tpch, name))["operators"]
        assert not any("subquery" in r["operator"] and not r["incremental"] for r in rows), (name, rows)
        assert any("subquery" in r["operator"] and "→" in r["operator"] for r in rows), (name, rows)
