"""Row counts observed inside a write's own Spark job, read on the driver once the job is done.

A commit that must report how many rows it kept, removed and wrote counts them with Spark
observations on the DataFrames it writes: no Spark job of their own.
"""

from __future__ import annotations

import time

OBSERVED_WAIT = 60.0    # seconds an observation may take to arrive after its write


def observation():
    from pyspark.sql import Observation

    return Observation()


def count():
    """The aggregate an observation of a row count takes."""
    from pyspark.sql import functions as F

    return F.count(F.lit(1)).alias("n")


def counts(*observations) -> tuple[int, ...] | None:
    """The observed counts, once each has arrived (Spark delivers them on its listener bus,
    after the write returned); None when one has not within OBSERVED_WAIT seconds."""
    deadline = time.monotonic() + OBSERVED_WAIT
    for obs in observations:
        future = obs._jo.future()
        while not future.isCompleted():
            if time.monotonic() > deadline:
                return None
            time.sleep(0.005)
    rows = [obs._jo.getRow() for obs in observations]
    # a plan the optimizer found empty (a filter that is always false) observes nothing
    if any(row.length() == 0 for row in rows):
        return None
    return tuple(int(row.getLong(0)) for row in rows)
