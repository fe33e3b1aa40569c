"""Fixtures of the Spark tests beyond the shared session (tests/conftest.py)."""

from __future__ import annotations

import pytest


class FeedReads(list):
    """Paths of the change feeds read, whoever read them; `by_spark`: those Spark read."""

    def __init__(self) -> None:
        super().__init__()
        self.by_spark: list[str] = []

    def clear(self) -> None:
        super().clear()
        self.by_spark.clear()


@pytest.fixture
def feed_reads(monkeypatch) -> FeedReads:
    """The change data feed reads of the refreshes, by table path, by Spark or from the feed's
    files on the driver: spies on dt's own functions, the reads themselves real."""
    from dtcli.engine.runtime import change_cache, changes

    reads = FeedReads()
    real, real_files = changes.read_feed, change_cache._read_files

    def counted(spark, path, start, end):
        reads.append(path)
        reads.by_spark.append(path)
        return real(spark, path, start, end)

    def counted_files(spark, path, start, end):
        found = real_files(spark, path, start, end)
        if found is not None:
            reads.append(path)
        return found
    monkeypatch.setattr(changes, "read_feed", counted)
    monkeypatch.setattr(change_cache, "read_feed", counted)
    monkeypatch.setattr(change_cache, "_read_files", counted_files)
    return reads
