"""A small local Delta table's commit written in Python: its Parquet files and its log entry.

A commit through Spark costs a few rows' write about 0.6-1 s on two cores whatever their number:
the write's planning and job, Delta's transaction, and some twenty processes Hadoop's local file
system starts to `chmod` and `readlink` the files it creates (measured on a refresh of TPC-H Q6
at SF0.1: two such commits were half of its time). The same commit is a few small files: this
writes them with pyarrow and the log entry as the Delta protocol spells it, in a few milliseconds.

What qualifies a table is the caller's to check (engine/runtime/driver_write.py); this module only
writes what it is given:

* data files: `part-00000-<uuid>-c000.snappy.parquet` at the table's root, every column
  optional as Spark writes them, decimals as integers where they fit (as Spark does), with the
  file's record and null counts as its statistics;
* change data files: `_change_data/cdc-00000-<uuid>.c000.snappy.parquet`, the rows with their
  `_change_type`, which Delta's change feed reads instead of the commit's adds and removes;
* the log entry, made at once: written whole to a hidden temporary file, then hard-linked to its
  version's name, which fails if that version exists (another writer committed first: nothing is
  committed, the caller learns it). A kill before the link leaves only unreferenced files, as an
  interrupted Spark write does;
* the version's checksum file, derived from the previous version's where that is exact
  (version_checksum.py), so that readers of the new version spend no Spark job on its state.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from dtcli.state import storage, version_checksum

CHANGE_TYPE = "_change_type"
CHANGE_DIR = "_change_data"
LOG_DIR = "_delta_log"

# What a table may use and still be written here: features that ask nothing of a writer that
# replaces whole files without deletion vectors (a constraint, an append-only table, an
# invariant, a generated or identity column: refused below by their properties and metadata).
_READER_FEATURES = frozenset({"deletionVectors", "timestampNtz", "vacuumProtocolCheck"})
_WRITER_FEATURES = frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed",
                              "deletionVectors", "timestampNtz", "vacuumProtocolCheck"})
# Column types written here, as pyarrow types. Timestamps are left out: Spark hands a driver its
# timestamps as local wall-clock times, which do not map back one to one across a DST change.
_ARROW_TYPES = {"byte": "int8", "short": "int16", "integer": "int32", "long": "int64",
                "float": "float32", "double": "float64", "boolean": "bool_", "string": "string",
                "date": "date32"}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
CHECKPOINT_INTERVAL = 10        # Delta's default `delta.checkpointInterval`


@dataclass(frozen=True)
class Writable:
    """A table this module may write, at its latest version."""

    root: str
    version: int
    schema: Any             # pyarrow Schema of its columns, every field optional
    cdf: bool               # whether its change data feed is on


def writable(path: str) -> Writable | None:
    """The table at `path` if its next commit may be written here: local, not partitioned, every
    column of a type above with no metadata (no generated, identity, invariant or mapped column),
    no constraint, not append-only, no feature beyond those above, and its next version not one
    Delta checkpoints at (Spark's commit of that version writes the checkpoint)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    root = storage.local_table(path)
    if root is None:
        return None
    try:
        table = DeltaTable(root)
        protocol, meta = table.protocol(), table.metadata()
        fields = json.loads(table.schema().to_json())["fields"]
        version = table.version()
    except (DeltaError, OSError, ValueError, KeyError):
        return None
    if not _protocol_allows(protocol):
        return None
    config = {k.lower(): str(v).lower() for k, v in (meta.configuration or {}).items()}
    if meta.partition_columns or config.get("delta.appendonly") == "true" or \
            any(k.startswith("delta.constraints.") for k in config) or \
            config.get("delta.columnmapping.mode", "none") != "none":
        return None
    try:
        interval = int(config.get("delta.checkpointinterval", CHECKPOINT_INTERVAL))
    except ValueError:
        return None
    if interval <= 0 or (version + 1) % interval == 0:
        return None
    arrow = []
    for f in fields:
        kind = f.get("type")
        if f.get("metadata") or not isinstance(kind, str):
            return None
        decimal = _DECIMAL.fullmatch(kind)
        if decimal:
            arrow.append(pa.field(f["name"], pa.decimal128(int(decimal[1]), int(decimal[2]))))
        elif kind in _ARROW_TYPES:
            arrow.append(pa.field(f["name"], getattr(pa, _ARROW_TYPES[kind])()))
        else:
            return None
    return Writable(root, version, pa.schema(arrow), config.get("delta.enablechangedatafeed") == "true")


def _protocol_allows(protocol) -> bool:
    reader, writer = protocol.min_reader_version, protocol.min_writer_version
    if not (reader <= 1 or (reader == 3 and set(protocol.reader_features or ()) <= _READER_FEATURES)):
        return False
    return writer <= 4 or (writer == 7 and set(protocol.writer_features or ()) <= _WRITER_FEATURES)


def commit_path(root: str, version: int) -> str:
    return os.path.join(root, LOG_DIR, f"{version:020d}.json")


def write_file(root: str, table, *, change: bool = False) -> dict[str, Any]:
    """Write `table` (a pyarrow Table) as one Parquet file of the table at `root`: the body of
    its `add` action (`change`: a change data file, in `_change_data`, the body of a `cdc` one)."""
    import pyarrow.parquet as pq

    name = f"cdc-00000-{uuid.uuid4()}.c000.snappy.parquet" if change else \
        f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    relative = f"{CHANGE_DIR}/{name}" if change else name
    full = os.path.join(root, relative)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    pq.write_table(table, full, compression="snappy", store_decimal_as_integer=True)
    size = os.path.getsize(full)
    if change:
        return {"path": relative, "partitionValues": {}, "size": size, "dataChange": False}
    stats = {"numRecords": table.num_rows,
             "nullCount": {f.name: table.column(f.name).null_count for f in table.schema}}
    return {"path": relative, "partitionValues": {}, "size": size,
            "modificationTime": int(os.path.getmtime(full) * 1000), "dataChange": True,
            "stats": json.dumps(stats, separators=(",", ":"))}


def commit(root: str, version: int, actions: list[dict[str, Any]], info: dict[str, Any]) -> bool:
    """Make `version` of the table at `root` with `info` (its commitInfo, to which the time and
    a transaction id are added) and `actions`; False, with nothing committed, when that version
    exists already."""
    info = {"timestamp": int(time.time() * 1000), **info, "txnId": str(uuid.uuid4())}
    lines = [json.dumps({"commitInfo": info}, separators=(",", ":"))]
    lines += [json.dumps(a, separators=(",", ":")) for a in actions]
    final = commit_path(root, version)
    temporary = os.path.join(root, LOG_DIR, f".{version:020d}.json.{uuid.uuid4()}.tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
        out.flush()
        os.fsync(out.fileno())
    try:
        os.link(temporary, final)       # put-if-absent: fails when the version exists
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)
    # after the entry: a kill between the two leaves a version without a checksum, which Delta
    # reads as it reads any writer's that writes none
    version_checksum.write_after(root, version, actions, info["txnId"])
    return True
