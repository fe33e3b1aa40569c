"""The change-query compiler, without Spark: which terms it builds and what it refuses."""

from __future__ import annotations

import pytest
from sqlglot import exp

from dtcli.sql.incremental_rewrite import (
    Bindings,
    DeltaCompiler,
    KeySet,
    inline_ctes,
    parse,
    unsupported_reason,
)


def compiler_(inputs, changed=None):
    """A compiler whose key sets are recorded as SQL instead of being materialized."""
    keys = []

    def materialize(query):
        keys.append(query.sql(dialect="spark"))
        return KeySet(f"__dt_ktest{len(keys)}")

    changed = set(inputs if changed is None else changed)
    return DeltaCompiler(Bindings.for_inputs(inputs, changed), materialize), keys


def compile_(sql, inputs, changed=None):
    compiler, keys = compiler_(inputs, changed)
    plus, minus = compiler.compile(sql)
    text = lambda q: q.sql(dialect="spark") if q is not None else None  # noqa: E731
    return text(plus), text(minus), keys


def test_inner_join_is_the_delta_rule_over_old_and_new():
    plus, minus, keys = compile_("SELECT a.x, b.y FROM t AS a JOIN u AS b ON a.k = b.k",
                                 ["t", "u"])
    assert plus == ("SELECT a.x, b.y FROM __dt_i0_plus AS a JOIN __dt_i1_old AS b ON a.k = b.k "
                    "UNION ALL SELECT a.x, b.y FROM __dt_i0_new AS a JOIN __dt_i1_plus AS b "
                    "ON a.k = b.k")
    assert "__dt_i0_minus" in minus and "__dt_i1_minus" in minus
    assert keys == []


def test_an_order_by_without_limit_is_left_out_of_the_change_queries():
    """Fuzz seed 437: each branch of the join's change query carried the ORDER BY, and Spark
    failed to parse `… ORDER BY c0 UNION ALL …`."""
    plus, minus, _ = compile_("SELECT b.w AS c0 FROM t AS a JOIN t AS b ON a.w = b.k ORDER BY c0", ["t"])
    assert "ORDER BY" not in plus and "ORDER BY" not in minus and "UNION ALL" in plus
    assert parse("SELECT k FROM t ORDER BY k LIMIT 3").args.get("order") is not None   # a top-N keeps it


def test_only_changed_inputs_make_terms():
    plus, _, _ = compile_("SELECT a.x FROM t AS a JOIN u AS b ON a.k = b.k", ["t", "u"], {"u"})
    assert "UNION" not in plus and "__dt_i1_plus" in plus and "__dt_i0_new" in plus


def test_no_change_no_query():
    assert compile_("SELECT x FROM t", ["t"], set())[:2] == (None, None)


def test_cte_references_are_separate_occurrences():
    plus, _, _ = compile_("WITH c AS (SELECT k, v FROM t) SELECT c1.v, c2.v FROM c AS c1 "
                          "JOIN c AS c2 ON c1.k = c2.k", ["t"])
    assert plus.count("__dt_i0_plus") == 2 and "__dt_i0_old" in plus and "__dt_i0_new" in plus


def test_union_all_drops_constant_branches_and_keeps_column_names():
    plus, _, _ = compile_("SELECT 1 AS one UNION ALL SELECT x FROM t", ["t"])
    assert plus.startswith("SELECT * FROM (SELECT 1 AS one) AS __dt_empty WHERE FALSE UNION ALL")


def test_group_by_recomputes_affected_keys_at_both_versions():
    plus, minus, keys = compile_("SELECT g, SUM(v) AS s FROM t GROUP BY 1", ["t"])
    assert keys == ["SELECT g AS __dt_c0 FROM __dt_i0_both AS t"]
    assert "__dt_i0_new" in plus and "__dt_i0_old" in minus
    assert "EXISTS(SELECT 1 FROM __dt_ktest1 AS __dt_key WHERE __dt_key.__dt_c0 IS NOT DISTINCT FROM g)" in plus


def test_left_join_is_keyed_by_the_preserved_side():
    plus, _, keys = compile_("SELECT a.k, b.w FROM t AS a LEFT JOIN u AS b ON a.k = b.k", ["t", "u"])
    assert len(keys) == 1 and "__dt_i0_both" in keys[0] and "__dt_i1_both" in keys[0]
    assert "IS NOT DISTINCT FROM a.k" in plus


