"""state/driver_commit.py without a JVM: which tables it may write, and its log entries made
put-if-absent, read back by deltalake (an independent reader)."""

from __future__ import annotations

import json
from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from dtcli.state import driver_commit


def _table(tmp_path, name="t", **kw):
    path = str(tmp_path / name)
    data = pa.table({"k": pa.array([1, 2, None], pa.int32()), "s": ["a", None, "c"],
                     "d": pa.array([Decimal("1.50"), None, Decimal("-2.25")], pa.decimal128(12, 2))})
    write_deltalake(path, data, **kw)
    return path


def test_a_plain_table_is_writable_and_its_commit_reads_back(tmp_path):
    path = _table(tmp_path)
    table = driver_commit.writable(path)
    assert table is not None and table.version == 0 and not table.cdf
    assert table.schema.names == ["k", "s", "d"]
    old = DeltaTable(path).file_uris()
    rows = pa.table({"k": pa.array([7], pa.int32()), "s": ["z"], "d": pa.array([Decimal("0.01")], pa.decimal128(12, 2))},
                    schema=table.schema)
    add = driver_commit.write_file(table.root, rows)
    assert json.loads(add["stats"]) == {"numRecords": 1, "nullCount": {"k": 0, "s": 0, "d": 0}}
    removes = [{"remove": {"path": u.rsplit("/", 1)[-1], "dataChange": True, "deletionTimestamp": 1}} for u in old]
    assert driver_commit.commit(table.root, 1, [{"add": add}, *removes], {"operation": "WRITE", "userMetadata": "m"})
    # the version exists now: a second commit of it is refused and changes nothing
    assert not driver_commit.commit(table.root, 1, [], {"operation": "WRITE"})
    read = DeltaTable(path)
    assert read.version() == 1
    assert read.to_pyarrow_table().to_pylist() == [{"k": 7, "s": "z", "d": Decimal("0.01")}]
    assert read.history(1)[0]["userMetadata"] == "m"
    assert not [p for p in (tmp_path / "t" / "_delta_log").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("kw, why", [
    ({"partition_by": ["s"]}, "partitioned"),
    ({"configuration": {"delta.appendOnly": "true"}}, "append-only"),
    ({"configuration": {"delta.checkpointInterval": "1"}}, "every version is a checkpoint's"),
])
def test_tables_it_may_not_write(tmp_path, kw, why):
    assert driver_commit.writable(_table(tmp_path, **kw)) is None, why


def test_a_timestamp_column_or_a_remote_path_is_not_written(tmp_path):
    path = str(tmp_path / "ts")
    write_deltalake(path, pa.table({"t": pa.array([0], pa.timestamp("us", tz="UTC"))}))
    assert driver_commit.writable(path) is None
    assert driver_commit.writable("s3a://bucket/table") is None
    assert driver_commit.writable(str(tmp_path / "missing")) is None
