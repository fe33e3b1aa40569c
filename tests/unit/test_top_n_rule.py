"""The top-N split (sql/rules/top_n.py), the analyzer's row for it, and the planner's spec: pure
sqlglot, no JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtcli.model import Column
from dtcli.sql.analysis import analyze
from dtcli.sql.parse import parse_sql, the_query
from dtcli.sql.resolve import resolve
from dtcli.sql.rules import top_n

INPUTS = {"t": (Column("k", "int"), Column("g", "string"), Column("v", "int")),
          "u": (Column("k", "int"), Column("w", "string"))}
TPCH = Path(__file__).resolve().parents[2] / "benchmarks" / "tpch_queries"
_TPCH_COLUMNS = {
    "lineitem": "l_orderkey l_partkey l_suppkey l_linenumber:int l_quantity:d l_extendedprice:d l_discount:d "
                "l_tax:d l_returnflag:s l_linestatus:s l_shipdate:date l_commitdate:date l_receiptdate:date "
                "l_shipinstruct:s l_shipmode:s l_comment:s",
    "orders": "o_orderkey o_custkey o_orderstatus:s o_totalprice:d o_orderdate:date o_orderpriority:s "
              "o_clerk:s o_shippriority:int o_comment:s",
    "customer": "c_custkey c_name:s c_address:s c_nationkey c_phone:s c_acctbal:d c_mktsegment:s c_comment:s",
    "nation": "n_nationkey n_name:s n_regionkey n_comment:s",
    "region": "r_regionkey r_name:s r_comment:s",
    "part": "p_partkey p_name:s p_mfgr:s p_brand:s p_type:s p_size:int p_container:s p_retailprice:d p_comment:s",
    "partsupp": "ps_partkey ps_suppkey ps_availqty:int ps_supplycost:d ps_comment:s",
    "supplier": "s_suppkey s_name:s s_address:s s_nationkey s_phone:s s_acctbal:d s_comment:s",
}
_TYPES = {"": "bigint", "int": "int", "d": "decimal(15,2)", "s": "string", "date": "date"}
TPCH_INPUTS = {t: tuple(Column(c.partition(":")[0], _TYPES[c.partition(":")[2]]) for c in cols.split())
               for t, cols in _TPCH_COLUMNS.items()}


def qualified(sql: str, inputs=None):
    parsed = parse_sql(sql, "spark")
    resolved = resolve(the_query(parsed), inputs or INPUTS, "spark").normalized()
    return parsed, resolved


def test_split_keys_limit_offset_and_state():
    _, r = qualified("SELECT g, SUM(v) AS s FROM t GROUP BY g ORDER BY s DESC, g LIMIT 5 OFFSET 2")
    spec = top_n.split(r.query)
    assert spec.inner.sql(dialect="spark") == "SELECT t.g AS g, SUM(t.v) AS s FROM t AS t GROUP BY t.g"
    assert [(k.position, k.desc, k.nulls_first) for k in spec.order] == [(1, True, False), (0, False, True)]
    assert (spec.limit, spec.offset, spec.outputs, spec.hidden, spec.state) == (5, 2, 2, 0, True)
    assert spec.label() == "ORDER BY … LIMIT 5 OFFSET 2"


@pytest.mark.parametrize("sql, state", [
    ("SELECT k, v FROM t WHERE v > 0 ORDER BY v LIMIT 3", False),       # a filter of one input
    ("SELECT t.k, u.w FROM t JOIN u ON t.k = u.k ORDER BY u.w LIMIT 3", True),
    ("SELECT DISTINCT g FROM t ORDER BY g LIMIT 3", True),
    ("WITH c AS (SELECT k, v FROM t) SELECT k FROM c ORDER BY k LIMIT 3", True),
    ("SELECT k, RANK() OVER (PARTITION BY g ORDER BY v) AS r FROM t ORDER BY r LIMIT 3", True),
])
def test_state_is_kept_unless_the_inner_query_filters_one_input(sql, state):
    assert top_n.split(qualified(sql)[1].query).state is state


def test_nulls_order_follows_the_dialect():
    for dialect, first in (("spark", True), ("snowflake", False)):
        parsed = parse_sql("SELECT k FROM t ORDER BY k LIMIT 1", dialect)
        query = resolve(the_query(parsed), INPUTS, dialect).normalized().query
        assert top_n.split(query).order[0].nulls_first is first


def test_hidden_sort_keys_and_alias_references():
    _, r = qualified("SELECT k AS key FROM t ORDER BY v * 2 DESC, key LIMIT 3")
    spec = top_n.split(r.query)
    assert spec.inner.sql(dialect="spark") == "SELECT t.k AS key, t.v * 2 AS __dt_s0 FROM t AS t"
    assert [k.position for k in spec.order] == [1, 0] and spec.hidden == 1
    _, r = qualified("SELECT g FROM t GROUP BY g ORDER BY SUM(v) LIMIT 1")
    assert top_n.split(r.query).inner.sql(dialect="spark") == \
        "SELECT t.g AS g, SUM(t.v) AS __dt_s0 FROM t AS t GROUP BY t.g"


@pytest.mark.parametrize("sql, reason", [
    ("SELECT DISTINCT k FROM t ORDER BY v LIMIT 2", "SELECT DISTINCT"),
    ("SELECT k FROM t UNION ALL SELECT k FROM u ORDER BY 1 + 1 LIMIT 2", "set operation"),
])
def test_what_cannot_be_split_stays_full_with_the_reason(sql, reason):
    parsed, r = qualified(sql)
    assert top_n.split(r.query) is None and reason in top_n.why_not(r.query)
    analysis = analyze(parsed, r.query, r.rewrites)
    assert not analysis.incremental and reason in analysis.reason


@pytest.mark.parametrize("sql, inner", [
    ("SELECT k, v FROM t UNION ALL SELECT k, 0 AS v FROM u ORDER BY k + 1 DESC, v LIMIT 2",
     "SELECT `__dt_q`.`k` AS `k`, `__dt_q`.`v` AS `v`, `__dt_q`.`k` + 1 AS __dt_s0 FROM (SELECT t.k AS k, "
     "t.v AS v FROM t AS t UNION ALL SELECT u.k AS k, 0 AS v FROM u AS u) AS __dt_q"),
    ("SELECT DISTINCT g, v FROM t ORDER BY COALESCE(v, 0), g LIMIT 2",
     "SELECT `__dt_q`.`g` AS `g`, `__dt_q`.`v` AS `v`, COALESCE(`__dt_q`.`v`, 0) AS __dt_s0 "
     "FROM (SELECT DISTINCT t.g AS g, t.v AS v FROM t AS t) AS __dt_q"),
])
def test_a_key_over_the_outputs_of_a_set_operation_or_distinct_wraps_the_query(sql, inner):
    """The fuzzer's `ORDER BY c0 + 1` (TPC-DS q47's kind) over a UNION or a DISTINCT: computed
    over the query's rows, the change compiler refreshing the wrapped query."""
    from dtcli.sql.incremental_rewrite import unsupported_reason

    parsed, r = qualified(sql)
    spec = top_n.split(r.query)
    assert spec.inner.sql(dialect="spark") == inner and (spec.outputs, spec.hidden) == (2, 1)
    assert spec.order[0].position == 2 and spec.state
    assert unsupported_reason(spec.inner, ["t", "u"]) is None
    assert analyze(parsed, r.query, r.rewrites).incremental