def test_a_group_by_a_keyed_derived_tables_key_takes_its_key_set():
    """TPC-H Q13's shape, as dt rewrites it: a GROUP BY over a derived LEFT JOIN, by the join's
    key. The join's affected keys are the GROUP BY's: one key set, not a second one read from
    the join's rows at both versions."""
    sql = ("SELECT j.k, COUNT(j.w) AS n FROM (SELECT a.k AS k, b.w AS w FROM t AS a "
           "LEFT JOIN u AS b ON a.k = b.k) AS j GROUP BY j.k")
    plus, minus, keys = compile_(sql, ["t", "u"])
    assert len(keys) == 1 and "__dt_i0_both" in keys[0] and "__dt_i1_both" in keys[0]
    assert "__dt_ktest1" in plus and "__dt_ktest1" in minus
    # grouped by another column than the key: the keys are read from the join's rows
    _, _, keys = compile_(sql.replace("GROUP BY j.k", "GROUP BY j.w").replace("SELECT j.k", "SELECT j.w"),
                          ["t", "u"])
    assert len(keys) == 2


def test_full_join_key_coalesces_both_sides():
    plus, _, _ = compile_("SELECT * FROM t AS a FULL JOIN u AS b ON a.k = b.k", ["t", "u"])
    assert "COALESCE(a.k, b.k)" in plus


def test_nested_aggregate_feeds_an_outer_join():
    plus, _, keys = compile_("SELECT s.g, s.total, u.w FROM (SELECT g, SUM(v) AS total FROM t "
                             "GROUP BY g) AS s JOIN u ON s.g = u.g", ["t", "u"])
    assert len(keys) == 1 and plus.count("UNION ALL") == 1


def test_window_partitions_are_the_keys():
    _, _, keys = compile_("SELECT k, RANK() OVER (PARTITION BY g, h ORDER BY v) AS r, "
                          "SUM(v) OVER (PARTITION BY g) AS s FROM t", ["t"])
    assert keys == ["SELECT g AS __dt_c0 FROM __dt_i0_both AS t"]


def test_cte_inlining_respects_scopes():
    q = inline_ctes(parse("WITH a AS (SELECT 1 AS x) SELECT * FROM a JOIN (WITH a AS "
                          "(SELECT 2 AS x) SELECT * FROM a) AS b ON TRUE"))
    text = q.sql(dialect="spark")
    assert "SELECT 1 AS x" in text and "SELECT 2 AS x" in text and "WITH" not in text


@pytest.mark.parametrize("sql, words", [
    ("SELECT x FROM t UNION SELECT x FROM t", "UNION (distinct)"),
    ("SELECT * FROM t AS a LEFT JOIN t AS b ON a.k = b.k LEFT JOIN t AS c ON a.k = c.k",
     "more than one outer, semi or anti join"),
    ("SELECT g, SUM(v) FROM t GROUP BY ROLLUP (g)", "ROLLUP"),
    ("SELECT DISTINCT SUM(v) FROM t GROUP BY g", "DISTINCT over an aggregation"),
    ("SELECT x FROM t LIMIT 3", "LIMIT"),
    ("SELECT x FROM t WHERE x IN (SELECT y FROM t)", "subquery outside FROM"),
    ("SELECT x FROM other", "not one of its inputs"),
    ("SELECT * FROM t AS a FULL JOIN t AS b ON a.x > b.y", "without an equality"),
    ("SELECT k, RANK() OVER (PARTITION BY g ORDER BY SUM(v)) FROM t GROUP BY k", "PARTITION BY is not"),
    ("SELECT DISTINCT * FROM t", "DISTINCT *"),
    ("SELECT x, rand() FROM t", "nondeterministic"),
])
def test_unsupported_constructs_say_why(sql, words):
    reason = unsupported_reason(sql, ["t"])
    assert reason is not None and words in reason


