"""A small Delta table at a pinned version read over the list of its files, made once per run.

Every query over a Delta read plans its scan with Spark jobs of Delta's own: *Filtering files for
query*, and for a table with deletion vectors enabled a second one (Delta's deletion-vector
planning asks for the table's files again, with filters that never match the ones the scan was
prepared with). An incremental refresh of a join runs several queries over each input, so a
10-row table cost a refresh of a four-way join tens of those jobs (tests/spark/test_pushdown.py:
695 of its 1,887 jobs). Delta's own commands read a table over a fixed list of files (a batch
file index), which plans with no job: dt lists a small table's files once when the run first
reads it (from the version's checksum file where Delta wrote them there, else from its log read in
Python where the files' paths are all a reader needs, else with Delta's jobs), and every query of
the run over it plans none.

What it gives up is skipping files by their statistics, which a table this small is never worth
(engine/runtime/narrowing.py reads such a table whole); partitions are still pruned and Parquet
still skips row groups. Built through Delta's JVM classes (no Python API reaches them); where
that fails (another Delta, a Spark Connect session), the read is returned as it was.

The tables a refresh writes (the DT, its internal state) are read the same way (`read`): a
refresh queries the version it is about to replace several times (its own rows, the slice it
rewrites, the audit's checks), each query planning its own file filtering, twice with deletion
vectors. In the differential test of aggregates over running totals, 355 of 1,486 jobs were
those. Their list is made once per table and version and kept until the run ends (`forget`).
Reading the version being replaced over a fixed list is safe because dt is the only writer of
these tables (a refresh holds the DT's lock), so that version is the one the write replaces.
"""

from __future__ import annotations

from dtcli.engine.runtime.narrowing import SMALL_INPUT_BYTES
from dtcli.engine.runtime.read_store import ReadStore
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS

# The most bytes of files (at the version read) a table is listed at: the size narrowing reads
# whole, so that no scan it would narrow loses its file skipping.
LISTED_BYTES = SMALL_INPUT_BYTES
# A table of at most this many files is listed whatever their size: among so few, Delta's file
# skipping has little to skip (Parquet still skips the row groups a filter excludes, inside each
# file), while each query over a table read as Delta reads it plans its scan with a job of its
# own. TPC-H's lineitem at SF0.1 is one 18 MB file (two after a batch): listing it took Q21's
# incremental refresh from 108 Spark jobs to 79 (refresh_profile.py at SF0.1).
LISTED_FILES = 8


def listed(df):
    """`df` (a read of a Delta table at a pinned version) as a DataFrame over its files at that
    version, or `df` itself where the JVM classes are not there."""
    from pyspark.sql.classic.dataframe import DataFrame

    try:
        location = _location(df)
        if "TahoeLogFileIndex" not in location.getClass().getName():
            return df
        snapshot = location.getSnapshot()
        session = df.sparkSession
        jvm = session._jvm
        files = _checksum_files(snapshot)
        if files is None:
            files = _log_files(jvm, snapshot)
        if files is None:
            files = jvm.scala.jdk.javaapi.CollectionConverters.asScala(snapshot.allFiles().collectAsList()).toSeq()
        made = location.deltaLog().createDataFrame(snapshot, files, False, jvm.scala.Option.empty())
        # made in the session the table's log was first opened in: its plan, as `df`'s session's
        jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(session._jsparkSession, made.logicalPlan())
    except (AttributeError, ImportError, *SPARK_ERRORS):
        return df
    listed_df = DataFrame(jdf, session)
    return listed_df if listed_df.columns == df.columns else df


def files_of(df):
    """(snapshot, files) of a read made by `listed`: the version it reads and its AddFiles (JVM
    objects), or None for any other read."""
    try:
        location = _location(df)
        if "TahoeBatchFileIndex" not in location.getClass().getName():
            return None
        return location.snapshot(), location.addFiles()
    except (AttributeError, ImportError, *SPARK_ERRORS):
        return None


def _checksum_files(snapshot):
    """The version's files as its checksum file lists them (Delta writes them there for a table
    of a few files), or None: read without a Spark job."""
    checksum = snapshot.checksumOpt()
    if not checksum.isDefined():
        return None
    crc = checksum.get()
    files = crc.allFiles()
    if not files.isDefined() or files.get().size() != crc.numFiles():
        return None
    return files.get()


