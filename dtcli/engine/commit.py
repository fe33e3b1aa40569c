"""Committing a DT's data and its frontier in one atomic Delta commit."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from dtcli.state.delta_log import frontier_metadata

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def overwrite(df, path: str, frontier: dict[str, Any], partition_by: list[str] | None = None) -> None:
    """Replace the DT's content; the frontier rides in the same commit's userMetadata."""
    writer = (df.write.format("delta").mode("overwrite")
              .option("overwriteSchema", "true")
              .option("userMetadata", frontier_metadata(frontier)))
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(path)


@contextmanager
def user_metadata(spark, frontier: dict[str, Any]) -> Iterator[None]:
    """MERGE/UPDATE/DELETE only read the session setting; set it for one commit, then clear it."""
    spark.conf.set(USER_METADATA_CONF, frontier_metadata(frontier))
    try:
        yield
    finally:
        spark.conf.unset(USER_METADATA_CONF)


def last_commit(path: str) -> dict[str, Any]:
    """Version and operation metrics of the newest commit, read from the log without a Spark job."""
    from dtcli.state.delta_log import open_table

    table = open_table(path)
    info = (table.history(1) or [{}])[0]
    return {"version": table.version(), "metrics": dict(info.get("operationMetrics") or {})}
