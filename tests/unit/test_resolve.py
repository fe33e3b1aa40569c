"""Binding columns to input schemas before Spark runs: types, names, and what is reported."""

from __future__ import annotations

import pytest

from dtcli.errors import ValidationError
from dtcli.model import Column
from dtcli.sql.parse import parse_sql, the_query
from dtcli.sql.resolve import resolve

INPUTS = {
    "a": (Column("k", "INT"), Column("g", "STRING"), Column("v", "DECIMAL(12,2)"), Column("arr", "ARRAY<INT>")),
    "b": (Column("k", "INT"), Column("w", "STRING")),
    "s": (Column("id", "INT"), Column("st", "STRUCT<x: INT, y: STRING>")),
    "m": (Column("MixedCase", "BIGINT"),),
}


def columns(sql: str, dialect: str = "spark"):
    resolved = resolve(the_query(parse_sql(sql, dialect)), INPUTS, dialect, "t.sql")
    return None if resolved is None else [(c.name, c.type) for c in resolved.columns]


@pytest.mark.parametrize("sql, expected", [
    ("SELECT k, g, v * 2 AS v2 FROM a WHERE v > 1", [("k", "INT"), ("g", "STRING"), ("v2", "DECIMAL(12, 2)")]),
    ("SELECT g, SUM(v) AS s, COUNT(*) AS n, AVG(v) AS av FROM a GROUP BY g",
     [("g", "STRING"), ("s", "DECIMAL(12, 2)"), ("n", "BIGINT"), ("av", "DOUBLE")]),
    ("SELECT k, RANK() OVER (PARTITION BY g ORDER BY v) AS r FROM a", [("k", "INT"), ("r", "INT")]),
    ("SELECT a.k, b.w FROM a LEFT JOIN b ON a.k = b.k", [("k", "INT"), ("w", "STRING")]),
    ("SELECT * FROM b", [("k", "INT"), ("w", "STRING")]),
    ("SELECT * FROM m", [("MixedCase", "BIGINT")]),                 # a star keeps the input's spelling
    ("SELECT mixedcase FROM m", [("mixedcase", "BIGINT")]),         # Spark names it as written
    ("SELECT k + 1 AS k1, k1 * 2 AS k2 FROM a", [("k1", "INT"), ("k2", "INT")]),
    ("SELECT id, st.x FROM s", [("id", "INT"), ("x", "INT")]),      # a struct field, not a table
    ("SELECT k, x FROM a LATERAL VIEW explode(arr) e AS x", [("k", "INT"), ("x", None)]),
    ("WITH x AS (SELECT k, v FROM a) SELECT x1.k, x2.v FROM x AS x1 JOIN x AS x2 ON x1.k = x2.k",
     [("k", "INT"), ("v", "DECIMAL(12, 2)")]),
])
def test_output_columns_and_types(sql, expected):
    assert columns(sql) == expected


def test_snowflake_names_are_as_written_not_upper_cased():
    assert columns("SELECT k AS key_col, IFF(v > 1, 'big', 'small') AS size FROM a", "snowflake") == \
        [("key_col", "INT"), ("size", "STRING")]


@pytest.mark.parametrize("sql, line, message", [
    ("SELECT k,\n  nope FROM a", 2, "unknown column 'nope'"),
    ("SELECT k FROM a JOIN b ON a.k = b.k", 1, "column 'k' is ambiguous: a, b both have it"),
    ("SELECT a.k,\n zz.w FROM a JOIN b ON a.k = b.k", 2, "unknown table or alias 'zz' in zz.w"),
    ("SELECT a.k, b.wx FROM a JOIN b ON a.k = b.k", 1, "unknown column 'wx' of 'b'"),
    ("WITH x AS (\nSELECT k, vv FROM a) SELECT * FROM x", 2, "unknown column 'vv'"),
])
def test_what_the_query_gets_wrong_is_reported_at_its_line(sql, line, message):
    with pytest.raises(ValidationError, match=message) as err:
        columns(sql)
    assert (err.value.file, err.value.line) == ("t.sql", line)


def test_suggestion_comes_from_the_inputs_columns():
    with pytest.raises(ValidationError) as err:
        columns("SELECT gg FROM a")
    assert err.value.hint == "did you mean g?"


@pytest.mark.parametrize("sql", [
    "SELECT k, transform(arr, e -> e + k) AS t FROM a",      # lambdas bind their own names
    "SELECT id FROM range(10)",                              # table functions
    "SELECT x FROM VALUES (1), (2) AS t(x)",
])
def test_constructs_sqlglot_may_not_bind_are_never_reported(sql):
    columns(sql)    # no ValidationError: Spark judges what sqlglot cannot


def test_a_cte_named_like_the_table_it_reads_still_depends_on_that_table():
    from dtcli.sql.parse import parse_sql, table_refs, the_query

    query = the_query(parse_sql("WITH orders AS (SELECT order_id FROM orders WHERE order_id > 1),\n"
                                "     late AS (SELECT * FROM orders)\n"
                                "SELECT * FROM late JOIN orders USING (order_id)", "spark"))
    assert [name for name, _ in table_refs(query)] == ["orders"]   # only the CTE body's own read
    recursive = the_query(parse_sql("WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r "
                                    "WHERE n < 3)\nSELECT * FROM r", "spark"))
    assert table_refs(recursive) == []


def test_pivot_and_a_shadowing_cte_survive_the_checked_project(tmp_path):
    """Through the whole check (names bound to the inputs' logical names, then qualified):
    PIVOT keeps its output columns and refreshes FULL; a CTE named like its source reads it."""
    from dtcli import api
    from tests.helpers import write_project

    root = write_project(tmp_path / "p", {
        "pivoted": "SELECT * FROM orders PIVOT (SUM(amount) FOR status IN ('paid', 'open'))",
        "doubled": "WITH orders AS (SELECT order_id, amount * 2 AS amount FROM orders)\nSELECT * FROM orders",
    }, seeds={"orders": "order_id,status,amount\n1,paid,1.5\n2,open,2.5\n"})
    api.seed(root)
    checked = api.check(root)
    assert [c.name for c in checked.schemas["pivoted"]] == ["order_id", "paid", "open"]
    assert checked.modes["pivoted"].mode == "FULL" and "PIVOT" in checked.modes["pivoted"].reason
    assert list(checked.project.tables["doubled"].inputs) == ["orders"]
    assert checked.modes["doubled"].mode == "ADAPTIVE"
