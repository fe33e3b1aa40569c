"""state/version_checksum.py without a JVM: the checksum file a driver commit writes beside its
version, derived from the previous version's as Delta would derive it, and none where it cannot
be exact. (That Delta reads it and agrees with its own state of the version is
tests/spark/test_driver_commits.py's.)"""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from dtcli.state import driver_commit, version_checksum

BOUNDS = [0, 8192, 16384]


def _table_with_checksum(tmp_path):
    """A deltalake table of two files with a version-1 checksum as Spark writes one."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"k": pa.array([1, 2], pa.int32())}))
    write_deltalake(path, pa.table({"k": pa.array([3], pa.int32())}), mode="append")
    log = [json.loads(line) for v in (0, 1)
           for line in Path(f"{path}/_delta_log/{v:020d}.json").read_text().splitlines()]
    adds = [a["add"] for a in log if "add" in a]
    sizes = [a["size"] for a in adds]
    checksum = {"txnId": "t1", "tableSizeBytes": sum(sizes), "numFiles": 2, "numDeletedRecordsOpt": 0,
                "numDeletionVectorsOpt": 0, "numMetadata": 1, "numProtocol": 1, "setTransactions": [],
                "domainMetadata": [], "metadata": next(a["metaData"] for a in log if "metaData" in a),
                "protocol": next(a["protocol"] for a in log if "protocol" in a),
                "fileSizeHistogram": {"sortedBinBoundaries": BOUNDS, "fileCounts": [2, 0, 0],
                                      "totalBytes": [sum(sizes), 0, 0]},
                "deletedRecordCountsHistogramOpt": {"deletedRecordCounts": [2] + [0] * 9},
                "allFiles": [{**a, "dataChange": False} for a in adds]}
    with open(version_checksum.checksum_path(path, 1), "w", encoding="utf-8") as f:
        f.write(json.dumps(checksum) + "\n")
    return path, adds


def _remove(add: dict) -> dict:
    return {"remove": {"path": add["path"], "deletionTimestamp": 1, "dataChange": True,
                       "extendedFileMetadata": True, "partitionValues": {}, "size": add["size"]}}


def test_the_module_doctests():
    assert doctest.testmod(version_checksum).failed == 0


def test_a_driver_commit_writes_its_versions_checksum(tmp_path):
    path, adds = _table_with_checksum(tmp_path)
    table = driver_commit.writable(path)
    add = driver_commit.write_file(table.root, pa.table({"k": pa.array([9, 8, 7], pa.int32())}, schema=table.schema))
    assert driver_commit.commit(path, 2, [{"add": add}, _remove(adds[0])], {"operation": "WRITE"})
    after = version_checksum.read(path, 2)
    info = json.loads(Path(driver_commit.commit_path(path, 2)).read_text().splitlines()[0])["commitInfo"]
    assert after["txnId"] == info["txnId"]
    assert after["numFiles"] == 2
    assert after["tableSizeBytes"] == adds[1]["size"] + add["size"]
    assert sorted(f["path"] for f in after["allFiles"]) == sorted([adds[1]["path"], add["path"]])
    assert all(f["dataChange"] is False for f in after["allFiles"])
    assert after["fileSizeHistogram"]["fileCounts"] == [2, 0, 0]
    assert after["fileSizeHistogram"]["totalBytes"][0] == after["tableSizeBytes"]
    assert after["metadata"] == version_checksum.read(path, 1)["metadata"]
    # a frontier-only commit: the same table, its own transaction
    assert driver_commit.commit(path, 3, [], {"operation": "DT RECORD FRONTIER"})
    same = version_checksum.read(path, 3)
    assert {k: v for k, v in same.items() if k != "txnId"} == {k: v for k, v in after.items() if k != "txnId"}
    # the table empties: no file left
    gone = [_remove(f) for f in same["allFiles"]]
    assert driver_commit.commit(path, 4, gone, {"operation": "WRITE"})
    empty = version_checksum.read(path, 4)
    assert (empty["numFiles"], empty["tableSizeBytes"], empty["allFiles"]) == (0, 0, [])
    assert empty["deletedRecordCountsHistogramOpt"]["deletedRecordCounts"][0] == 0


def test_no_checksum_where_it_cannot_be_exact(tmp_path):
    path, adds = _table_with_checksum(tmp_path)
    # a removed file the previous version does not list: not the table this derives from
    stranger = {**adds[0], "path": "part-elsewhere.parquet"}
    assert driver_commit.commit(path, 2, [_remove(stranger)], {"operation": "WRITE"})
    assert version_checksum.read(path, 2) is None
    # no previous checksum: none either (Delta reads the version from its log)
    assert driver_commit.commit(path, 3, [], {"operation": "WRITE"})
    assert version_checksum.read(path, 3) is None
    before = version_checksum.read(path, 1)
    # a remove without its size, a deletion vector, a field this does not know, a metadata action
    no_size = _remove(adds[0])
    del no_size["remove"]["size"]
    with_dv = {"add": {**adds[0], "deletionVector": {"storageType": "u"}}}
    assert version_checksum.derive(before, [no_size], "x") is None
    assert version_checksum.derive(before, [with_dv], "x") is None
    assert version_checksum.derive({**before, "somethingNew": 1}, [], "x") is None
    assert version_checksum.derive(before, [{"metaData": before["metadata"]}], "x") is None
    # without the file list (a table of many files), the sums alone
    sums = version_checksum.derive({k: v for k, v in before.items() if k != "allFiles"}, [_remove(adds[0])], "x")
    assert sums["numFiles"] == 1 and "allFiles" not in sums
