"""Small intermediate results computed once (engine/runtime/materialize.py): rows and DataFrame from
one job, the same rows as the query's, whatever their types."""

from __future__ import annotations

import pytest

from tests.helpers import jobs_run

pytestmark = pytest.mark.spark

TYPED = """
SELECT * FROM VALUES
  (1, CAST(1.25 AS DECIMAL(20, 4)), TIMESTAMP'2026-01-02 03:04:05.123456', DATE'2026-01-02',
   'a', ARRAY(1, NULL), NAMED_STRUCT('x', 1, 'y', 'b'), MAP('k', 2), CAST(1.5 AS DOUBLE), true),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, CAST('NaN' AS DOUBLE), NULL),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, CAST('NaN' AS DOUBLE), NULL)
  AS t(k, d, ts, dt, s, arr, st, m, f, b)
"""


def test_a_small_result_is_collected_once_and_read_again_without_a_job(spark):
    from dtcli.engine.runtime.materialize import kept

    query = spark.sql(TYPED).groupBy("k", "d", "ts", "dt", "s", "arr", "st", "f", "b").count()
    expected = sorted(map(repr, query.collect()))
    (df, rows), jobs = jobs_run(spark, "kept-small", lambda: kept(query, 10, small=True))
    assert sorted(map(repr, rows)) == expected
    assert df._jdf.queryExecution().optimizedPlan().getClass().getSimpleName() == "LocalRelation"
    again, more = jobs_run(spark, "kept-again", lambda: df.filter("k = 2").collect())
    assert more == 0 and [r["count"] for r in again] == [2]
    assert sorted(map(repr, df.collect())) == expected
    assert jobs >= 1


def test_every_type_comes_back_as_it_was(spark):
    from dtcli.engine.runtime.materialize import collected

    query = spark.sql(TYPED)
    df, rows = collected(query, 10)
    assert df.schema == query.schema
    assert sorted(map(repr, rows)) == sorted(map(repr, query.collect()))


def test_a_result_over_the_limit_is_checkpointed_without_its_rows(spark):
    from dtcli.engine.runtime.checkpoints import release
    from dtcli.engine.runtime.materialize import kept

    query = spark.range(100).selectExpr("id % 30 AS k").distinct()
    for small in (True, False):
        df, rows = kept(query, 20, small=small)
        try:
            assert rows is None
            assert df._jdf.queryExecution().analyzed().getClass().getSimpleName() == "LogicalRDD"
            assert sorted(r.k for r in df.collect()) == list(range(30))
        finally:
            release(df)
    df, rows = kept(query, 30, small=False)     # checkpointed first, then found small enough
    assert sorted(r.k for r in rows) == list(range(30))
    release(df)
