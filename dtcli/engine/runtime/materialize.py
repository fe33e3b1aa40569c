"""Computing an intermediate result of a refresh once, in as few Spark jobs as it allows.

A refresh computes small results it reads several times (an input's consolidated change, the
net change of the DT, the affected groups): their rows are needed on the driver (to name keys
as literals, to count) and as a DataFrame for the later queries. A checkpoint followed by a
collect costs a job for each; collecting first and making the DataFrame from the collected rows
(a local relation, which Spark plans without a job and knows the exact size of) costs one. A
result larger than the caller's limit is checkpointed instead (computed once more), and its rows
stay on the executors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dtcli.engine.runtime.spark_errors import SPARK_ERRORS

# The change budget: a result the planner expects within it (an input's consolidated change, the
# net change, the affected keys) is collected on the driver, so the values it names are pushed
# into scans and the commit's counts and locator are read without Spark jobs.
LOCAL_ROWS = 50_000


def kept(df, limit: int, small: bool) -> tuple[object, list | None]:
    """(DataFrame, rows or None) as `collected` gives them when `df` is expected to be `small`;
    else `df` checkpointed first (computed once even when large), its rows collected after
    when there are at most `limit`."""
    if small:
        return collected(df, limit)
    df = checkpointed(df)
    rows = df.limit(limit + 1).collect()
    return df, (rows if len(rows) <= limit else None)


def collected(df, limit: int) -> tuple[object, list | None]:
    """(DataFrame, rows): with at most `limit` rows, the rows collected by one job and the
    DataFrame made from them; with more, `df` checkpointed and None."""
    found = _collect(df, limit)
    if found is None:
        return checkpointed(df), None
    try:
        local = _local(df, found)
    except SPARK_ERRORS:    # a type a local relation cannot hold: checkpointed as before
        df = checkpointed(df)
        return df, df.collect()
    return local, local.collect()      # a local relation's rows are read without a job


def local_rows(df, limit: int) -> list | None:
    """`df`'s rows, collected by one job, when there are at most `limit`; else None (nothing
    kept). For columns of types a local relation holds (engine/runtime/change_cache.py)."""
    found = _collect(df, limit)
    return None if found is None else _local(df, found).collect()


def _collect(df, limit: int):
    """At most `limit` rows of `df` as a Java list, in one job; None when there are more."""
    with static_plan(df.sparkSession):
        found = df._jdf.limit(limit + 1).collectAsList()
    return None if found.size() > limit else found


def _local(df, found):
    from pyspark.sql import DataFrame

    spark = df.sparkSession
    return DataFrame(spark._jsparkSession.createDataFrame(found, df._jdf.schema()), spark)


# A small collect in one Spark job: without adaptive execution (which runs each shuffle of a
# query as a job of its own, to re-plan after it) and with the limit's first try reading every
# partition (a LIMIT reads one partition first, then more in further jobs until it has enough
# rows: measured with refresh_profile.py, adaptive execution off alone made a collect 3 jobs
# instead of 2). The planner expects the result to be small, so reading it whole costs little.
ONE_JOB_CONF = {"spark.sql.adaptive.enabled": "false",
                "spark.sql.limit.initialNumPartitions": str(1 << 30)}


@contextmanager
def static_plan(spark) -> Iterator[None]:
    """ONE_JOB_CONF for one small query; the session's own settings are put back after."""
    before = {key: spark.conf.get(key, None) for key in ONE_JOB_CONF}
    for key, value in ONE_JOB_CONF.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def checkpointed(df):
    """`df` computed now and kept on the executors (release it with checkpoints.release)."""
    return df.localCheckpoint(eager=True)


def local_frame(spark, fields: list, rows: list[tuple]):
    """`rows` as a DataFrame of `spark` with columns `fields`: a local relation made through
    Arrow (rows given to createDataFrame as a list would make an RDD, run by a job)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    schema = StructType(fields)
    arrow = to_arrow_schema(schema)
    columns = [pa.array([row[k] for row in rows], type=field.type) for k, field in enumerate(arrow)]
    return spark.createDataFrame(pa.Table.from_arrays(columns, schema=arrow), schema)