@pytest.mark.parametrize("sql", [
    "SELECT k, g, v FROM t WHERE v > 1",
    "SELECT t.k, e.x FROM t LATERAL VIEW explode(t.arr) e AS x",
    "SELECT COUNT(*) FROM t",
    "SELECT DISTINCT g, k FROM t",
    "SELECT g, k, RANK() OVER (PARTITION BY g ORDER BY SUM(v)) FROM t GROUP BY g, k",
    "SELECT a.k, COUNT(b.k) FROM t AS a LEFT JOIN t AS b USING (k) GROUP BY a.k",
    "WITH x AS (SELECT k FROM t) SELECT * FROM x UNION ALL SELECT k FROM t",
])
def test_supported_shapes(sql):
    assert unsupported_reason(sql, ["t"]) is None


def keyed_(sql, inputs, changed=None):
    compiler, keys = compiler_(inputs, changed)
    return compiler.keyed(sql), keys


def test_a_top_level_group_by_is_replaced_by_key_without_an_old_version_recompute():
    keyed, keys = keyed_("SELECT o.c, COUNT(*) AS n, SUM(l.v) AS s FROM l JOIN o ON l.k = o.k "
                         "GROUP BY o.c", ["l", "o"])
    assert keyed.positions == [0]
    text = keyed.query.sql(dialect="spark")
    assert "_old" not in text and "__dt_i0_new" in text and "__dt_i1_new" in text
    assert "__dt_ktest1" in text            # restricted to the affected keys
    # the keys of o's change come from o's change alone: no scan of l for them
    assert len(keys) == 1
    l_term, o_term = keys[0].split(" UNION ALL ")
    # o after l's change: read as its new rows and its change (a superset of its old rows, enough
    # for keys), so no old version of o is read
    assert "__dt_i0_both" in l_term and "__dt_i1_prior" in l_term and "_old" not in keys[0]
    assert o_term == "SELECT o.c AS __dt_c0 FROM __dt_i1_both AS o"


def test_item_keys_keep_the_items_own_filters_only():
    _, keys = keyed_("SELECT o.c, COUNT(*) AS n FROM l JOIN o ON l.k = o.k "
                     "WHERE o.flag = 'F' AND l.q > o.q AND l.r = 1 GROUP BY o.c", ["l", "o"], {"o"})
    assert keys == ["SELECT o.c AS __dt_c0 FROM __dt_i1_both AS o WHERE o.flag = 'F'"]


def test_window_partitions_and_distinct_rows_are_keys():
    keyed, _ = keyed_("SELECT c, k, RANK() OVER (PARTITION BY c ORDER BY v DESC) AS r FROM t",
                      ["t"])
    assert keyed.positions == [0]
    keyed, _ = keyed_("SELECT DISTINCT a, b FROM t", ["t"])
    assert keyed.positions == [0, 1]


@pytest.mark.parametrize("sql", [
    "SELECT a, b FROM t WHERE a > 1",                                 # linear: no key
    "SELECT SUM(v) AS s FROM t",                                      # scalar aggregate
    "SELECT COUNT(*) AS n FROM t GROUP BY a",                         # key not selected
    "SELECT upper(a) AS u, COUNT(*) AS n FROM t GROUP BY a",          # key selected transformed
    "SELECT s.g, s.n FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS s WHERE s.n > 1",
])
def test_blocks_not_keyed_by_their_own_output_take_the_general_path(sql):
    assert keyed_(sql, ["t"])[0] is None


def test_key_predicates_are_null_safe_and_refuse_what_they_cannot_say():
    from pyspark.sql.types import DecimalType, DoubleType, IntegerType, LongType, StringType

    from dtcli.engine.runtime.key_predicates import literal, match_keys

    assert match_keys(["k"], [LongType()], [(1,), (None,)]) == "(`k` IS NULL OR `k` = 1L)"
    assert match_keys(["k"], [LongType()], [(None,)]) == "`k` IS NULL"
    # a key that cannot be rendered beside a NULL one: not the NULL's rows alone
    assert match_keys(["k"], [DoubleType()], [(1.5,), (None,)]) is None
    # a composite key of integers and strings compares as one string per row, strings with
    # their length in front; with a decimal, as a struct whose field names and types match exactly
    assert match_keys(["a", "b"], [LongType(), StringType()], [(1, "x'y")]) == \
        "(`a` >= 1L AND `a` <= 1L AND concat(CAST(`a` AS STRING), '|', " \
        "concat(CAST(char_length(`b`) AS STRING), ':', `b`)) IN ('1|3:x\\'y'))"
    from decimal import Decimal
    assert "named_struct('k0', 'y', 'k1', CAST(3BD AS DECIMAL(12,0)))" in \
        match_keys(["s", "g"], [StringType(), DecimalType(12, 0)], [("y", Decimal(3))])
    assert match_keys(["a", "b"], [LongType(), StringType()], [(1, None)]) is None
    assert match_keys(["k"], [LongType()], []) is None
    assert literal(1.5, DoubleType()) is None      # a float literal may not round-trip
    assert literal(7, IntegerType()) == "7" and literal(7, LongType()) == "7L"


