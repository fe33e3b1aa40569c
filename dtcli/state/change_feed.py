"""A local table's change data feed between two versions, read from its log and files in Python.

Spark reads a change feed with two jobs and their planning (the feed's file index, then the read
and its netting), about half a second on two cores for a few hundred rows: per changed input, per
refresh that reads it, and much of what a small incremental refresh of a join over several inputs
costs before its change query runs. Yet the feed of the commits a source's writers make is a few
small Parquet files named in the log: the `cdc` files of a MERGE, UPDATE or DELETE (their rows
carry `_change_type`), or the files an append adds (every row an insert). This reads those files
with pyarrow, as Delta's own reader would take them: a commit with `cdc` actions contributes
those only, a commit without them the rows of the files it adds with `dataChange`.

Only where that is the whole story; anything else is left to Spark (`None`): a table without its
change data feed on, a remote or partitioned table, column mapping, a schema, protocol or property
change in the range, a commit without `cdc` actions that removes data (an overwrite; a DELETE
that marks rows in deletion vectors, whose rows Delta finds by comparing the vectors) or adds a
file with a deletion vector, a commit file or data file that is gone (Spark then raises the error
dt reports), a column missing from a file, more rows than the caller's limit.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from urllib.parse import unquote

from dtcli.state import storage

CHANGE_TYPE = "_change_type"
WEIGHTS = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}
_COMMIT = "{:020d}.json"


@dataclass(frozen=True)
class FeedFiles:
    """The Parquet files holding versions start+1..end of a table's change feed."""

    schema_json: str                      # the table's schema (Spark's JSON), the same at both ends
    files: tuple[tuple[str, bool], ...]   # (local path, whether its rows carry _change_type)


def feed_files(path: str, start: int, end: int) -> FeedFiles | None:
    """The files of the feed of versions start+1..end of the local table at `path`, or None when
    they are not all of it (see the module docstring)."""
    root = storage.local_table(path)
    if root is None or end <= start:
        return None
    meta = _metadata(root, end)
    if meta is None:
        return None
    files: list[tuple[str, bool]] = []
    for version in range(start + 1, end + 1):
        actions = _actions(root, version)
        if actions is None:
            return None
        found = _commit_files(root, actions)
        if found is None:
            return None
        files.extend(found)
    return FeedFiles(meta, tuple(files))


def read_rows(feed: FeedFiles, columns: list[str], arrow_types: list, limit: int) -> list[tuple] | None:
    """The feed's rows over `columns` (the log's names), cast to `arrow_types`, each followed by
    its weight (+1 insert or post-image, -1 delete or pre-image), not netted; None when a file
    lacks one of the columns, a value does not cast, or there are more than `limit` rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: list[tuple] = []
    for file, typed in feed.files:
        try:
            parquet = pq.ParquetFile(file)
            names = set(parquet.schema_arrow.names)
            if any(c not in names for c in columns) or (typed and CHANGE_TYPE not in names):
                return None
            table = parquet.read(columns=[*columns, *([CHANGE_TYPE] if typed else [])])
            values = [table.column(c).cast(t).to_pylist() for c, t in zip(columns, arrow_types)]
        except (OSError, pa.ArrowException):
            return None
        if typed:
            weights = [WEIGHTS.get(kind) for kind in table.column(CHANGE_TYPE).to_pylist()]
            if None in weights:
                return None
        else:
            weights = [1] * table.num_rows
        if len(out) + table.num_rows > limit:
            return None
        out.extend(zip(*values, weights) if columns else ((w,) for w in weights))
    return out


def _metadata(root: str, version: int) -> str | None:
    """The schema at `version` of a table this module can read the feed of (its change data feed
    on, not partitioned, no column mapping), or None."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = DeltaTable(root, version=version)
        meta = table.metadata()
    except (DeltaError, OSError, ValueError):
        return None
    config = meta.configuration
    mode = str(config.get("delta.columnMapping.mode", "none")).lower()
    # without the feed on, Spark refuses the read (DELTA_MISSING_CHANGE_DATA) and dt recomputes
    feed = str(config.get("delta.enableChangeDataFeed", "false")).lower() == "true"
    if meta.partition_columns or mode not in ("", "none") or not feed:
        return None
    return table.schema().to_json()


def _actions(root: str, version: int) -> list[dict] | None:
    try:
        with open(os.path.join(root, "_delta_log", _COMMIT.format(version)), encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return None


def _commit_files(root: str, actions: list[dict]) -> list[tuple[str, bool]] | None:
    """The feed files of one commit (see the module docstring), or None."""
    cdc, added, removes = [], [], False
    for action in actions:
        if "metaData" in action or "protocol" in action:
            return None
        if "cdc" in action:
            cdc.append(action["cdc"])
        elif "add" in action and action["add"].get("dataChange", True):
            added.append(action["add"])
        elif "remove" in action and action["remove"].get("dataChange", True):
            removes = True
    if cdc:
        picked, typed = cdc, True
    elif removes or any(a.get("deletionVector") for a in added):
        return None
    else:
        picked, typed = added, False
    files = []
    for entry in picked:
        name = entry.get("path", "")
        if "://" in name or name.startswith("/") or entry.get("partitionValues"):
            return None
        files.append((os.path.join(root, unquote(name)), typed))
    return files
