"""Delta tables read at a pinned version, once per run and shared by its refreshes.

Reading a Delta table at a version that is no longer its newest loads that version's snapshot
(one Spark job) and, at the first query over it, rebuilds the snapshot's state (two or three
more); a DataFrame read again at the same version does it all again, because each read makes a
snapshot of its own. A pass of the 22 TPC-H DTs reads lineitem at one version in 17 refreshes
(and the previous pass's version in the incremental ones), while a writer keeps moving the table
on: measured at SF0.1, a FULL of Q9 spent 21 of its 43 Spark jobs rebuilding the state of its
six inputs, identical for every DT that read them. One DataFrame per (table, version) per run,
re-based onto the session of each refresh (its temporary views are its own), keeps the snapshot
and the state it built for every later read.

The sharing lasts one run (one `executor.execute`): every input is pinned for the run, so a
(path, version) names one content for its whole length. Past it, only the store below keeps reads.

A small table (engine/runtime/listed.py: its files within 16 MiB, or at most 8 of them) is read
over the list of its files made at its first read, so that a query over it plans no Delta file
filtering (a job of its own per query otherwise, whatever the table's size).

The reads outlive their run in one application (`dt run --watch`, a notebook's session), in a
store of the last CARRIED of them keyed by (path, Delta table id, version, and the time the
version's commit file was written, for a local table): a version of a table never changes, so
the next pass finds ready the snapshots of the sources that did not move (one Spark job each
otherwise, its snapshot and list made again) and the old versions its incremental refreshes read
(three jobs each for a table whose log has no checksum file: those versions were the previous
pass's new ones). The id is the planner's (the step's input) when a read is looked up and the
read's own when it is stored, so a table dropped and created again at the same path
(its versions counting from 0 again) is never taken for the one before, nor is a directory put
back from a copy and written on (same id, other versions).

On request (`spark.dt.inputCacheBytes`, off by default: see CACHE_BYTES) a small table's rows
are also kept in memory for the run (Spark's columnar cache, filled by the first query that reads
them), once the run asks for it a second time and while the files cached fit the budget.
"""

from __future__ import annotations

from threading import Lock

from dtcli.engine.runtime import log_read
from dtcli.engine.runtime.listed import in_session, listed, snapshot_of, table_size, worth_listing
from dtcli.engine.runtime.read_store import ReadStore
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS
from dtcli.state.log_cache import commit_stamp

# The Spark setting naming the bytes of input files a run keeps in memory (the files of the
# tables at the versions read, as their logs count them), and its default: none. Once small
# inputs were read over their file list, the cache no longer paid for itself: the 22 TPC-H DTs at
# SF0.1 after a small change ran 100 s without it against 106-131 s with 128 MiB, and a `--watch`
# pass, which fills and empties it anew, took 10.4 s against 14.5 s (benchmarks/README.md).
CACHE_SETTING = "spark.dt.inputCacheBytes"
CACHE_BYTES = 0
# A column the cached plan has and the plan every reader sees has not: Spark uncaches a cached
# plan when a temporary view of that very plan is dropped or replaced, as every refresh does with
# its views (the rows would then be read from the table again by the next query).
_PIN = "__dt_pinned"
# The reads kept from one run to the next in an application: the inputs of a few passes of a
# large project at several versions each (a table's snapshot and, when small, its file list).
CARRIED = 64


