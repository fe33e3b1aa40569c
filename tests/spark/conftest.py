"""Fixtures of the Spark tests beyond the shared session (tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def feed_reads(monkeypatch) -> list[str]:
    """The change data feed reads of the refreshes, by table path: a spy on dt's own function,
    the reads themselves real."""
    from dtcli.engine.runtime import change_cache, changes

    reads: list[str] = []
    real = changes.read_feed

    def counted(spark, path, start, end):
        reads.append(path)
        return real(spark, path, start, end)
    monkeypatch.setattr(changes, "read_feed", counted)
    monkeypatch.setattr(change_cache, "read_feed", counted)
    return reads