def test_spread_keys_are_folded_into_ranges_files_can_be_skipped_by():
    from pyspark.sql.types import LongType

    from dtcli.engine.runtime.key_predicates import MAX_RANGES, among, ranges

    spread = [k * 1000 for k in range(500)] + [k * 1000 + 1 for k in range(500)]
    folded = ranges(spread, LongType())
    assert len(folded) == MAX_RANGES
    assert all(any(lo <= v <= hi for lo, hi in folded) for v in spread)
    # the ranges prune, the exact list decides: never a row of another key
    sql = among("`k`", spread, LongType())
    assert sql.startswith("(`k` >= 0L AND `k` <= 499001L AND ((`k` >= 0L AND `k` <=") and "`k` IN (0L, 1000L" in sql
    widest = max(hi - lo for lo, hi in folded)
    assert widest < 3 * 500_000 / MAX_RANGES      # equal gaps: the cuts spread over the whole range
    assert among("`k`", [5, 5, None], LongType()) == "`k` = 5L"


def test_pivot_and_tablesample_on_a_table_are_refreshed_full():
    for sql in ("SELECT * FROM a PIVOT (SUM(v) FOR g IN ('x', 'y'))",
                "SELECT * FROM a TABLESAMPLE (10 PERCENT)"):
        assert "cannot be refreshed incrementally" in unsupported_reason(sql, ["a"])


def test_windows_without_partition_by_are_one_partition():
    """No PARTITION BY: the block is one key, recomputed whole (nested: at both versions); the
    outermost block is replaced whole (Keyed with no key columns) or kept from its own rows,
    rewriting from the first changed position when every window allows it."""
    plus, minus, keys = compile_("SELECT s.k, s.r FROM (SELECT k, RANK() OVER (ORDER BY v) AS r FROM t) AS s",
                                 ["t"])
    assert keys == [] and "__dt_i0_new" in plus and "__dt_i0_old" in minus
    compiler, _ = compiler_(["t"])
    keyed = compiler.keyed("SELECT k, v, RANK() OVER (ORDER BY v) AS r FROM t")
    assert keyed.positions == [] and keyed.keys.rows == [()]
    upkeep = compiler_(["t"])[0].own_rows("SELECT k, v, RANK() OVER (ORDER BY v DESC) AS r, "
                                          "SUM(k) OVER (ORDER BY v DESC) AS s FROM t")
    assert upkeep.keys == [] and upkeep.plain == [0, 1] and upkeep.order == [(1, True, False)]
    for whole in ("SELECT k, v, NTILE(2) OVER (ORDER BY v) AS n FROM t",
                  # the neighbour among tied rows: every row evaluated again
                  "SELECT k, v, LAG(k) OVER (ORDER BY v) AS p FROM t",
                  "SELECT k, v, SUM(k) OVER (ORDER BY v ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s FROM t",
                  "SELECT k, v, SUM(k) OVER () AS s FROM t",
                  "SELECT k, v, RANK() OVER (ORDER BY v) AS r, RANK() OVER (ORDER BY k) AS q FROM t"):
        upkeep = compiler_(["t"])[0].own_rows(whole)
        assert upkeep.keys == [] and upkeep.order is None, whole


