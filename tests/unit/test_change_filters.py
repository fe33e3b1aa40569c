"""Which change rows can move a query's result (sql/incremental_rewrite/change_filters.py): the
conditions found per input, and the places where a condition must NOT be taken as a filter
(a wrong filter drops a change row that mattered: a wrong answer, not a slow one)."""

from __future__ import annotations

import doctest

import pytest

from dtcli.sql.incremental_rewrite import change_filters as module
from dtcli.sql.incremental_rewrite.change_filters import change_filters


def test_the_doctests():
    assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize("sql, expected", [
    # inner join: WHERE and every inner ON condition on one table alone
    ("SELECT a.k FROM a AS a JOIN b AS b ON a.k = b.k AND b.v > 1 AND a.w = 2 WHERE a.v < 3",
     {"a": "v < 3 AND w = 2", "b": "v > 1"}),
    # conditions across tables, or with an unqualified column, are not a table's own
    ("SELECT a.k FROM a AS a, b AS b WHERE a.k = b.k AND a.v + b.v > 0 AND v = 1", {}),
    # RIGHT JOIN: the left side is NULL-extended, the right's WHERE condition filters
    ("SELECT a.k FROM a AS a RIGHT JOIN b AS b ON a.k = b.k AND a.v = 1 WHERE b.v = 2 AND a.w = 3",
     {"b": "v = 2"}),
    # FULL JOIN: neither side's conditions filter
    ("SELECT a.k FROM a AS a FULL JOIN b AS b ON a.k = b.k AND a.v = 1 AND b.v = 1 WHERE a.w = 1", {}),
    # a later RIGHT JOIN NULL-extends the earlier items: their WHERE conditions do not filter
    ("SELECT a.k FROM a AS a JOIN b AS b ON a.k = b.k RIGHT JOIN c AS c ON c.k = a.k "
     "WHERE a.v = 1 AND c.v = 2", {"c": "v = 2"}),
    # the left side of a LEFT JOIN: its conditions in ON do not filter (its rows stay, unmatched)
    ("SELECT a.k FROM a AS a LEFT JOIN b AS b ON a.k = b.k AND a.v = 1", {}),
    # ANTI JOIN: the right side's own ON condition filters it, the left's does not
    ("SELECT a.k FROM a AS a LEFT ANTI JOIN b AS b ON a.k = b.k AND b.v = 1 AND a.v = 2", {"b": "v = 1"}),
    # NATURAL and USING joins: not placed, no filter
    ("SELECT k FROM a AS a NATURAL JOIN b AS b WHERE a.v = 1", {}),
    ("SELECT k FROM a AS a LEFT JOIN b AS b USING (k) WHERE a.v = 1 AND b.v = 1", {}),
    # a subquery, an aggregate, a clock or a random number in the condition: not the row's own
    ("SELECT a.k FROM a AS a WHERE a.v IN (SELECT c.v FROM c AS c)", {}),
    ("SELECT a.k FROM a AS a WHERE a.d > current_date() AND a.r < rand()", {}),
    ("SELECT a.k FROM a AS a WHERE my_udf(a.v) = 1", {}),
    # a LATERAL view in the block: its references are not placed
    ("SELECT a.k FROM a AS a LATERAL VIEW explode(a.arr) t AS x WHERE a.v = 1", {}),
    # a correlated condition in a subquery reads the outer table: it filters neither
    ("SELECT a.k FROM a AS a WHERE EXISTS (SELECT 1 FROM b AS b WHERE b.k = a.k AND a.v = 1)", {}),
    # the same table twice with the same condition: written once
    ("SELECT x.k FROM a AS x JOIN a AS y ON x.k = y.k WHERE x.v = 1 AND y.v = 1", {"a": "v = 1"}),
    # through a CTE used twice: each use is a reference
    ("WITH f AS (SELECT a.k FROM a AS a WHERE a.v = 1) SELECT f1.k FROM f AS f1 JOIN f AS f2 ON f1.k = f2.k",
     {"a": "v = 1"}),
    # an OR: each branch must require something of the table alone
    ("SELECT a.k FROM a AS a, b AS b WHERE (a.v = 1 AND b.w = 2) OR (a.v = 3 AND a.k = b.k)",
     {"a": "(v = 1) OR (v = 3)"}),
    ("SELECT a.k FROM a AS a, b AS b WHERE (a.v = 1 AND b.w = 2) OR (a.k = b.k)", {}),
    # an OR on the NULL-extended side's WHERE: still no filter of that side
    ("SELECT a.k FROM a AS a LEFT JOIN b AS b ON a.k = b.k WHERE b.w = 1 OR b.w IS NULL", {}),
    # a UNION ALL branch without the condition: no filter
    ("SELECT a.k FROM a AS a WHERE a.v = 1 UNION ALL SELECT a.k FROM a AS a", {}),
])
def test_conditions_found(sql, expected):
    assert change_filters(sql) == expected


def test_a_query_that_cannot_be_parsed_has_no_filters():
    assert change_filters("SELECT FROM WHERE") == {}
