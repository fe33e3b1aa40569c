"""How many rows an input's commits changed, read from its Delta log (no JVM, no data read).

Every commit records operation metrics: rows written, deleted, updated, copied. Summed over the
commits a refresh would read, they estimate the size of the change data feed it reads (an update
is two change rows: its pre- and post-image; an overwrite reports the rows it rewrites as both
deleted and inserted). Spark and deltalake name the metrics differently; both are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# metric names: Spark's Delta first, then deltalake's
_INSERTED = ("numTargetRowsInserted", "num_target_rows_inserted")
_UPDATED = ("numTargetRowsUpdated", "numUpdatedRows", "num_target_rows_updated", "num_updated_rows")
_DELETED = ("numTargetRowsDeleted", "numDeletedRows", "num_target_rows_deleted", "num_deleted_rows")
_WRITTEN = ("numOutputRows", "num_added_rows")
_COPIED = ("numTargetRowsCopied", "numCopiedRows", "num_target_rows_copied", "num_copied_rows")


def _metric(metrics: Mapping[str, object], names: tuple[str, ...]) -> int:
    for name in names:
        if metrics.get(name) not in (None, ""):
            try:
                return int(metrics[name])
            except (TypeError, ValueError):
                return 0
    return 0


def commit_change_rows(commit: Mapping[str, Any], table_rows: int | None = None) -> int:
    """Change rows one commit adds to the change data feed (an estimate from its metrics);
    `commit`: one entry of deltalake's `DeltaTable.history()`, as it gives it."""
    operation = str(commit.get("operation") or "").upper()
    metrics = commit.get("operationMetrics") or {}
    if "MERGE" in operation or operation in ("UPDATE", "DELETE"):
        return (_metric(metrics, _INSERTED) + _metric(metrics, _DELETED) + 2 * _metric(metrics, _UPDATED))
    written = _metric(metrics, _WRITTEN)
    if "REPLACE" in operation or "CREATE" in operation or \
            str((commit.get("operationParameters") or {}).get("mode", "")).lower() == "overwrite":
        removed = _metric(metrics, _DELETED) or _metric(metrics, _COPIED) or (table_rows or written)
        return written + removed
    if written:                 # appends, and writes that report only what they added
        return written
    return _metric(metrics, _INSERTED) + _metric(metrics, _DELETED) + 2 * _metric(metrics, _UPDATED)


def change_rows(table, since: int, until: int, table_rows: int | None = None) -> int:
    """Change rows of the commits after version `since`, up to `until` (an open DeltaTable)."""
    if until <= since:
        return 0
    wanted = range(since + 1, until + 1)
    total = 0
    for commit in table.history(table.version() - since):
        if commit.get("version") in wanted:
            total += commit_change_rows(commit, table_rows)
    return total
