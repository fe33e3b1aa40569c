"""The checksum file (`<version>.crc`) of a version committed on the driver (driver_commit.py),
derived from the previous version's as Delta derives its own.

Delta writes beside each version it commits a checksum file: the table's size, its file count, its
protocol and metadata, histograms of its file sizes and, for a table of a few files, every file.
A reader of a version with one takes its protocol and metadata from it and lists a small table's
files from it (engine/runtime/listed.py) with no Spark job; without one, Delta spends a job on
the log's protocol and metadata and two more rebuilding the version's files, and Spark's next
commit of the table, having no checksum to start from, writes none either. A driver commit that
left none made the next refresh of its table pay those jobs (TPC-H Q15 at SF0.1: about one
second of a four-second refresh).

Derived only where the previous version's file is one this module reads whole (every field of it
known) and the commit is driver_commit's own: adds and removes of files without deletion vectors,
change data files, no protocol, metadata or transaction action. The sums are Delta's: the size
and count plus the adds less the removes, each file size moved in the size histogram (bins by
their lower bound), the deleted-record histogram's first bin (files with no deleted rows) moved
likewise, and the file list replayed (a removed path absent from it means the file is not what
this derives from: no checksum is written). A checksum is optional to Delta, so anything this
cannot derive exactly leaves the version without one, as a writer that writes none would.
"""

from __future__ import annotations

import bisect
import copy
import json
import os
import uuid
from typing import Any

LOG_DIR = "_delta_log"
# Every field of Delta 4.4's VersionChecksum (the histogram under its protocol name or Delta
# Spark's older one); a file holding another is left alone.
_FIELDS = frozenset({"txnId", "tableSizeBytes", "numFiles", "numDeletedRecordsOpt", "numDeletionVectorsOpt",
                     "numMetadata", "numProtocol", "inCommitTimestampOpt", "setTransactions",
                     "domainMetadata", "metadata", "protocol", "fileSizeHistogram", "histogramOpt",
                     "deletedRecordCountsHistogramOpt", "allFiles", "lastManifestCommit"})
_ACTIONS = frozenset({"add", "remove", "cdc"})


def checksum_path(root: str, version: int) -> str:
    return os.path.join(root, LOG_DIR, f"{version:020d}.crc")


def derive(previous: dict[str, Any], actions: list[dict[str, Any]], txn_id: str) -> dict[str, Any] | None:
    """The checksum of the version made by `actions` (driver_commit's) over the version whose
    checksum is `previous`, or None where it cannot be derived exactly.

    >>> one = {"path": "a.parquet", "partitionValues": {}, "size": 500, "modificationTime": 1, "dataChange": True}
    >>> before = {"tableSizeBytes": 700, "numFiles": 1, "numMetadata": 1, "numProtocol": 1,
    ...           "metadata": {"id": "t"}, "protocol": {"minReaderVersion": 1},
    ...           "fileSizeHistogram": {"sortedBinBoundaries": [0, 600], "fileCounts": [0, 1],
    ...                                 "totalBytes": [0, 700]},
    ...           "allFiles": [{"path": "old.parquet", "size": 700, "dataChange": False}]}
    >>> gone = {"path": "old.parquet", "extendedFileMetadata": True, "size": 700, "dataChange": True}
    >>> after = derive(before, [{"add": one}, {"remove": gone}], "x")
    >>> after["tableSizeBytes"], after["numFiles"], after["fileSizeHistogram"]["fileCounts"]
    (500, 1, [1, 0])
    >>> [(f["path"], f["dataChange"]) for f in after["allFiles"]]
    [('a.parquet', False)]
    >>> derive(before, [{"remove": {**gone, "path": "other.parquet"}}], "x") is None
    True
    """
    if not isinstance(previous, dict) or set(previous) - _FIELDS or \
            previous.get("metadata") is None or previous.get("protocol") is None or \
            previous.get("inCommitTimestampOpt") is not None or previous.get("lastManifestCommit") is not None:
        return None
    new = copy.deepcopy(previous)
    files = new.get("allFiles")
    by_path = {f["path"]: f for f in files} if files is not None else None
    if by_path is not None and len(by_path) != len(files):
        return None
    size_key = "fileSizeHistogram" if "fileSizeHistogram" in new else "histogramOpt"
    sizes, deleted = new.get(size_key), new.get("deletedRecordCountsHistogramOpt")
    size, count = int(new["tableSizeBytes"]), int(new["numFiles"])
    for action in actions:
        (kind, body), = action.items()
        if kind not in _ACTIONS or body.get("deletionVector") is not None:
            return None
        if kind == "cdc":
            continue
        if kind == "remove" and (body.get("extendedFileMetadata") is not True or "size" not in body):
            return None     # Delta too derives no checksum over a remove without its size
        step = 1 if kind == "add" else -1
        size += step * int(body["size"])
        count += step
        if sizes is not None:
            _move(sizes, int(body["size"]), step)
        if deleted is not None:
            deleted["deletedRecordCounts"][0] += step     # a file with no deleted rows
        if by_path is not None:
            if kind == "add":
                by_path[body["path"]] = {**body, "dataChange": False}
            elif by_path.pop(body["path"], None) is None:
                return None
    if count < 0 or size < 0:
        return None
    if by_path is not None:
        listed = list(by_path.values())
        if len(listed) != count or sum(int(f["size"]) for f in listed) != size:
            return None
        new["allFiles"] = listed
    new.update(txnId=txn_id, tableSizeBytes=size, numFiles=count)
    return new


def _move(histogram: dict[str, Any], size: int, step: int) -> None:
    """`size` added to (step 1) or taken from (-1) the bin whose lower bound is the largest at or
    below it, as Delta's FileSizeHistogram does (a size below every bound is in none)."""
    index = bisect.bisect_right(histogram["sortedBinBoundaries"], size) - 1
    if index >= 0:
        histogram["fileCounts"][index] += step
        histogram["totalBytes"][index] += step * size


def read(root: str, version: int) -> dict[str, Any] | None:
    try:
        with open(checksum_path(root, version), encoding="utf-8") as f:
            return json.loads(f.readline())
    except (OSError, ValueError):
        return None


def write_after(root: str, version: int, actions: list[dict[str, Any]], txn_id: str) -> bool:
    """Write `version`'s checksum derived from the previous version's (see the module docstring),
    put-if-absent as the log entry: whether one was written."""
    previous = read(root, version - 1)
    derived = derive(previous, actions, txn_id) if previous is not None else None
    if derived is None:
        return False
    final = checksum_path(root, version)
    temporary = os.path.join(root, LOG_DIR, f".{version:020d}.crc.{uuid.uuid4()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(json.dumps(derived, separators=(",", ":")) + "\n")
        os.link(temporary, final)
        return True
    except OSError:         # the version's checksum is there already, or the disk refused it
        return False
    finally:
        try:
            os.unlink(temporary)
        except OSError:
            pass
