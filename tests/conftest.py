"""Fixtures: one SparkSession for the whole run (JVM start costs seconds), tmp projects."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from dtcli.engine.session import local_session

    session = local_session(extra={"spark.sql.shuffle.partitions": "2",
                                   "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("spark-wh"))})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def pytest_collection_modifyitems(config, items):
    # Group JVM-free tests first: failures there are cheap to see.
    items.sort(key=lambda item: (("spark" in item.keywords) or ("e2e" in item.keywords), ))