def test_a_sum_beside_the_count_of_its_argument_needs_no_never_null_proof():
    """own_rows pairs each SUM with the COUNT of the same argument: the SUM is NULL exactly when
    that count is 0, so no probe of the argument's nullability is needed for it; a global block
    (a totals table without GROUP BY) is kept too."""
    compiler, _ = compiler_(["t"])
    upkeep = compiler.own_rows("SELECT g, COUNT(*) AS n, COUNT(v) AS c, SUM(v) AS s, SUM(w) AS sw FROM t GROUP BY g")
    sums = {m.position: m.count for m in upkeep.measures if m.kind == "sum"}
    assert sums == {3: 2, 4: None}
    assert "__dt_p0" in upkeep.probe.sql() and "w" in upkeep.probe.sql() and " v " not in upkeep.probe.sql()
    upkeep = compiler_(["t"])[0].own_rows("SELECT COUNT(*) AS n, COUNT(v) AS c, SUM(v) AS s FROM t")
    assert upkeep.keys == [] and "GROUP BY" not in upkeep.deltas.sql()
    upkeep = compiler_(["t"])[0].own_rows("SELECT COUNT(*) AS n FROM t")
    assert upkeep.keys == [] and "__dt_one" in upkeep.rows.sql()


def test_order_by_without_limit_is_left_out_of_the_change_queries():
    """FUZZ-FINDINGS seed 437: the outermost ORDER BY was copied into each UNION ALL branch of
    the change query (`… ORDER BY c0 UNION ALL …`), which Spark does not parse."""
    plus, minus, _ = compile_("SELECT t2.w AS c0 FROM t AS t1 INNER JOIN t AS t2 ON t1.w = t2.k ORDER BY c0",
                              ["t"])
    assert "UNION ALL" in plus and "ORDER BY" not in plus + minus
    plus, _, _ = compile_("SELECT s.k FROM (SELECT k FROM t ORDER BY v) AS s JOIN u ON s.k = u.k "
                          "ORDER BY s.k", ["t", "u"])
    assert "ORDER BY" not in plus
    # a window keeps its own ORDER BY
    plus, _, _ = compile_("SELECT k, RANK() OVER (PARTITION BY g ORDER BY v) AS r FROM t ORDER BY r", ["t"])
    assert plus.count("ORDER BY") == 1


# -- semi / anti joins and one-row items -----------------------------------------------------

def test_a_semi_join_is_keyed_by_its_left_side_and_its_keys_prune_the_right_side_too():
    sql = ("SELECT a.k, a.v FROM t AS a CROSS JOIN w AS c LEFT SEMI JOIN u AS b "
           "ON b.k = a.k AND b.x <> a.v WHERE c.j = a.j AND c.z > 1")
    plus, minus, keys = compile_(sql, ["t", "u", "w"])
    # left changes: the items before the join with the WHERE conjuncts on them alone (no cross
    # product of a change with every row of the other items); right changes: their key
    assert keys == ["SELECT a.k AS __dt_c0 FROM __dt_i0_both AS a CROSS JOIN __dt_i2_old AS c WHERE "
                    "c.j = a.j AND c.z > 1 UNION ALL SELECT a.k AS __dt_c0 FROM __dt_i0_new AS a "
                    "CROSS JOIN __dt_i2_both AS c WHERE c.j = a.j AND c.z > 1 "
                    "UNION ALL SELECT b.k AS __dt_c0 FROM __dt_i1_both AS b"]
    assert "LEFT SEMI JOIN __dt_i1_new AS b ON b.k = a.k AND b.x <> a.v WHERE" in plus
    assert "LEFT SEMI JOIN __dt_i1_old AS b" in minus
    compiler = DeltaCompiler(Bindings.for_inputs(["t", "u"], {"u"}), lambda q: KeySet(
        "__dt_k1", filters=[lambda e: exp.In(this=e, expressions=[exp.Literal.number(3)])]))
    plus, _ = compiler.compile("SELECT a.k FROM t AS a LEFT ANTI JOIN u AS b ON a.k = b.k")
    assert "LEFT ANTI JOIN __dt_i1_new AS b ON (a.k = b.k) AND (b.k IN (3))" in plus.sql(dialect="spark")


