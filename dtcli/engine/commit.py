"""Committing a DT's data and its frontier in one atomic Delta commit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlglot import exp

from dtcli.engine.changes import quote
from dtcli.model import Frontier
from dtcli.state.delta_log import frontier_metadata

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def replace_table(spark, df, path: str, frontier: Frontier, *, partition_by: list[str] | None = None,
                  cluster_by: list[str] | None = None, comment: str | None = None,
                  properties: dict[str, str] | None = None) -> None:
    """Replace the DT's content and table-level definition (partitioning, liquid clustering,
    comment, table properties) in one commit that also carries the frontier: `CREATE OR
    REPLACE TABLE ... AS`, because a DataFrame write cannot declare clustering or a comment
    for a path table."""
    view = "__dt_full_result"
    df.createOrReplaceTempView(view)
    clauses = []
    if partition_by:
        clauses.append(f"PARTITIONED BY ({', '.join(quote(c) for c in partition_by)})")
    if cluster_by:
        clauses.append(f"CLUSTER BY ({', '.join(quote(c) for c in cluster_by)})")
    if comment:
        clauses.append(f"COMMENT {_string(comment)}")
    if properties:
        clauses.append("TBLPROPERTIES (" + ", ".join(f"{_string(k)} = {_string(v)}"
                                                     for k, v in sorted(properties.items())) + ")")
    try:
        with user_metadata(spark, frontier):
            spark.sql(f"CREATE OR REPLACE TABLE delta.{quote(path)} USING delta {' '.join(clauses)} "
                      f"AS SELECT * FROM {view}")
    finally:
        spark.catalog.dropTempView(view)


def set_comment(spark, path: str, comment: str | None) -> None:
    """A metadata-only commit that brings the table comment in line with the config."""
    spark.sql(f"COMMENT ON TABLE delta.{quote(path)} IS {_string(comment) if comment else 'NULL'}")


def _string(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="spark")


@contextmanager
def user_metadata(spark, frontier: Frontier) -> Iterator[None]:
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
