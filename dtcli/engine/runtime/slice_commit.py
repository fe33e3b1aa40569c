"""A small table's slice replaced by a commit dt builds itself from the table's list of files.

Delta's `replaceWhere` finds the files its predicate may match in the table's state, which it
rebuilds from the log first (a table read over its list of files, listed.py, has none built),
then scans them for the matching rows, writes their deletion vectors and the deleted rows' change
data, then the new rows: 12 Spark jobs and about 1.3 s for a 1,000-row table on 2 cores, whatever
the size of the slice. A table read over its list of files is known file by file already. So its
every row is written anew in one job: the rows outside the slice as they are, the new rows, and
the change data Delta's own DELETE and MERGE write (the slice's old rows as `delete`, the new
ones as `insert`), and committed with every listed file removed: one job and about 0.7 s, the
same rows and the same change data feed.

Only for a table of at most `spark.dt.wholeWriteBytes` (WHOLE_BYTES), still at the version listed
when the transaction starts (dt holds the DT's lock, so it is unless the table was replaced); any
other is written by `replaceWhere` (apply.replace). A FULL refresh of a listed DT whose definition
stays the same is committed the same way, its rows all replaced (strategies/full.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dtcli.engine.runtime import audit, listed
from dtcli.engine.runtime.changes import quote
from dtcli.engine.runtime.commit import MAX_RECORDS_CONF, session_conf
from dtcli.engine.runtime.observed import count, counts, observation
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS
from dtcli.model import Frontier
from dtcli.state.delta_log import frontier_metadata

# The Spark setting naming the most bytes of files (as the table's log counts them) a table's slice
# replacement writes the table whole at, and its default: a MB writes in less time than the jobs
# a replaceWhere adds; `0` replaces every slice in place. What it costs: the table's old files are
# kept for time travel until VACUUM, a copy of the table per refresh (docs/configuration.md), so
# the default is kept small.
WHOLE_SETTING = "spark.dt.wholeWriteBytes"
WHOLE_BYTES = 1 << 20
CHANGE_TYPE = "_change_type"        # Delta's column naming a change data row's kind
_CDF = "delta.enableChangeDataFeed"


@dataclass(frozen=True)
class Target:
    """A table read over its file list, at the version listed."""

    old: object         # the DataFrame over its files
    version: int
    table_id: str
    files: object       # its AddFiles (a JVM Seq)
    cdf: bool           # whether its change data feed is on
    partition_by: tuple[str, ...] = ()
    comment: str | None = None
    properties: tuple[tuple[str, str], ...] = ()

    def holds(self, rows, *, partition_by, comment, properties) -> bool:
        """Whether `rows` written into the table leave its definition as `CREATE OR REPLACE`
        with these clauses would make it (commit.replace_table): the same columns and types in
        the same order, partitioning, comment, and every property given already set."""
        mine = [(f.name, f.dataType.simpleString()) for f in self.old.schema.fields]
        theirs = [(f.name, f.dataType.simpleString()) for f in rows.schema.fields]
        have = {k: v.lower() for k, v in self.properties}
        return (mine == theirs and list(self.partition_by) == list(partition_by or [])
                and (self.comment or None) == (comment or None)
                and all(have.get(k) == str(v).lower() for k, v in (properties or {}).items()))


def whole_bytes(spark) -> int:
    """The most bytes of files of a table whose slice is replaced by writing it whole."""
    try:
        return int(spark.conf.get(WHOLE_SETTING, str(WHOLE_BYTES)))
    except (ValueError, *SPARK_ERRORS):
        return WHOLE_BYTES


def target(spark, path: str, most: int | None = None) -> Target | None:
    """`path` as a Target when its files are listed and come to at most `most` bytes (None:
    `whole_bytes`), else None."""
    most = whole_bytes(spark) if most is None else most
    if most <= 0:
        return None
    try:
        old = listed.read(spark, path)
    except SPARK_ERRORS:        # not a Delta table (yet)
        return None
    found = listed.files_of(old)
    if found is None:
        return None
    snapshot, files = found
    try:
        version = int(snapshot.version())
        size = listed.table_bytes(snapshot, path, version)
        if size is None or size > most:
            return None
        metadata = snapshot.metadata()
        convert = spark._jvm.scala.jdk.javaapi.CollectionConverters
        properties = dict(convert.asJava(metadata.configuration()))
        return Target(old, version, str(metadata.id()), files,
                      str(properties.get(_CDF, "")).lower() == "true",
                      tuple(convert.asJava(metadata.partitionColumns())), metadata.description(),
                      tuple(sorted((str(k), str(v)) for k, v in properties.items())))
    except (AttributeError, *SPARK_ERRORS):
        return None


def replace(spark, path: str, at: Target, predicate: str, rows, frontier: Frontier, *,
            max_rows_per_file: int = 0) -> tuple[int, int, int] | None:
    """Replace the rows matching `predicate` by `rows` (which all match it: the caller makes a
    row that does not fail the write) in one commit carrying the frontier: (rows written, rows
    removed, the new version); None, with nothing written, when the table is no longer at the
    version listed. `max_rows_per_file`: the most rows a file written holds (0: Spark's setting).

    `predicate` None replaces every row: only `rows` are written, and the files removed and
    added are the change data (as for Delta's own overwrite); the rows removed are then not
    counted (-1)."""
    from pyspark.sql import functions as F

    jvm = spark._jvm
    # the transaction takes the thread's active session for its settings: this refresh's (side
    # by side, each refresh has a session of its own)
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    txn = log.startTransaction()
    now = txn.snapshot()
    if int(now.version()) != at.version or str(now.metadata().id()) != at.table_id:
        return None
    txn.readWholeTable()        # a commit by another writer in between is a conflict
    audit.settle()

    cols = [quote(c) for c in at.old.columns]
    new = observation()
    arriving = rows.select(*cols).observe(new, count())
    if predicate is not None:
        inside = F.coalesce(F.expr(f"({predicate})"), F.lit(False))
        gone = observation()
        old = at.old.observe(gone, F.count(F.when(inside, F.lit(1))).alias("n"))
    if predicate is None:
        written = arriving
    elif at.cdf:
        data = F.lit(None).cast("string")
        written = old.select(*cols, F.when(inside, F.lit("delete")).otherwise(data).alias(CHANGE_TYPE)) \
            .unionByName(arriving.select(*cols, F.explode(F.array(data, F.lit("insert"))).alias(CHANGE_TYPE)))
    else:
        written = old.filter(~inside).select(*cols).unionByName(arriving)

    with session_conf(spark, MAX_RECORDS_CONF, max_rows_per_file):
        actions = jvm.java.util.ArrayList()
        actions.addAll(jvm.scala.jdk.javaapi.CollectionConverters.asJava(txn.writeFiles(written._jdf)))
        stamp = int(time.time() * 1000)
        files = at.files.iterator()
        while files.hasNext():
            actions.add(files.next().removeWithTimestamp(stamp, True))
        none = jvm.scala.Option.empty()
        # the frontier as the commit's userMetadata, named by the operation (not a session
        # setting another refresh's thread could be reading)
        op = jvm.org.apache.spark.sql.delta.DeltaOperations.Write(
            jvm.org.apache.spark.sql.SaveMode.Overwrite, none, jvm.scala.Option.apply(predicate),
            jvm.scala.Option.apply(frontier_metadata(frontier)), *[none] * 5)
        version = int(txn.commit(jvm.scala.jdk.javaapi.CollectionConverters.asScala(actions).toSeq(), op))
    if predicate is None:
        seen = counts(new)
        if seen is None:    # the observation did not arrive: counted again
            seen = (spark.read.format("delta").option("versionAsOf", version).load(path).count(),)
        return seen[0], -1, version
    seen = counts(new, gone)
    if seen is None:        # the observations did not arrive: counted again, from the listed files
        removed = at.old.filter(inside).count()
        total = spark.read.format("delta").option("versionAsOf", version).load(path).count()
        seen = (total - (at.old.count() - removed), removed)
    return seen[0], seen[1], version
