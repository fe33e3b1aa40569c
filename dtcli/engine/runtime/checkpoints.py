"""Releasing a DataFrame made by `localCheckpoint`.

`DataFrame.unpersist()` does nothing for a local checkpoint: its rows are blocks of an RDD the
cache manager does not know, freed only once the JVM garbage-collects that RDD. In a warm
application (`dt run --watch`) that can be many refreshes later, so every refresh releases its
checkpoints itself once the commit no longer reads them.
"""

from __future__ import annotations

from dtcli.engine.runtime.spark_errors import SPARK_ERRORS


def release(df) -> None:
    """Free `df`'s checkpointed blocks now (a DataFrame that is not a checkpoint is unpersisted)."""
    try:
        plan = df._jdf.queryExecution().analyzed()
        if plan.getClass().getSimpleName() == "LogicalRDD":
            plan.rdd().unpersist(True)     # blocking: the blocks are gone when it returns
            return
    except SPARK_ERRORS:
        pass
    df.unpersist()
