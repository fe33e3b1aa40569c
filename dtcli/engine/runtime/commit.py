"""Committing a DT's data and its frontier in one atomic Delta commit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypedDict

from sqlglot import exp

from dtcli.engine.runtime import audit, column_mapping
from dtcli.engine.runtime.changes import quote
from dtcli.model import Frontier
from dtcli.state.delta_log import frontier_metadata

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def replace_table(spark, df, path: str, frontier: Frontier, *, partition_by: list[str] | None = None,
                  cluster_by: list[str] | None = None, comment: str | None = None,
                  properties: dict[str, str] | None = None, sort_by: list[str] | None = None,
                  max_rows_per_file: int = 0) -> None:
    """Replace the DT's content and table-level definition (partitioning, liquid clustering,
    comment, table properties) in one commit that also carries the frontier: `CREATE OR
    REPLACE TABLE ... AS`, because a DataFrame write cannot declare clustering or a comment
    for a path table.

    `sort_by`: each write task sorts its rows by these columns (after the partition columns:
    the writer needs those first) and `max_rows_per_file` cuts its output into files, so each
    file holds a narrow range of them (no shuffle: the sort is within the tasks)."""
    view = "__dt_full_result"
    df = audit.rows(spark, None, df, None)      # checked (and screened) before it is written
    if sort_by:
        df = df.sortWithinPartitions(*[quote(c) for c in [*(partition_by or []), *sort_by]])
    df.createOrReplaceTempView(view)
    clauses = []
    if partition_by:
        clauses.append(f"PARTITIONED BY ({', '.join(quote(c) for c in partition_by)})")
    if cluster_by:
        clauses.append(f"CLUSTER BY ({', '.join(quote(c) for c in cluster_by)})")
    if comment:
        clauses.append(f"COMMENT {_string(comment)}")
    try:
        properties = column_mapping.prepare(spark, view, path, clauses, properties or {})
        if properties:
            clauses.append("TBLPROPERTIES (" + ", ".join(f"{_string(k)} = {_string(v)}"
                                                         for k, v in sorted(properties.items())) + ")")
        with user_metadata(spark, frontier), session_conf(spark, MAX_RECORDS_CONF, max_rows_per_file):
            spark.sql(f"CREATE OR REPLACE TABLE delta.{quote(path)} USING delta {' '.join(clauses)} "
                      f"AS SELECT * FROM {view}")
    finally:
        spark.catalog.dropTempView(view)


MAX_RECORDS_CONF = "spark.sql.files.maxRecordsPerFile"


@contextmanager
def session_conf(spark, key: str, value) -> Iterator[None]:
    """`key` set to `value` for one statement (unset: left as it is), then put back."""
    if not value:
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(value))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


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


class LastCommit(TypedDict):
    version: int
    metrics: dict[str, object]     # Delta's operationMetrics (numOutputRows, numTargetRowsInserted...)


def last_commit(path: str) -> LastCommit:
    """Version and operation metrics of the newest commit, read from the log without a Spark job."""
    from dtcli.state.delta_log import open_table

    table = open_table(path)
    info = (table.history(1) or [{}])[0]
    return LastCommit(version=table.version(), metrics=dict(info.get("operationMetrics") or {}))
