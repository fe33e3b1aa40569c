"""The running-totals split of an aggregate (sql/rules/aggregate_totals.py), pure sqlglot (no JVM).
The upkeep of the totals from their own rows: tests/unit/test_incremental_rewrite.py."""

from __future__ import annotations

import pytest
import sqlglot

from dtcli.sql.rules import aggregate_totals as rule


def _q(sql: str):
    return sqlglot.parse_one(sql, read="spark")


def _over(sql: str, types=None) -> str:
    spec = rule.split(_q(sql))
    return spec.over(types or {j: rule.INTEGRAL for j in spec.summed}).sql(dialect="spark")


def test_keys_become_totals_columns_wherever_an_output_or_having_reads_them():
    over = _over("SELECT upper(t.g) AS ug, t.h AS h, SUM(t.v) * 2 AS s FROM t AS t GROUP BY t.g, t.h "
                 "HAVING t.h > 0 AND COUNT(*) > 1")
    assert over == ("SELECT UPPER(__dt_k0) AS ug, __dt_k1 AS h, CASE WHEN __dt_c0 > 0 THEN __dt_s0 END * 2 AS s "
                    "FROM __dt_totals WHERE __dt_k1 > 0 AND __dt_n > 1")


def test_an_argument_read_by_several_aggregates_is_totalled_once():
    spec = rule.split(_q("SELECT t.g AS g, SUM(t.v) AS s, AVG(t.v) AS a, COUNT(t.v) AS c, COUNT(t.w) AS cw, "
                         "COUNT(1) AS n FROM t AS t GROUP BY t.g"))
    assert [a.sql() for a in spec.args] == ["t.v", "t.w"] and spec.summed == {0}
    # a COUNT alone needs no SUM (its argument may be of any type)
    assert "SUM(t.w)" not in spec.totals.sql() and "COUNT(t.w) AS __dt_c1" in spec.totals.sql()
    assert spec.probe().sql() == "SELECT t.v AS __dt_a0 FROM t AS t"
    assert "__dt_n AS n" in spec.over({0: rule.INTEGRAL}).sql()


def test_averages_are_sparks_own():
    assert "CAST(__dt_s0 AS DOUBLE) / CAST(__dt_c0 AS DOUBLE)" in _over("SELECT AVG(t.v) AS a FROM t AS t")
    over = _over("SELECT AVG(t.v) AS a FROM t AS t", {0: (36, 30)})
    assert "CAST(__dt_s0 / CAST(__dt_c0 AS DECIMAL(20, 0)) AS DECIMAL(38, 34))" in over


def test_a_global_aggregate_has_no_keys_and_one_totals_row():
    spec = rule.split(_q("SELECT COUNT(*) AS n FROM t AS t WHERE t.v > 1"))
    assert spec.keys == () and spec.totals.sql() == "SELECT COUNT(*) AS __dt_n FROM t AS t WHERE t.v > 1"
    assert rule.split(_q("SELECT SUM(t.v) AS s FROM t AS t HAVING SUM(t.v) > 1")) is not None


def test_the_totals_are_the_dts_carried_columns_too():
    spec = rule.split(_q("SELECT t.g AS g, SUM(t.v) AS s FROM t AS t GROUP BY t.g"))
    assert spec.over({0: rule.INTEGRAL}, relation="x", carry=("__dt_w",)).sql().endswith(", __dt_w FROM x")


@pytest.mark.parametrize("sql, why", [
    ("SELECT t.g AS g, MIN(t.v) AS m FROM t AS t GROUP BY t.g", "MIN(t.v) is not COUNT, SUM or AVG"),
    ("SELECT t.g AS g, COUNT(DISTINCT t.v) AS m FROM t AS t GROUP BY t.g", "is not COUNT, SUM or AVG"),
    ("SELECT t.g AS g, SUM(t.v) FILTER (WHERE t.v > 0) AS m FROM t AS t GROUP BY t.g", "FILTER"),
    ("SELECT t.g AS g, SUM(t.v) + rand() AS m FROM t AS t GROUP BY t.g", "nondeterministic"),
    ("SELECT t.g AS g, SUM(t.v) AS s, RANK() OVER (ORDER BY SUM(t.v)) AS r FROM t AS t GROUP BY t.g", "window"),
    ("SELECT t.g AS g, t.h AS h, SUM(t.v) AS s FROM t AS t GROUP BY t.g", "t.h is neither a GROUP BY key"),
    ("SELECT t.g AS g, SUM(t.v) AS s FROM t AS t GROUP BY ROLLUP (t.g)", "ROLLUP"),
    ("SELECT DISTINCT t.g AS g FROM t AS t", "DISTINCT"),
    ("SELECT t.g AS g FROM t AS t", "no aggregate"),
    ("SELECT t.g AS g, COUNT(*) AS n, SUM(t.v) AS s, COUNT(t.v) AS c FROM t AS t GROUP BY t.g", "own rows"),
    ("SELECT t.g AS g, SUM(t.v) AS s FROM t AS t LEFT JOIN u AS u ON t.g = u.g GROUP BY t.g", "outer join"),
])
def test_what_is_not_split_says_why(sql, why):
    assert rule.split(_q(sql)) is None
    assert why in rule.why_not(_q(sql))


def test_an_aggregate_a_rule_made_of_a_set_operation_is_not_split():
    from dtcli.sql.rules import normalize

    query = normalize(_q("SELECT t.g AS g FROM t AS t EXCEPT SELECT u.g AS g FROM u AS u")).query
    assert "GROUP BY" in query.sql() and rule.split(query) is None
