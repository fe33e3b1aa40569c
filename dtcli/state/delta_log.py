"""Reading Delta tables' logs without a JVM (via the `deltalake` package).

`show`, `explain` and the NO_DATA decision of `run` rely on these, so they answer in well
under a second and never start Spark.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field

from dtcli.model import Column, Frontier
from dtcli.state import storage
from dtcli.state.delta_types import columns_from_delta_schema

FRONTIER_KEY = "dt_frontier"
HISTORY_DEPTH = 50   # commits searched back for the last frontier (maintenance commits carry none)




def as_arrow(data):
    """deltalake's Arrow result (arro3, any object with an Arrow C stream) as a pyarrow Table.
    Not `pa.table(data)`: that first asks whether `data` is a pandas DataFrame, which imports
    pandas (0.7 s of a JVM-free command's second)."""
    import pyarrow as pa

    return pa.RecordBatchReader.from_stream(data).read_all()


def open_table(path: str):
    """The DeltaTable at `path`, or None when there is no Delta table there."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DeltaTable(storage.uri(path), storage_options=storage.options(path))
    except TableNotFoundError:
        return None
    except OSError:
        return None


# One row of a small Delta table (dt's own metadata tables, rows a user asked to see) as the
# Python values of its columns: a reader looks at a value before it uses it.
Row = dict[str, object]


def read_rows(table, where: str | None = None) -> list[Row]:
    """Every row of a small Delta table (dt's own metadata tables) as dicts, or those matching
    the SQL condition `where` (the query engine skips the files whose statistics exclude it)."""
    return query_rows(table, "SELECT * FROM t" + (f" WHERE {where}" if where else ""))


def query_rows(table, sql: str) -> list[Row]:
    """The rows of a query over a small Delta table (named `t` in `sql`) as dicts.

    Through deltalake's query engine, and column by column from its Arrow result: neither
    `to_pyarrow_table()` (which imports pyarrow.dataset) nor pyarrow itself (which imports
    numpy, 0.3 s of a JVM-free command's second) is needed to read a few thousand rows."""
    from deltalake import QueryBuilder

    result = QueryBuilder().register("t", table).execute(sql).read_all()
    columns = [result.column(k).to_pylist() for k in range(result.num_columns)]
    return [dict(zip(result.column_names, values)) for values in zip(*columns)]


def table_version(path: str) -> int | None:
    table = open_table(path)
    return None if table is None else table.version()


@dataclass(frozen=True)
class TableInfo:
    version: int
    rows: int | None
    bytes: int
    change_data_feed: bool
    created_on: str | None
    frontier: Frontier | None
    frontier_version: int | None
    schema: tuple[Column, ...] = ()
    description: str | None = None           # the table comment
    properties: dict[str, str] = field(default_factory=dict)
    reader_features: tuple[str, ...] = ()    # protocol features a reader must support
    table_id: str | None = None              # Delta's id of the table (a new table, a new id)

    def deletion_vectors_differ(self, want: bool) -> bool:
        """Whether the table is not written as `deletion_vectors: want` says: the property
        differs, or (when off) readers still need deletion-vector support (the feature
        stays in the protocol until it is dropped)."""
        on = str(self.properties.get("delta.enableDeletionVectors", "false")).lower() == "true"
        return on != want or (not want and "deletionVectors" in self.reader_features)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.schema)


def cdf_enabled(configuration: dict[str, str]) -> bool:
    return str(configuration.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def enable_cdf_sql(path: str) -> str:
    """The statement a user runs to turn a Delta table's change data feed on (what dt reads
    a source's changes from)."""
    return f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"


def read_frontier(table) -> tuple[Frontier | None, int | None]:
    """The newest frontier dt committed to this table, with the version carrying it."""
    for commit in table.history(HISTORY_DEPTH):
        meta = commit.get("userMetadata")
        if not meta:
            continue
        try:
            payload = json.loads(meta)
        except ValueError:
            continue
        if isinstance(payload, dict) and FRONTIER_KEY in payload:
            return Frontier.from_dict(payload[FRONTIER_KEY]), commit.get("version")
    return None, None


def _deleted_rows(table) -> int:
    """Rows hidden by deletion vectors: file statistics still count them (DTs are written with
    deletion vectors on, so an incremental refresh marks rows deleted instead of rewriting)."""
    features = table.protocol().reader_features or []
    if "deletionVectors" not in features:
        return 0
    vectors = table.deletion_vectors().read_all()
    if not vectors.num_rows:     # no file has one: no need for pyarrow's kernels
        return 0
    import pyarrow.compute as pc

    kept = as_arrow(vectors).column("selection_vector")
    if not len(kept):
        return 0
    flat = pc.list_flatten(kept)
    return len(flat) - pc.sum(flat).as_py()


def table_info(path: str, *, with_stats: bool = True) -> TableInfo | None:
    table = open_table(path)
    return None if table is None else info_of(table, with_stats=with_stats)


def info_of(table, *, with_stats: bool = True) -> TableInfo:
    """What dt needs of an open table's log: version, schema, frontier, (row/byte) statistics."""
    from datetime import datetime, timezone

    rows = None
    size = 0
    if with_stats:
        # one entry per file: summed from deltalake's Arrow result column by column, without
        # importing pyarrow (and numpy with it)
        adds = table.get_add_actions(flatten=True)
        names = adds.column_names
        size = sum(adds.column(names.index("size_bytes")).to_pylist()) if adds.num_rows else 0
        counts = adds.column(names.index("num_records")).to_pylist() if "num_records" in names else []
        rows = None if any(c is None for c in counts) else sum(counts) - _deleted_rows(table)
    meta = table.metadata()
    created = meta.created_time
    created_on = (datetime.fromtimestamp(created / 1000, tz=timezone.utc).isoformat()
                  if created else None)
    frontier, fversion = read_frontier(table)
    schema = columns_from_delta_schema(json.loads(table.schema().to_json()))
    return TableInfo(version=table.version(), rows=rows, bytes=size,
                     change_data_feed=cdf_enabled(meta.configuration), created_on=created_on,
                     frontier=frontier, frontier_version=fversion, schema=schema,
                     description=meta.description or None, properties=dict(meta.configuration),
                     reader_features=tuple(table.protocol().reader_features or ()),
                     table_id=meta.id or None)


class FileStats:
    """A table version's data files as its log describes them: each file's size and, per
    column Delta keeps statistics of, its smallest and largest value (what Delta's file
    skipping tests a scan's filters against)."""

    def __init__(self, adds, mapped: bool):
        self._adds = adds                     # deltalake's flattened add actions (one row a file)
        self._names = {n.lower(): n for n in adds.column_names}
        self._mapped = mapped                 # column mapping: statistics under physical names
        self._bounds: dict[str, tuple[list, list] | None] = {}
        self.sizes: list[int] = adds.column("size_bytes").to_pylist() if adds.num_rows else []

    @property
    def bytes(self) -> int:
        return sum(self.sizes)

    def bounds(self, column: str) -> tuple[list, list] | None:
        """(mins, maxes) of `column`, one per file (None where a file has none); None when the
        log keeps no statistics of it (or keeps them under other names)."""
        key = column.lower()
        if key not in self._bounds:
            low, high = self._names.get(f"min.{key}"), self._names.get(f"max.{key}")
            self._bounds[key] = None if self._mapped or low is None or high is None else (
                self._adds.column(low).to_pylist(), self._adds.column(high).to_pylist())
        return self._bounds[key]

    def skipped_bytes(self, column: str, ranges: list[tuple]) -> int | None:
        """Bytes of the files whose `column` range meets none of `ranges` ((low, high) pairs,
        both ends included): what a filter "within these ranges" lets Delta skip. None when it
        cannot be told (no statistics, values of another type than the statistics')."""
        found = self.bounds(column)
        if found is None:
            return None
        skipped = 0
        try:
            for size, low, high in zip(self.sizes, *found):
                if low is None or high is None:
                    continue            # no statistics (or only NULLs): never skipped
                if not any(lo <= high and low <= hi for lo, hi in ranges):
                    skipped += size
        except TypeError:
            return None
        return skipped


def file_stats(path: str, version: int | None = None) -> FileStats | None:
    """The data files of the table at `path` (at `version`, default the latest) with their
    statistics, from its log; None when there is no table there (or no such version)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = DeltaTable(storage.uri(path), version=version, storage_options=storage.options(path))
        mode = str(table.metadata().configuration.get("delta.columnMapping.mode", "none")).lower()
        return FileStats(table.get_add_actions(flatten=True), mapped=mode not in ("", "none"))
    except (DeltaError, OSError):
        return None


@dataclass(frozen=True)
class DataFiles:
    """A table version's data files as its log lists them: (path as written in the log, bytes,
    modification time in ms) each, and what a reader must know besides paths to read them."""

    table_id: str | None
    reader_version: int               # 1: no deletion vectors, no column mapping
    partitioned: bool
    files: tuple[tuple[str, int, int], ...]
    schema_json: str = ""             # the table's schema as the log writes it (Spark's JSON)

    @property
    def bytes(self) -> int:
        return sum(size for _, size, _ in self.files)

    @property
    def paths_suffice(self) -> bool:
        """Whether a file's path (and size) is all a reader needs of it: reader version 1 (no
        deletion vectors, no column mapping), not partitioned, and every path one that reads the
        same URL-encoded and decoded (deltalake gives it decoded, Delta's AddFile takes it as the
        log writes it)."""
        return (self.reader_version == 1 and not self.partitioned
                and all(_PLAIN_PATH.fullmatch(name) for name, _, _ in self.files))


_PLAIN_PATH = re.compile(r"[A-Za-z0-9._/=-]+")


def data_files(path: str, version: int) -> DataFiles | None:
    """The data files of the table at `path` at `version`, from its log; None when there is no
    such table or version here."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = DeltaTable(storage.uri(path), version=version, storage_options=storage.options(path))
        adds = table.get_add_actions(flatten=False)
        names = adds.column_names
        columns = [adds.column(names.index(n)).to_pylist() if adds.num_rows else []
                   for n in ("path", "size_bytes", "modification_time")]
        meta = table.metadata()
        return DataFiles(meta.id or None, int(table.protocol().min_reader_version),
                         bool(meta.partition_columns), tuple(zip(*columns)), table.schema().to_json())
    except (DeltaError, OSError, ValueError):
        return None


def frontier_metadata(frontier: Frontier) -> str:
    return json.dumps({FRONTIER_KEY: frontier.to_dict()}, sort_keys=True, separators=(",", ":"))


def column_types(path: str, version: int | None = None) -> dict[str, str] | None:
    """{column name (lower case): its Delta type as JSON} of the table at `version` (default:
    the latest), read from its log; None when there is no table there (or no such version)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = DeltaTable(storage.uri(path), version=version, storage_options=storage.options(path))
    except (DeltaError, OSError):     # no table there (TableNotFoundError), or no such version
        return None
    fields = json.loads(table.schema().to_json()).get("fields", [])
    return {f["name"].lower(): json.dumps(f["type"], sort_keys=True) for f in fields}