def test_a_one_row_item_whose_row_did_not_change_makes_no_term():
    sql = "SELECT a.k FROM t AS a CROSS JOIN (SELECT MAX(b.w) AS m FROM u AS b) AS s WHERE a.v > s.m"
    asked = []

    def materialize(query):
        asked.append(query.sql(dialect="spark"))
        same = "EXCEPT ALL" in asked[-1]
        return KeySet(f"__dt_k{len(asked)}", rows=[(0,)] if same else None)
    compiler = DeltaCompiler(Bindings.for_inputs(["t", "u"], {"u"}), materialize)
    assert compiler.compile(sql) == (None, None)
    assert len(asked) == 2      # its two rows, then whether they differ: once for both signs
    # when they differ, the term joins the materialised rows instead of computing MAX twice
    plus, minus, _ = compile_(sql, ["t", "u"], {"u"})
    assert "CROSS JOIN (SELECT m FROM __dt_ktest1 WHERE __dt_sign = 1) AS s" in plus
    assert "CROSS JOIN (SELECT m FROM __dt_ktest1 WHERE __dt_sign = -1) AS s" in minus


def test_a_one_row_item_over_an_unchanged_one_row_item_makes_no_term():
    """FUZZ-FINDINGS seed 1283: a scalar subquery over an uncorrelated NOT EXISTS (its flag a
    one-row item too); a change to the flag's input that leaves the flag as it was left the
    outer item with no change on either side, which crashed (nothing to materialise)."""
    sql = ("SELECT a.k FROM t AS a CROSS JOIN (SELECT COUNT(b.v) AS n FROM u AS b CROSS JOIN "
           "(SELECT COUNT(*) > 0 AS f FROM w AS c) AS e WHERE NOT e.f) AS s WHERE a.k < s.n")
    asked = []

    def materialize(query):
        asked.append(query.sql(dialect="spark"))
        return KeySet(f"__dt_k{len(asked)}", rows=[(0,)] if "EXCEPT ALL" in asked[-1] else None)
    compiler = DeltaCompiler(Bindings.for_inputs(["t", "u", "w"], {"w"}), materialize)
    assert compiler.compile(sql) == (None, None)
    assert len(asked) == 2      # the inner flag's rows and whether they differ; nothing for the outer


def test_a_change_is_pushed_into_the_scans_the_engine_names_worth_it():
    """The pushdown asks, per joined input, whether to narrow its scan (the engine declines a
    small input: read whole, it is one scan shared by every term) and the term says so."""
    asked = []

    def narrow(name, column, scanned):
        asked.append((name, column, scanned))
        if scanned == "small":
            return None
        return lambda e: exp.In(this=e, expressions=[exp.Literal.number(7)])
    compiler = DeltaCompiler(Bindings.for_inputs(["t", "big", "small"], {"t"}), narrow=narrow)
    plus, _ = compiler.compile("SELECT t.a, big.b, small.c FROM t JOIN big ON big.k = t.k "
                               "JOIN small ON small.j = t.j")
    assert ("t", "k", "big") in asked and ("t", "j", "small") in asked
    sql = plus.sql(dialect="spark")
    assert "(big.k IN (7))" in sql and "small.j IN" not in sql


def test_a_join_of_many_changed_inputs_is_summed_over_one_term_each_without_old_versions():
    """Beyond NEW_ONLY_INPUTS changed inputs (2^n - 1 terms), own_rows takes the delta rule's n
    terms, each changed input after a term's own read as PRIOR (its new rows and its change
    negated): no input at its old version (a rebuild of its state from the log) and no term
    twice for plus and minus; the weight is the product of the term's weights."""
    inputs = ["a", "b", "c", "d", "e"]
    compiler, _ = compiler_(inputs, changed={"a", "b", "c", "d"})
    upkeep = compiler.own_rows("SELECT a.g, COUNT(*) AS n, SUM(b.v) AS s FROM a JOIN b ON a.k = b.k "
                               "JOIN c ON c.k = b.k JOIN d ON d.k = c.k JOIN e ON e.k = d.k GROUP BY a.g")
    sql = upkeep.rows.sql(dialect="spark")
    views = Bindings.for_inputs(inputs, set()).views
    assert sql.count(" UNION ALL ") == 3
    assert views["a"]["old"] not in sql and views["a"]["plus"] not in sql and views["a"]["minus"] not in sql
    first, *_, last = sql.split(" UNION ALL ")
    assert "__dt_i0_weighted AS a" in first and "__dt_i1_prior AS b" in first and "__dt_i4_new AS e" in first
    assert "a.__dt_w * b.__dt_w * c.__dt_w * d.__dt_w AS __dt_w" in first
    assert "__dt_i0_new AS a" in last and "__dt_i3_weighted AS d" in last and "prior" not in last


