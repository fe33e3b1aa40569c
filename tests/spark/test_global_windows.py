"""Windows without PARTITION BY refresh incrementally: the result is one partition, re-evaluated
from the DT's own rows when the windows read only output columns (rewriting only the rows from
the first changed position in their ORDER BY on, for ranks, lag and running aggregates), else
recomputed whole; nested, at both versions. Differential: each DT equals its recompute."""

from __future__ import annotations

import pytest

from tests.spark.harness import Env, strategies_taken

pytestmark = pytest.mark.spark

TABLES = {
    # own rows, from the first change on: rank, row number and running sum share one ORDER BY
    # (NULLs first)
    "ranked": """
        SELECT k, v, RANK() OVER (ORDER BY v DESC NULLS FIRST, k) AS r,
               ROW_NUMBER() OVER (ORDER BY v DESC NULLS FIRST, k) AS n,
               SUM(v) OVER (ORDER BY v DESC NULLS FIRST, k) AS running
        FROM a WHERE k IS NOT NULL""",
    # own rows, all re-evaluated: ntile and lead depend on rows after, a total on every row, lag
    # on the order among tied rows
    "tiled": """
        SELECT k, g, v, NTILE(2) OVER (ORDER BY v, k, g) AS half, LEAD(g) OVER (ORDER BY v, k, g) AS next_g,
               LAG(k) OVER (ORDER BY v, k, g) AS before_k, SUM(v) OVER () AS total
        FROM a""",
    # the window reads a column that is not an output: recomputed whole
    "share": "SELECT k, g, SUM(v) OVER () AS total FROM a",
    # groups ranked: one partition over the groups
    "group_rank": "SELECT g, SUM(v) AS s, DENSE_RANK() OVER (ORDER BY SUM(v) DESC NULLS LAST) AS r FROM a GROUP BY g",
    # nested: recomputed at both versions, filtered after
    "top_ranked": """
        SELECT x.k, x.r FROM (SELECT k, RANK() OVER (ORDER BY v) AS r FROM a) AS x WHERE x.r <= 3""",
}
A_ROWS = [(1, "x", 10), (2, "x", 20), (3, "y", 5), (4, "y", None), (5, "z", 20), (6, "z", 20),
          (None, "w", 1), (7, None, 3)]
BATCHES = [
    ["INSERT INTO {a} VALUES (9, 'v', 100), (10, 'v', 1), (2, 'x', 20), (11, NULL, NULL)"],
    # a change at the end of the order only: rows before it keep their values
    ["INSERT INTO {a} VALUES (20, 'u', -5)"],
    ["DELETE FROM {a} WHERE k = 9", "UPDATE {a} SET v = 0 WHERE k = 5"],
    ["DELETE FROM {a} WHERE k < 100"],
    ["INSERT INTO {a} VALUES (12, 'x', 7), (13, 'y', 7), (14, 'y', NULL)"],
]


def test_windows_without_partition_by_equal_their_recompute(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT", A_ROWS)
    env.write(TABLES)
    runs = env.run_batches(BATCHES, check_created=False, no_data=False)
    strategies = strategies_taken(runs)
    assert strategies["ranked"] == {"own_rows_window"} == strategies["tiled"], strategies
    assert strategies["share"] == {"keys_recomputed"} == strategies["group_rank"], strategies
    # the row added last in the order (the second batch) rewrote itself alone, not the table
    assert runs[2]["ranked"].num_inserted_rows == 1, runs[2]["ranked"]
