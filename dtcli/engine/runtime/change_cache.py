"""An input's change read once per run, and each refresh's projection of it made on the driver.

Every incremental refresh reads the change of each changed input between the versions its
frontier and the run pin (engine/runtime/changes.py): the feed's snapshot and file listing,
then the read and its netting collected, about three Spark jobs per input. In a run of the 22
TPC-H queries as DTs after one change batch, lineitem's change between the same two versions is
read by 17 refreshes, orders' by 10, the other inputs' by several each (and an internal table
reads its DT's inputs' changes again): about 50 reads where six would do.

The first refresh that needs (path, start, end) reads the change of all its columns (of the
types below) and nets it, collected on the driver when it is small (materialize.LOCAL_ROWS); any
refresh (the first included) then takes the columns it reads from those rows and nets them
again: a row changed only in a column it does not read cancels out, so its change set, and
whether the input changed at all, is what a read of its own columns would give. Its DataFrame
is made from those rows in its own session (a local relation, through Arrow: no Spark job).
All columns rather than the union the run reads: an entry is the same whichever refreshes ask,
and a change collected whole is small by construction; wider rows cost only driver memory.

The driver nets by Python equality, which agrees with Spark's grouping on the types below once
NaN and -0.0 are normalised as Spark normalises grouping keys; a column of any other type
(timestamps, binary, collated strings, arrays, maps, structs…) is not taken from the cache: a
refresh reading one reads its change itself, as does every refresh when the change is too
large to collect, when the input's schema differs between the two versions, or when the shared
read fails (the refresh's own read then raises what it always raised: ChangesUnavailable
stays per refresh). Entries last one run (`clear` at its end), like engine/runtime/pinned.py.

A change the run committed itself enters too (`seed`) when the refresh that wrote it held its rows
on the driver: a DT another DT reads applied a netted change it collected, and an aggregate's
running totals written from their own rows (own_rows.py) know the groups they replaced and the
ones they wrote. Either is the table's change feed for that commit, netted; the readers refreshed
after it in the run take it from here instead of reading the feed (a snapshot, a file listing and
a read: three to five jobs).
"""

from __future__ import annotations

import math
from concurrent.futures import Future
from dataclasses import dataclass
from threading import Lock

from dtcli.engine.runtime.changes import CDF_COLUMNS, netted, read_feed
from dtcli.engine.runtime.materialize import LOCAL_ROWS, local_frame, local_rows
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS

# Driver memory the run's entries may hold, in values (rows x columns): about 150 MB of Python
# objects. A change past it is used by the refresh that read it and not kept for the others.
MAX_CELLS = 2_000_000
_NAN = float("nan")     # one object: Python finds it equal to itself only by identity


@dataclass(frozen=True)
class Shared:
    """A change netted over `fields` (its data columns, then WEIGHT), its rows on the driver."""

    fields: list            # pyspark StructFields
    rows: list[tuple]
    complete: bool          # every column of the input is among `fields`


class ChangeCache:
    """The run's changes by (path, start, end); safe to use from the refresh threads."""

    def __init__(self, max_cells: int = MAX_CELLS) -> None:
        self._lock = Lock()
        self._entries: dict[tuple[str, int, int], Future] = {}
        self._cells, self._max_cells = 0, max_cells

    def projected(self, spark, path: str, start: int, end: int, columns: list[str] | None,
                  small: bool) -> tuple[object, list] | None:
        """(DataFrame of `spark`, rows) of the change over `columns` (None: all), netted, as
        changes.netted would give them collected; None when the cache cannot give it. A
        refresh that expects a large change (`small` false) uses an entry but does not read one."""
        shared = self._shared(spark, path, int(start), int(end), small)
        if shared is None:
            return None
        positions = _positions(shared, columns)
        if positions is None:
            return None
        fields = [shared.fields[p] for p in positions] + [shared.fields[-1]]
        floats = {k for k, p in enumerate(positions) if _is_float(shared.fields[p].dataType)}
        df = local_frame(spark, fields, net(shared.rows, positions, floats))
        return df, df.collect()       # a local relation's rows: no job

    def seed(self, path: str, start: int, end: int, fields: list, rows: list[tuple]) -> None:
        """A change this run committed itself (versions start+1..end of `path`), its rows known on
        the driver: `fields` (the table's data columns as the table types them, then WEIGHT) and
        `rows` with their weights, netted here as the table's change feed is. Later readers of the change (a
        DT over a DT, a DT over its internal table) take it without reading the feed. Columns of
        a type not kept here (`plain`) are left out and the rows netted again, as `_read` does."""
        data = list(fields[:-1])
        positions = [k for k, f in enumerate(data) if plain(f.dataType)]
        floats = {j for j, k in enumerate(positions) if _is_float(data[k].dataType)}
        shared = Shared([data[k] for k in positions] + [fields[-1]], net(rows, positions, floats),
                        len(positions) == len(data))
        cells = len(shared.rows) * len(shared.fields)
        entry: Future = Future()
        entry.set_result(shared)
        with self._lock:
            key = (path, int(start), int(end))
            if key in self._entries or self._cells + cells > self._max_cells:
                return
            self._entries[key] = entry
            self._cells += cells

    def seeded(self, path: str, start: int, end: int) -> Shared | None:
        """The entry of (path, start, end) when the run holds one with every column, read or
        seeded (none is read here)."""
        with self._lock:
            entry = self._entries.get((path, int(start), int(end)))
        shared = entry.result() if entry is not None else None
        return shared if shared is not None and shared.complete else None

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._cells = 0

    def _shared(self, spark, path: str, start: int, end: int, small: bool) -> Shared | None:
        key = (path, start, end)
        with self._lock:
            entry = self._entries.get(key)
            mine = entry is None and small
            if mine:
                entry = self._entries[key] = Future()
        if entry is None:
            return None
        if not mine:
            return entry.result()     # another refresh reads it: wait for its rows
        shared = None
        try:
            shared = _read(spark, path, start, end)
        except SPARK_ERRORS:          # each refresh reads for itself and meets the error there
            shared = None
        finally:
            kept = shared
            if shared is not None:
                cells = len(shared.rows) * len(shared.fields)
                with self._lock:
                    if self._cells + cells > self._max_cells:
                        kept = None   # past the budget: this refresh's alone
                    else:
                        self._cells += cells
            entry.set_result(kept)
        return shared