def test_no_limit_is_no_top_n_and_order_by_is_ignored():
    parsed, r = qualified("SELECT k FROM t ORDER BY k")
    assert top_n.split(r.query) is None
    analysis = analyze(parsed, r.query, r.rewrites)
    assert analysis.incremental and [op.strategy for op in analysis.operators if op.operator == "ORDER BY"] \
        == ["ignored: a table keeps no row order"]


def test_the_analyzer_labels_the_top_n_row_and_keeps_an_inner_limit_full():
    parsed, r = qualified("SELECT g, COUNT(*) AS n FROM t GROUP BY g\nORDER BY n DESC LIMIT 10")
    analysis = analyze(parsed, r.query, r.rewrites)
    assert analysis.incremental
    (row,) = [op for op in analysis.operators if "LIMIT" in op.operator]
    assert row.operator == "ORDER BY … LIMIT 10" and row.line == 2 and row.incremental
    assert "internal table" in row.strategy and any("ties" in c for c in row.considerations)
    assert not any(op.operator == "ORDER BY" for op in analysis.operators)
    parsed, r = qualified("SELECT k FROM (SELECT k FROM t ORDER BY v LIMIT 3) AS s")
    analysis = analyze(parsed, r.query, r.rewrites)
    assert not analysis.incremental and "LIMIT" in analysis.reason
    assert any("dynamic table of its own" in c for op in analysis.operators for c in op.considerations)