def _log_files(jvm, snapshot):
    """The version's files from its log read in Python (deltalake), for a table whose writer
    left no checksum file to list them from (`deltalake` writes none): Delta would list them with
    two Spark jobs rebuilding the version's state. Only where a path and a size are all a reader
    needs of a file: a table that reads without deletion vectors or column mapping (reader
    version 1), not partitioned, the same table (its id) as the snapshot's, and plain paths; else
    None. The files carry no statistics: a listed read skips none by them (see above)."""
    from dtcli.state.delta_log import data_files

    try:
        path, version = _local(str(snapshot.deltaLog().dataPath().toString())), int(snapshot.version())
        table_id = str(snapshot.metadata().id())
    except (AttributeError, *SPARK_ERRORS):
        return None
    found = data_files(path, version)
    if found is None or found.table_id != table_id or not found.paths_suffice:
        return None
    try:
        none, no_map = jvm.scala.Option.empty(), jvm.scala.Predef.Map().empty()
        make = jvm.org.apache.spark.sql.delta.actions.AddFile
        files = jvm.java.util.ArrayList()
        for name, size, modified in found.files:
            # path, partition values, size, modification time, data change, stats, tags,
            # deletion vector, base row id, default row commit version, clustering provider,
            # and two more options of Delta 4.4's AddFile
            files.add(make(name, no_map, size, modified, False, None, None, None, *[none] * 5))
        return jvm.scala.jdk.javaapi.CollectionConverters.asScala(files).toSeq()
    except (AttributeError, *SPARK_ERRORS):
        return None


def _local(path: str) -> str:
    """A Hadoop `file:` path as a local one; any other as it is."""
    return path[len("file:"):] if path.startswith("file:/") and not path.startswith("file://") else path


def table_bytes(snapshot, path: str, version: int) -> int | None:
    """The bytes of the files of `path` at `version` (`snapshot`: that version's, or None), see
    `table_size`."""
    size = table_size(snapshot, path, version)
    return size[0] if size is not None else None


def table_size(snapshot, path: str, version: int) -> tuple[int, int] | None:
    """(bytes, number) of the files of `path` at `version` (`snapshot`: that version's, or None):
    from the version's checksum file where there is one (no log to read), else as the log counts
    them; None where the log cannot be read here."""
    try:
        checksum = snapshot.checksumOpt() if snapshot is not None else None
        if checksum is not None and checksum.isDefined():
            return int(checksum.get().tableSizeBytes()), int(checksum.get().numFiles())
    except (AttributeError, *SPARK_ERRORS):
        pass
    stats = _file_stats(path, version)
    return (stats.bytes, len(stats.sizes)) if stats is not None else None


def worth_listing(size: tuple[int, int] | None) -> bool:
    """Whether a table of `size` (table_size's) is read over its file list: small, or few files."""
    return size is not None and (size[0] <= LISTED_BYTES or size[1] <= LISTED_FILES)


def snapshot_of(df):
    """The Delta snapshot a read of one Delta table scans (read as Delta reads it, or over its
    list of files), or None for any other plan."""
    try:
        location = _location(df)
        if "TahoeBatchFileIndex" in location.getClass().getName():
            return location.snapshot()
        return location.getSnapshot()
    except (AttributeError, ImportError, *SPARK_ERRORS):
        return None


def _location(df):
    """The file index of the relation `df` reads (AttributeError where it reads no one relation)."""
    return df._jdf.queryExecution().analyzed().relation().location()


# The reads kept (over a list, or as Delta reads a larger table), by (path, table id, version): a
# table dropped and created again at the same path starts again at version 0 with other rows. A
# few per refresh running side by side.
_kept = ReadStore(16)


def read(spark, path: str, version: int | None = None):
    """`path` at `version` (None: its newest) as a DataFrame of `spark`: over its file list,
    made once per version, when its files fit LISTED_BYTES or are at most LISTED_FILES; else as
    Delta reads it."""
    df = spark.read.format("delta")
    df = (df.option("versionAsOf", int(version)) if version is not None else df).load(path)
    snapshot = snapshot_of(df)
    try:
        key = (path, str(snapshot.metadata().id()), int(snapshot.version()))
    except (AttributeError, *SPARK_ERRORS):      # not a Delta read (snapshot None)
        return df
    made = _kept.get(key)
    if made is None:
        if version is None:         # the version found, fixed: the list and the read agree
            df = spark.read.format("delta").option("versionAsOf", key[2]).load(path)
        made = _kept.keep(key, listed(df) if worth_listing(table_size(snapshot, path, key[2])) else df)
    return in_session(made, spark) or df


def forget() -> None:
    """Let the lists (and the snapshots they hold) go: at the end of a run."""
    _kept.clear()


def in_session(df, spark):
    """`df`'s plan as a DataFrame of `spark` (a session of the same application): the analysed
    relation, and the snapshot it holds, are shared; a temporary view made from it is `spark`'s.
    None where the JVM cannot be reached (a Spark Connect session)."""
    if df.sparkSession is spark:
        return df
    try:
        from pyspark.sql.classic.dataframe import DataFrame

        jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, df._jdf.logicalPlan())
        return DataFrame(jdf, spark)
    except (AttributeError, ImportError, *SPARK_ERRORS):
        return None


def file_bytes(path: str, version: int) -> int | None:
    """The bytes of `path`'s files at `version` as its log counts them; None where the log
    cannot be read here (the table is then read as Delta reads it, never listed or cached)."""
    stats = _file_stats(path, version)
    return stats.bytes if stats is not None else None


def _file_stats(path: str, version: int):
    from dtcli.state.delta_log import file_stats

    try:
        return file_stats(path, version)
    except Exception:       # broad: any reason not to list is a reason to read the table as is
        return None
