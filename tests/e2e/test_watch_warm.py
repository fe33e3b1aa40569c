"""`dt run --watch` keeps one warm Spark application across its passes (real spark-submit)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from dtcli import api
from dtcli.api.watch import watch
from dtcli.engine.launch.warm import WarmEngine
from dtcli.planning.schedule import ManualClock
from dtcli.project import load_project
from tests.e2e.shop_project import TABLES, change_shop_sources, shop_project
from tests.helpers import assert_matches_recompute

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

IDLE = 20.0


class ChangingClock(ManualClock):
    """Jumps ahead instead of sleeping; before pass 2 and 3 the sources change, and before
    pass 3 real time passes beyond the idle timeout."""

    def __init__(self, start, root, engine):
        super().__init__(start)
        self.root, self.engine, self.sleeps = root, engine, 0
        self.alive_after_idle = None

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        change_shop_sources(self.root)
        if self.sleeps == 2:
            time.sleep(IDLE + 3)
            self.alive_after_idle = self.engine.running
        super().sleep(max(seconds, 3600.0))


def test_watch_passes_share_one_application_until_it_idles_out(spark, tmp_path):
    root = shop_project(tmp_path)
    engine = WarmEngine(idle_timeout=IDLE)
    clock = ChangingClock(datetime.now(timezone.utc) - timedelta(days=1), root, engine)
    results = []

    def on_pass(n, result, wake):
        results.append(result)

    try:
        passes = watch(lambda now: api.check(root, now=now, check_sources=True, with_stats=True),
                       clock=clock, max_ticks=3, on_pass=on_pass, launcher=engine.launch)
    finally:
        engine.close()
    assert passes == 3
    apps = []
    for result in results:
        assert [r.state for r in result.records] == ["SUCCEEDED"] * len(TABLES), result.records
        ids = {r.query_id.rsplit("/", 1)[0] for r in result.records if r.refresh_action != "NO_DATA"}
        assert len(ids) == 1, ids
        apps.append(ids.pop())
    assert [r.refresh_action for r in results[1].records if r.name == "paid"] == ["INCREMENTAL"]
    # pass 2 ran in pass 1's application; after the idle timeout the driver had exited on its
    # own (freeing its resources), and pass 3 started a new one
    assert apps[0] == apps[1] != apps[2]
    assert clock.alive_after_idle is False
    assert engine.starts == 2
    project = load_project(root)
    for name in TABLES:
        assert_matches_recompute(spark, project, name)
