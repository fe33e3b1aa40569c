"""The floor of one incremental refresh: the least any engine pays for the same change.

Per DT and change, in the same session as the refresh it is compared with: reading the changed
inputs' change data (every row and column of their change data feed between the two versions),
plus one Delta commit to the DT that removes exactly the rows the refresh removed and writes
exactly the rows it wrote, with those rows known in advance (the refresh's own commit, read
back from the DT's change data feed) and the removed rows named by a predicate on the DT's key
that Delta can skip files by. What an incremental refresh adds on top is its own work: finding
the affected rows and computing them.
"""

from __future__ import annotations

import time
from typing import Any


def committed_rows(spark, dt_path: str, version: int):
    """(removed, written) rows of the DT's commit at `version`, cached."""
    from pyspark.sql import functions as F

    feed = (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", version).option("endingVersion", version).load(dt_path))
    data = [c for c in feed.columns if not c.startswith("_")]
    kind = F.col("_change_type")
    removed = feed.where(kind.isin("delete", "update_preimage")).select(*data).localCheckpoint(eager=True)
    written = feed.where(kind.isin("insert", "update_postimage")).select(*data).localCheckpoint(eager=True)
    return removed, written


def measure(spark, dt_path: str, inputs: dict[str, tuple[str, int, int]], removed, written,
            key: str) -> dict[str, Any]:
    """Time the floor on the DT as it was before the refresh (the caller restored it);
    `inputs`: changed input name -> (path, version before, version after)."""
    from dtcli.engine.runtime.key_predicates import match_keys

    started = time.perf_counter()
    for path, v0, v1 in inputs.values():
        (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", v0 + 1)
         .option("endingVersion", v1).load(path).write.format("noop").mode("overwrite").save())
    read = time.perf_counter() - started
    keys = removed.select(key).unionByName(written.select(key)).distinct().collect()
    data_type = written.schema[key].dataType
    predicate = match_keys([key], [data_type], [tuple(r) for r in keys]) or "false"
    started = time.perf_counter()
    (written.write.format("delta").mode("overwrite").option("replaceWhere", predicate).save(dt_path))
    commit = time.perf_counter() - started
    from delta.tables import DeltaTable

    metrics = dict(DeltaTable.forPath(spark, dt_path).history(1).select("operationMetrics").first()[0] or {})
    return {"seconds": read + commit, "read_seconds": read, "commit_seconds": commit,
            "removed": int(metrics.get("numDeletedRows", 0) or 0), "expected_removed": removed.count(),
            "written": written.count()}