def test_a_change_is_pushed_into_a_derived_table_through_an_input_equal_to_both():
    """TPC-H Q2's shape: the changed partsupp rows' part keys restrict the minimum cost per part
    (a derived table joined to part, not to partsupp), through part's key equal to both; the
    engine is told the chain's input columns, to check their types."""
    asked = []

    def narrow(name, column, scanned, via=None):
        asked.append((name, column, scanned, via))
        return lambda e: exp.In(this=e, expressions=[exp.Literal.number(7)])
    compiler = DeltaCompiler(Bindings.for_inputs(["p", "ps"], {"ps"}), narrow=narrow)
    plus, _ = compiler.compile(
        "SELECT p.k, ps.c FROM p JOIN ps ON p.k = ps.k "
        "JOIN (SELECT x.k, MIN(x.c) AS m FROM ps AS x GROUP BY x.k) AS d ON d.k = p.k "
        "WHERE ps.c = d.m")
    # asked with the input the derived table scans that column of, for its file statistics
    assert ("ps", "k", "ps", [("p", "k")]) in asked
    assert "(d.k IN (7))" in plus.sql(dialect="spark")


def test_a_derived_tables_change_restricts_what_joins_it_to_its_keys():
    """The term reading the minimum cost per part as its change (recomputed for the changed
    parts' keys, a literal key set) restricts part's key, equated with the derived key, to
    them, where the engine's narrowing says the scan skips enough; no other term does."""
    asked = []

    def materialize(query):
        return KeySet("__dt_kparts", rows=[(3,)])

    def narrow(name, column, scanned, via=None):
        asked.append((name, column, scanned))
        if name != "__dt_kparts":
            return None
        return lambda e: exp.In(this=e, expressions=[exp.Literal.number(3)])
    compiler = DeltaCompiler(Bindings.for_inputs(["p", "ps"], {"ps"}), materialize, narrow=narrow)
    plus, _ = compiler.compile(
        "SELECT p.k, ps.c FROM p JOIN ps ON p.k = ps.k "
        "JOIN (SELECT x.k, MIN(x.c) AS m FROM ps AS x GROUP BY x.k) AS d ON d.k = p.k "
        "WHERE ps.c = d.m")
    terms = plus.sql(dialect="spark").split(" UNION ALL ")
    assert [("(p.k IN (3))" in t) for t in terms] == [False, True]
    assert ("__dt_kparts", "__dt_c0", "p") in asked     # the key set's values, into p's scan


def test_a_moved_one_row_input_compared_with_every_row_recomputes_every_key():
    """TPC-H Q22's shape: customers above the average balance (a kept aggregate of one row, an
    input of its own). When the average moved, every customer may cross it: all keys are
    recomputed at the new version, not found by terms reading every customer twice; joined by
    an equality, or not known to be one row, it is keyed as before."""
    sql = ("SELECT s.code, COUNT(*) AS n FROM (SELECT c.code, c.b FROM c AS c CROSS JOIN a AS a "
           "WHERE c.b > a.v) AS s GROUP BY s.code")
    compiler = DeltaCompiler(Bindings.for_inputs(["c", "a"], {"a"}), one_row={"a"})
    keyed = compiler.keyed(sql)
    assert keyed.positions == [] and keyed.keys.rows == [()]
    text = keyed.query.sql(dialect="spark")
    assert "__dt_i1_new AS a" in text and "_old" not in text and "_both" not in text
    assert DeltaCompiler(Bindings.for_inputs(["c", "a"], {"a"})).keyed(sql).positions == [0]
    equal = sql.replace("CROSS JOIN a AS a WHERE c.b > a.v", "JOIN a AS a ON c.b = a.v")
    assert DeltaCompiler(Bindings.for_inputs(["c", "a"], {"a"}), one_row={"a"}).keyed(equal).positions == [0]