class PinnedReads:
    """The run's DataFrames by (path, version); safe to use from the refresh threads."""

    def __init__(self, written: frozenset[str] = frozenset()) -> None:
        # the tables the run writes are never cached: a write makes Spark re-plan every cached
        # plan of its path into a cache entry of its own, which outlives the run's `clear`
        # (a time-travel read of a DT cached before the DT's commit stayed behind, in memory)
        self._written = frozenset(written)
        self._lock = Lock()
        self._frames: dict[tuple[str, int], object] = {}
        self._loaded: set[tuple[str, int]] = set()
        self._cached: list = []          # the cached plans, let go at `clear`
        self._cached_bytes = 0
        self._requests: dict[tuple[str, int], int] = {}
        self._sizes: dict[tuple[str, int], tuple[int, int] | None] = {}
        self._making: dict[tuple[str, int], Lock] = {}
        self._ids: dict[str, str] = {}      # path -> the Delta table id the plan read it with

    def first_load(self, path: str, version: int) -> bool:
        """Whether this is the run's first request to build (path, version)'s state (and, from
        now on, it is not): the state lives with the shared DataFrame, so one build serves
        every refresh of the run (engine/runtime/table_state.py)."""
        key = (path, int(version))
        with self._lock:
            if key in self._loaded:
                return False
            self._loaded.add(key)
            return True

    def at(self, spark, path: str, version: int, *, counted: bool = True, table_id: str | None = None):
        """`path` at `version`, as a DataFrame of `spark`'s session; from the run's second
        request for it on, over rows kept in memory when the budget has room (`_keep`).
        `counted=False`: a request that is not a reader's (the side thread building the state
        of what a refresh bound already) and makes nothing cached. `table_id`: the table's
        Delta id as the plan knows it, under which an earlier run's read of it is looked up
        (for this version and the others the run reads)."""
        key = (path, int(version))
        with self._lock:
            if table_id:
                self._ids.setdefault(path, table_id)
            df = self._frames.get(key)
            if counted:
                self._requests[key] = self._requests.get(key, 0) + 1
            again = counted and self._requests[key] == 2
        if df is None:
            df = self._first_read(spark, key)
        if again:
            df = self._keep(spark, key, df)
        return in_session(df, spark) or _read(spark, path, version)

    def _keep(self, spark, key: tuple[str, int], df):
        """`df` (the run's read of `key`) over rows cached for the run when its files fit what
        is left of the budget, else `df`. Only a table asked for again is worth it: caching plans
        the table's scan at once (Delta's state and file filtering), which a refresh that binds
        an input it never scans (its change decided it) would otherwise not pay, and a table
        read by one query gains nothing: the run's later readers ask again (and a changed
        input's old version is asked for by each refresh that reads it)."""
        from pyspark.sql import functions as F

        if key[0] in self._written:
            return df
        frame = in_session(df, spark)
        found = self._size(key, frame) if frame is not None else None
        size = found[0] if found is not None else None
        budget = _budget(spark)
        with self._lock:
            if size is None or self._cached_bytes + size > budget:
                return df
            self._cached_bytes += size
        kept = frame.select("*", F.lit(True).alias(_PIN))
        kept.persist()
        shown = kept.drop(_PIN)
        with self._lock:
            self._cached.append(kept)
            self._frames[key] = shown
        return shown

    def _first_read(self, spark, key: tuple[str, int]):
        """The run's DataFrame of `key`, made once: a small table's over its file list
        (engine/runtime/listed.py), made while other readers of it wait."""
        with self._lock:
            making = self._making.setdefault(key, Lock())
        with making:
            with self._lock:
                df = self._frames.get(key)
            if df is None:
                df = self._from_earlier_run(key)
            if df is None:      # one log read decides, sizes and lists it (no Delta snapshot)
                found = log_read.read(spark, *key, self._id_of(key[0]))
                if found is not None:
                    df = found[0]
                    _carry(key, df, found[1])
            if df is None:
                df = _read(spark, *key)
                if worth_listing(self._size(key, df)):
                    df = listed(df)
                _carry(key, df)
            with self._lock:
                df = self._frames.setdefault(key, df)
        return df

    def _id_of(self, path: str) -> str | None:
        with self._lock:
            return self._ids.get(path)

    def _from_earlier_run(self, key: tuple[str, int]):
        """An earlier run's read of `key`, when the plan gave the table's id (and then its state
        is built: the side thread need not plan a scan of it again)."""
        with self._lock:
            table_id = self._ids.get(key[0])
        df = _carried.get((key[0], table_id, key[1], commit_stamp(*key))) if table_id else None
        if df is not None:
            with self._lock:
                self._loaded.add(key)
        return df

    def _size(self, key: tuple[str, int], df=None) -> tuple[int, int] | None:
        """(bytes, number) of the files of `key` (`df` its read), found once per run."""
        with self._lock:
            if key in self._sizes:
                return self._sizes[key]
        size = table_size(snapshot_of(df) if df is not None else None, *key)
        with self._lock:
            return self._sizes.setdefault(key, size)

    def clear(self) -> None:
        with self._lock:
            for kept in self._cached:
                try:
                    # blocking: the memory is free when the run returns (a watch application's
                    # next pass, a test counting the session's blocks, see no leftover)
                    kept.unpersist(blocking=True)
                except SPARK_ERRORS:
                    pass        # the application is going away: so are its cached blocks
            self._cached.clear()
            self._cached_bytes = 0
            self._requests.clear()
            self._sizes.clear()
            self._making.clear()
            self._frames.clear()
            self._loaded.clear()
            self._ids.clear()

    def cached(self) -> int:
        """How many tables' rows the run keeps in memory."""
        with self._lock:
            return len(self._cached)


def read_at(pinned: PinnedReads | None, spark, path: str, version: int, *, counted: bool = True,
            table_id: str | None = None):
    """`path` at `version` in `spark`: through the run's shared reads when there are some."""
    return pinned.at(spark, path, version, counted=counted, table_id=table_id) if pinned is not None \
        else _read(spark, path, version)


# the reads kept for the application's later runs (see the module's docstring)
_carried = ReadStore(CARRIED)


def forget_carried() -> None:
    """Let every read kept for later runs go (tables replaced behind the application's back, a
    benchmark timing each refresh as a new application's first)."""
    _carried.clear()


def _carry(key: tuple[str, int], df, table_id: str | None = None) -> None:
    """Keep `df` (the read of `key` a run made) for the application's later runs, under the id
    of the table it read (`table_id`, else its snapshot's; none found: not kept)."""
    if table_id is None:
        snapshot = snapshot_of(df)
        try:
            table_id = str(snapshot.metadata().id()) if snapshot is not None else None
        except (AttributeError, *SPARK_ERRORS):
            table_id = None
    if table_id:
        _carried.keep((key[0], table_id, key[1], commit_stamp(*key)), df)


def _read(spark, path: str, version: int):
    return spark.read.format("delta").option("versionAsOf", int(version)).load(path)


def _budget(spark) -> int:
    try:
        return int(spark.conf.get(CACHE_SETTING, str(CACHE_BYTES)))
    except (ValueError, *SPARK_ERRORS):
        return CACHE_BYTES
