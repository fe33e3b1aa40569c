"""Which commits' files are a change feed the driver can read (state/change_feed.py), and the rows
it reads from them, without a JVM (tests/spark/test_change_feed_files.py compares with Spark)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dtcli.state import change_feed
from dtcli.state.change_feed import FeedFiles, _commit_files, read_rows


def _add(path, **extra):
    return {"add": {"path": path, "partitionValues": {}, "dataChange": True, **extra}}


def test_a_commit_with_change_files_contributes_those_only(tmp_path):
    actions = [{"commitInfo": {}}, _add("part-1.parquet"), {"cdc": {"path": "_change_data/cdc%201.parquet",
                                                                     "partitionValues": {}, "dataChange": False}},
               {"remove": {"path": "part-0.parquet", "dataChange": True}}]
    assert _commit_files(str(tmp_path), actions) == [(str(tmp_path / "_change_data" / "cdc 1.parquet"), True)]


def test_an_append_s_added_files_are_inserts_and_rewrites_change_nothing(tmp_path):
    assert _commit_files(str(tmp_path), [_add("a.parquet"), _add("b.parquet")]) == \
        [(str(tmp_path / "a.parquet"), False), (str(tmp_path / "b.parquet"), False)]
    optimize = [_add("c.parquet", dataChange=False), {"remove": {"path": "a.parquet", "dataChange": False}}]
    assert _commit_files(str(tmp_path), optimize) == []


@pytest.mark.parametrize("actions", [
    [_add("a.parquet"), {"remove": {"path": "b.parquet", "dataChange": True}}],      # overwrite
    [{"remove": {"path": "b.parquet", "dataChange": True}}],                          # whole files deleted
    [_add("a.parquet", deletionVector={"storageType": "u"})],                         # rows marked deleted
    [{"metaData": {"id": "x"}}, _add("a.parquet")],                                   # schema or properties
    [{"protocol": {"minReaderVersion": 3}}],
    [_add("/elsewhere/a.parquet")],                                                   # a shallow clone's file
    [_add("s3://bucket/a.parquet")],
    [_add("g=1/a.parquet", partitionValues={"g": "1"})],
])
def test_commits_whose_files_are_not_the_whole_feed_are_refused(tmp_path, actions):
    assert _commit_files(str(tmp_path), actions) is None


def test_rows_are_weighted_by_change_type_cast_and_bounded(tmp_path):
    cdc, added = tmp_path / "cdc.parquet", tmp_path / "add.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 1, 2, None], pa.int64()), "v": ["a", "b", "c", None],
                             "_change_type": ["update_preimage", "update_postimage", "delete", "insert"]}), cdc)
    pq.write_table(pa.table({"k": pa.array([3], pa.int64()), "v": ["d"], "extra": [1]}), added)
    feed = FeedFiles("{}", ((str(cdc), True), (str(added), False)))
    assert read_rows(feed, ["k", "v"], [pa.int32(), pa.string()], 10) == \
        [(1, "a", -1), (1, "b", 1), (2, "c", -1), (None, None, 1), (3, "d", 1)]
    assert read_rows(feed, ["k"], [pa.int32()], 4) is None                # past the limit
    assert read_rows(feed, ["k", "extra"], [pa.int32(), pa.int64()], 10) is None   # not in every file
    assert read_rows(feed, ["v"], [pa.int32()], 10) is None               # does not cast
    odd = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"k": [1], "_change_type": ["upsert"]}), odd)
    assert read_rows(FeedFiles("{}", ((str(odd), True),)), ["k"], [pa.int64()], 10) is None
    assert read_rows(FeedFiles("{}", ((str(tmp_path / "gone.parquet"), False),)), ["k"], [pa.int64()], 10) is None


def test_a_range_is_read_from_its_commits_or_not_at_all(tmp_path):
    """A local table written by deltalake: appends read; a version whose commit file is gone, a
    range past the log, a remote path: None."""
    from deltalake import write_deltalake

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"k": [1, 2]}), configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(str(path), pa.table({"k": [3]}), mode="append")
    write_deltalake(str(path), pa.table({"k": [4]}), mode="append")
    feed = change_feed.feed_files(str(path), 0, 2)
    assert feed is not None and len(feed.files) == 2
    assert json.loads(feed.schema_json)["fields"][0]["name"] == "k"
    assert sorted(read_rows(feed, ["k"], [pa.int64()], 10)) == [(3, 1), (4, 1)]
    assert change_feed.feed_files(f"file://{path}", 1, 2) is not None
    assert change_feed.feed_files(str(path), 2, 3) is None
    assert change_feed.feed_files("s3a://bucket/t", 0, 1) is None
    off = tmp_path / "off"          # no change data feed: Spark refuses it, so does the driver
    write_deltalake(str(off), pa.table({"k": [1]}))
    write_deltalake(str(off), pa.table({"k": [2]}), mode="append")
    assert change_feed.feed_files(str(off), 0, 1) is None
    (path / "_delta_log" / "00000000000000000001.json").unlink()
    assert change_feed.feed_files(str(path), 0, 2) is None
