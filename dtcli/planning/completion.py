"""Each planned refresh's target: the lag it runs under and when it should complete.

Snowflake's refresh history has TARGET_LAG_SEC (the DT's target lag when it refreshed) and
COMPLETION_TARGET (the previous refresh's data timestamp plus that lag: the moment the DT
would be staler than its target). A DT with no time lag (`downstream` without a timed
consumer, or `scheduler: disable`) has neither.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dtcli.plan_parts import LagTarget


def target(lag: int | None, stamp: datetime | None) -> LagTarget:
    """`lag`: the DT's effective target lag in seconds; `stamp`: its data timestamp before this
    refresh (the driver copies both into the refresh record)."""
    return LagTarget(target_lag_sec=lag,
                     completion_target=(stamp + timedelta(seconds=lag)).isoformat()
                     if lag is not None and stamp is not None else None)