@pytest.mark.parametrize("name, limit, keys", [
    ("q02", 100, [(0, True), (2, False), (1, False), (3, False)]),
    ("q03", 10, [(1, True), (2, False)]),
    ("q10", 20, [(2, True)]),
    ("q18", 100, [(4, True), (3, False)]),
    ("q21", 100, [(1, True), (0, False)]),
])
def test_the_tpch_top_n_queries_split_with_state(name, limit, keys):
    query = resolve(the_query(parse_sql((TPCH / f"{name}.sql").read_text(), "spark")), TPCH_INPUTS,
                    "spark").normalized().query
    spec = top_n.split(query)
    assert spec.limit == limit and spec.state and spec.hidden == 0
    assert [(k.position, k.desc) for k in spec.order] == keys


def test_the_top_n_check_and_the_reference_step_doctests():
    import doctest

    import tests.top_n_check as check

    assert doctest.testmod(check, optionflags=doctest.ELLIPSIS).failed == 0


@pytest.mark.parametrize("seed", range(40))
def test_the_refresh_step_keeps_a_window_of_the_query(seed):
    """The engine's rule (merge when no lost row is held, else recompute), in Python, over
    random changes with ties, NULLs and duplicates: every result is a window the check accepts."""
    import random
    from collections import Counter

    from tests.top_n_check import refresh_top_n, top_n_mismatch, window

    rng = random.Random(seed)
    order = [(0, rng.random() < 0.5, rng.random() < 0.5), (1, rng.random() < 0.5, rng.random() < 0.5)]
    limit, offset = rng.randint(0, 4), rng.choice([0, 0, 1])

    def row():
        return (rng.choice([None, 1, 2, 3]), rng.choice([None, "a", "b"]), rng.randint(0, 2))
    inner = Counter(row() for _ in range(rng.randint(0, 8)))
    held = Counter(window(list(inner.elements()), order, limit, offset))
    for _ in range(6):
        net: Counter = Counter()
        for _ in range(rng.randint(1, 3)):
            present = list(inner.elements())
            if present and rng.random() < 0.5:
                lost = rng.choice(present)
                inner[lost] -= 1
                net[lost] -= 1
            else:
                gained = row()
                inner[gained] += 1
                net[gained] += 1
        inner = +inner
        held, _ = refresh_top_n(held, net, lambda now=inner: list(now.elements()), order, limit, offset, 3)
        assert top_n_mismatch(list(held.elements()), list(inner.elements()), order, limit, offset) is None


def test_a_top_n_step_and_its_frontier_travel_as_json():
    from dtcli.model import Frontier, InternalTable, Plan, RefreshStep, StepOptions, TopNSpec
    from dtcli.model.strategy_specs import SortKey

    spec = TopNSpec("SELECT t.g AS g FROM t AS t", 1, [SortKey(0, True, False)], 3, 0,
                    InternalTable("top_n_rows", "/w/_dt/internal/d/top_n_rows", "SELECT t.g AS g FROM t AS t"))
    frontier = Frontier({"t": 4}, "h", state_versions={"top_n_rows": 7})
    step = RefreshStep(name="d", path="/w/d", action="INCREMENTAL", trigger="SCHEDULED", sql="SELECT 1",
                       inputs=[], definition_hash="h", refresh_mode="INCREMENTAL", previous=frontier,
                       options=StepOptions(top_n=spec))
    plan = Plan(run_id="r", project="p", warehouse="/w", data_timestamp="2026-11-26T00:00:00+00:00",
                source_versions={"t": 4}, steps=[step])
    again = Plan.from_json(plan.to_json())
    assert again == plan and again.steps[0].options.top_n.state.role == "top_n_rows"
    assert again.steps[0].previous.state_versions == {"top_n_rows": 7}
    assert Frontier.from_dict(frontier.to_dict()) == frontier


def test_a_distinct_parenthesised_output_is_the_sort_key_it_names():
    """TPC-DS q41: `SELECT DISTINCT (i_product_name) ... ORDER BY i_product_name LIMIT 100`."""
    _, r = qualified("SELECT DISTINCT (g) FROM t WHERE v > 0 ORDER BY g LIMIT 3")
    spec = top_n.split(r.query)
    assert spec is not None, top_n.why_not(r.query)
    assert [k.position for k in spec.order] == [0] and spec.hidden == 0
