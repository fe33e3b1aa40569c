"""Loading the Delta state of the tables a refresh will scan, on a side thread, while it reads
its changes.

Delta builds a table's state (its files, with each file's statistics) the first time a query
plans a scan of it: a few small Spark jobs, about half a second per table on 2 cores, paid again
by every `dt run` (each is a new application). An incremental refresh first reads its inputs'
change data feed, which needs no state, and only then scans the DT (and, for a join, the other
inputs at their current version). Started when the refresh starts, the state is built while
the changes are read, and the refresh's own scans find it cached. Only reads: a table that
cannot be read here is left to the refresh, which reports its own error.
"""

from __future__ import annotations

from dtcli.engine.runtime import listed
from dtcli.engine.runtime.pinned import read_at
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS

Table = tuple[str, "int | None"]    # (path, version to read; None: the newest)


class Prefetch:
    """Builds each table's state in turn on one side thread (one is enough: more would take the
    cores the refresh's own jobs need). The thread inherits the refresh's job group, so its
    jobs are counted and cancelled with the refresh's."""

    def __init__(self, spark, tables: list[Table], pinned=None):
        from pyspark import InheritableThread

        self._thread = None
        if tables:
            self._thread = InheritableThread(target=self._load_all, args=(spark, tables, pinned),
                                             name="dt-table-state", daemon=True)
            self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    @staticmethod
    def _load_all(spark, tables: list[Table], pinned) -> None:
        for path, version in tables:
            # a pinned version another refresh of the run loaded already: its state is built, and
            # planning a scan again would only run Delta's file filtering once more (one or two
            # jobs per table and refresh: the 22 TPC-H DTs read lineitem in 17 refreshes a run)
            if version is not None and pinned is not None and not pinned.first_load(path, version):
                continue
            try:
                load(spark, path, version, pinned)
            except SPARK_ERRORS:
                pass        # the refresh reads the table itself and reports what fails


def warm_after_pass(spark, paths: list[str]) -> Prefetch:
    """In the warm application (`dt run --watch`), once a pass is over: the state of the DTs it
    committed, built while the application waits for the next pass. Delta keeps a table's state
    in the JVM until its log moves; a DT's log moves only when dt commits to it, so its next
    refresh (the next pass) finds the state ready instead of rebuilding it first (three jobs,
    see refresh_profile.py). Sources move between passes: theirs are built when a pass reads them.
    The thread is not waited for: a refresh that needs a table being loaded waits for Delta's
    lock on that snapshot, the others go on."""
    return Prefetch(spark, [(path, None) for path in dict.fromkeys(paths)])


def load(spark, path: str, version: int | None = None, pinned=None) -> None:
    """Plan a scan of the table with a filter Delta skips files by: planning builds the state
    and parses the files' statistics, as the refresh's own filtered scans need them, and runs
    nothing else. A pinned version is read through the run's shared reads (`pinned`,
    engine/runtime/pinned.py) when given: a snapshot read on its own would be built for
    nobody else, since each read of an older version makes a snapshot of its own. A small table
    read over its file list (engine/runtime/listed.py) plans no job: loading it makes the list."""
    df = read_at(pinned, spark, path, version, counted=False) if version is not None \
        else listed.read(spark, path)
    predicate = _skipping_predicate(df.schema)
    (df.filter(predicate) if predicate is not None else df)._jdf.queryExecution().executedPlan()


def _skipping_predicate(schema):
    """A comparison on the first numeric or string column, which file statistics can answer.
    (`x IS NULL` would not do: Spark drops it unplanned for a column that cannot be NULL.)"""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType, StringType

    from dtcli.engine.runtime.changes import quote

    for field in schema.fields:
        if isinstance(field.dataType, NumericType):
            return F.col(quote(field.name)) < F.lit(0)
        if isinstance(field.dataType, StringType):
            return F.col(quote(field.name)) < F.lit("")
    return None
