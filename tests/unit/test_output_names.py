"""Unaliased outputs take the name Spark gives them (sql/spark_names.py; checked against Spark in
tests/spark/test_output_names.py): the derived schema, the plan's rename and column mapping."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

from dtcli.model import Column
from dtcli.sql import spark_names
from dtcli.sql.output_names import check_output_names, given_names, needs_column_mapping
from dtcli.sql.parse import parse_sql, the_query
from dtcli.sql.resolve import resolve

ROOT = Path(__file__).resolve().parents[2]
INPUTS = {"lineitem": (Column("l_orderkey", "BIGINT"), Column("l_quantity", "DECIMAL(12,2)")),
          "orders": (Column("o_orderkey", "BIGINT"), Column("o_totalprice", "DECIMAL(12,2)"),
                     Column("o_orderdate", "DATE"), Column("o_custkey", "BIGINT")),
          "customer": (Column("c_custkey", "BIGINT"), Column("c_name", "STRING"))}


def test_the_doctests():
    assert doctest.testmod(spark_names).failed == 0


def _names(sql: str) -> list[str]:
    parsed = parse_sql(sql, "spark")
    resolved = resolve(the_query(parsed), INPUTS, "spark", text=parsed.text)
    assert resolved.names_certain
    return [c.name for c in resolved.columns]


def test_tpch_q18_as_published_is_named_as_spark_names_it():
    sql = (ROOT / "benchmarks" / "tpch_queries" / "q18.sql").read_text()
    parsed = parse_sql(sql, "spark")
    check_output_names(the_query(parsed), (), renamed=False, file=None, text=parsed.text)
    assert _names(sql) == ["c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice", "sum(l_quantity)"]
    assert given_names(the_query(parsed), parsed.text)[-1] == "sum(l_quantity)"
    assert needs_column_mapping(_names(sql))


@pytest.mark.parametrize("expr, name", [
    ("SUM(L_QUANTITY)", "sum(L_QUANTITY)"),       # Spark keeps the query's spelling
    ("nvl(l_quantity, 0)", "nvl(l_quantity, 0)"),
    ("IFNULL(l_quantity, 0)", "ifnull(l_quantity, 0)"),
    ("l_quantity * 2 + 1", "((l_quantity * 2) + 1)"),
    ("CAST(l_orderkey AS STRING)", "l_orderkey"),
    ("count(*)", "count(1)"),
    # sqlglot keeps no position for SUBSTRING: the name written is read before its arguments
    ("SUBSTRING(CAST(l_orderkey AS STRING), 1, 30)", "substring(l_orderkey, 1, 30)"),
    ("Substr(CAST(l_quantity AS STRING), 2)", "substr(l_quantity, 2, 2147483647)"),
    ("CEILING(l_quantity)", "ceiling(l_quantity)"),
])
def test_derived_names(expr, name):
    assert _names(f"SELECT l_orderkey AS k, {expr} FROM lineitem GROUP BY l_orderkey, l_quantity") == ["k", name]


@pytest.mark.parametrize("expr", ["substr(c_name, 1, 2) || substring(c_name, 1, 2)", "percentile_approx(l_quantity, 0.5)",
                                  "sum(l_quantity) OVER (PARTITION BY l_orderkey)", "-1", "1e3",
                                  "DATE '2024-01-01'", "my_udf(l_quantity)"])
def test_forms_whose_spark_name_dt_does_not_derive_are_left_unnamed(expr):
    """Their Spark name has a special case dt does not reproduce (or one sqlglot's parse hides):
    no name rather than a wrong one; validation asks for an alias."""
    sql = f"SELECT {expr} FROM lineitem"
    assert spark_names.output_name(the_query(parse_sql(sql, "spark")).selects[0], sql) is None


def test_names_delta_holds_only_with_column_mapping():
    assert needs_column_mapping(["sum(x)"]) and needs_column_mapping(["a b"]) and needs_column_mapping(["a=b"])
    assert not needs_column_mapping(["k", "count_1", "arr[0]"])


@pytest.mark.parametrize("sql", ["SELECT *, l_quantity + 1 FROM lineitem",
                                 "SELECT lineitem.*, upper(l_orderkey) FROM lineitem"])
def test_an_unaliased_expression_beside_a_star_asks_for_an_alias(sql):
    """Which column it is after the star's expansion only the binder knows, and it names it
    `_col_N`: a name Spark would not give, so dt asks for one instead."""
    from dtcli.errors import ValidationError

    parsed = parse_sql(sql, "spark")
    with pytest.raises(ValidationError, match="has no column name"):
        check_output_names(the_query(parsed), (), renamed=False, file=None, text=parsed.text)


def test_two_outputs_spark_names_alike_stay_an_error():
    """`sum(k)` and `SUM(k)` both take Spark's name `sum(k)`: Spark's CTAS refuses the pair too."""
    from dtcli.errors import ValidationError

    sql = "SELECT sum(l_quantity), SUM(l_quantity) FROM lineitem"
    parsed = parse_sql(sql, "spark")
    with pytest.raises(ValidationError, match="appears twice"):
        check_output_names(the_query(parsed), (), renamed=False, file=None, text=parsed.text)
