"""What the incremental engine reads off a DT's query without Spark (engine/runtime/query_shape.py)."""

import pytest

from dtcli.engine.runtime.query_shape import holds_one_row


@pytest.mark.parametrize("sql, one_row", [
    ("SELECT SUM(a) AS s FROM t", True),
    ("SELECT COUNT(*) AS n FROM t HAVING COUNT(*) > 1", True),          # one row or none
    ("WITH x AS (SELECT a FROM t) SELECT MAX(a) AS m FROM x", True),
    ("SELECT 100.0 * SUM(CASE WHEN p LIKE 'P%' THEN x ELSE 0 END) / SUM(x) AS r "
     "FROM l, p WHERE l.k = p.k", True),                               # TPC-H Q14's shape
    ("SELECT g, SUM(a) AS s FROM t GROUP BY g", False),
    ("SELECT a FROM t", False),
    ("SELECT SUM(a) OVER () AS s FROM t", False),                      # a window: one row per input row
    ("SELECT a, RANK() OVER (ORDER BY a) AS r FROM t", False),         # one partition, many rows
    ("SELECT SUM(a) AS s FROM t LIMIT 1", False),
    ("SELECT SUM(a) AS s FROM t UNION ALL SELECT SUM(b) FROM u", False),
    ("not sql at all", False),
])
def test_one_row_is_a_scalar_aggregate(sql, one_row):
    assert holds_one_row(sql) is one_row