def _read(spark, path: str, start: int, end: int) -> Shared | None:
    """The change of every column of a type the driver nets exactly, collected when small: from
    the feed's files where the driver can read them (state/change_feed.py), else through Spark."""
    shared = _read_files(spark, path, start, end)
    if shared is not None:
        return shared
    feed = read_feed(spark, path, start, end)
    data = [f for f in feed.schema.fields if f.name not in CDF_COLUMNS]
    kept = [f for f in data if plain(f.dataType)]
    df = netted(feed, [f.name for f in kept])
    rows = local_rows(df, LOCAL_ROWS)
    if rows is None:
        return None
    return Shared(list(df.schema.fields), [tuple(r) for r in rows], len(kept) == len(data))


# The Spark setting that lets the driver read a change feed's files itself (state/change_feed.py),
# and its default: Spark's own read costs two jobs per changed input and refresh, the driver's a
# few milliseconds; `false` reads every change through Spark.
FILES_SETTING = "spark.dt.driverFeedReads"
# the most feed rows the driver reads before netting them (a MERGE's pre- and post-images of
# rows that did not change count too): past it, Spark reads and nets the change
MAX_FEED_ROWS = 4 * LOCAL_ROWS


def _read_files(spark, path: str, start: int, end: int) -> Shared | None:
    """The change read from the feed's Parquet files on the driver, netted; None where that is
    not the whole feed, or is off (FILES_SETTING), or the netted change is not small."""
    import json

    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    from dtcli.engine.runtime.changes import WEIGHT
    from dtcli.state import change_feed

    if str(spark.conf.get(FILES_SETTING, "true")).lower() == "false":
        return None
    feed = change_feed.feed_files(path, start, end)
    if feed is None:
        return None
    data = T.StructType.fromJson(json.loads(feed.schema_json)).fields
    kept = [f for f in data if plain(f.dataType)]
    arrow = to_arrow_schema(T.StructType(kept))
    rows = change_feed.read_rows(feed, [f.name for f in kept], [f.type for f in arrow], MAX_FEED_ROWS)
    if rows is None:
        return None
    floats = {k for k, f in enumerate(kept) if _is_float(f.dataType)}
    rows = net(rows, list(range(len(kept))), floats)
    if len(rows) > LOCAL_ROWS:
        return None
    fields = [*kept, T.StructField(WEIGHT, T.LongType(), True)]     # as Spark's netting types them
    return Shared(fields, rows, len(kept) == len(data))


def _positions(shared: Shared, columns: list[str] | None) -> list[int] | None:
    """Where `columns` are among the entry's data columns; None when one is not there."""
    count = len(shared.fields) - 1
    if columns is None:
        return list(range(count)) if shared.complete else None
    index = {f.name.lower(): k for k, f in enumerate(shared.fields[:count])}
    positions = [index.get(c.lower()) for c in columns]
    return None if None in positions else positions


def net(rows: list[tuple], positions: list[int], floats: set[int] = frozenset()) -> list[tuple]:
    """`rows` (data values, then a weight) projected onto `positions`, weights summed per
    projected row and zeros dropped: what Spark's groupBy and sum give. `floats`: positions
    (in the projection) of FLOAT/DOUBLE columns, whose NaNs group together and -0.0 with 0.0."""
    sums: dict[tuple, int] = {}
    for row in rows:
        key = tuple(_normal(row[p]) if k in floats else row[p] for k, p in enumerate(positions))
        sums[key] = sums.get(key, 0) + row[-1]
    return [(*key, weight) for key, weight in sums.items() if weight != 0]


def _normal(value):
    if value is None:
        return None
    if math.isnan(value):
        return _NAN
    return 0.0 if value == 0 else value


def plain(data_type) -> bool:
    """Whether values of `data_type` come to Python equal exactly when Spark groups them together
    (NaN and -0.0 aside: `net`), and go back through Arrow unchanged."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):
        return data_type.collation == "UTF8_BINARY"
    return isinstance(data_type, (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType,
                                  T.FloatType, T.DoubleType, T.DecimalType, T.DateType))


def _is_float(data_type) -> bool:
    from pyspark.sql import types as T

    return isinstance(data_type, (T.FloatType, T.DoubleType))
