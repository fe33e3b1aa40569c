"""A small Delta table at a pinned version read over the list of its files, made once per run.

Every query over a Delta read plans its scan with Spark jobs of Delta's own: *Filtering files for
query*, and for a table with deletion vectors enabled a second one (Delta's deletion-vector
planning asks for the table's files again, with filters that never match the ones the scan was
prepared with). An incremental refresh of a join runs several queries over each input, so a
10-row table cost a refresh of a four-way join tens of those jobs (tests/spark/test_pushdown.py:
695 of its 1,887 jobs). Delta's own commands read a table over a fixed list of files (a batch
file index), which plans with no job: dt lists a small table's files once (one job) when the run
first reads it, and every query of the run over it plans none.

What it gives up is skipping files by their statistics, which a table this small is never worth
(engine/runtime/narrowing.py reads such a table whole); partitions are still pruned and Parquet
still skips row groups. Built through Delta's JVM classes (no Python API reaches them); where
that fails (another Delta, a Spark Connect session), the read is returned as it was.
"""

from __future__ import annotations

from dtcli.engine.runtime.narrowing import SMALL_INPUT_BYTES
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS

# The most bytes of files (at the version read) a table is listed at: the size narrowing reads
# whole, so that no scan it would narrow loses its file skipping.
LISTED_BYTES = SMALL_INPUT_BYTES


def listed(df):
    """`df` (a read of a Delta table at a pinned version) as a DataFrame over its files at that
    version, or `df` itself where the JVM classes are not there."""
    from pyspark.sql.classic.dataframe import DataFrame

    try:
        relation = df._jdf.queryExecution().analyzed()
        location = relation.relation().location()
        if "TahoeLogFileIndex" not in location.getClass().getName():
            return df
        snapshot = location.getSnapshot()
        session = df.sparkSession
        jvm = session._jvm
        files = jvm.scala.jdk.javaapi.CollectionConverters.asScala(snapshot.allFiles().collectAsList()).toSeq()
        made = location.deltaLog().createDataFrame(snapshot, files, False, jvm.scala.Option.empty())
        # made in the session the table's log was first opened in: its plan, as `df`'s session's
        jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(session._jsparkSession, made.logicalPlan())
    except (AttributeError, ImportError, *SPARK_ERRORS):
        return df
    listed_df = DataFrame(jdf, session)
    return listed_df if listed_df.columns == df.columns else df
