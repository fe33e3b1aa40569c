"""Each planned refresh's target: the lag it runs under and when it should complete.

Snowflake's refresh history has TARGET_LAG_SEC (the DT's target lag when it refreshed) and
COMPLETION_TARGET (the previous refresh's data timestamp plus that lag: the moment the DT
would be staler than its target). A DT with no time lag (`downstream` without a timed
consumer, or `scheduler: disable`) has neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from dtcli.model import Plan


def annotate(plan: Plan, effective: Mapping[str, int | None], stamps: Mapping[str, datetime | None]) -> Plan:
    """Record `target_lag_sec` and `completion_target` in each step's options (the driver
    copies them into the refresh records)."""
    for step in plan.steps:
        lag = effective.get(step.name)
        stamp = stamps.get(step.name)
        step.options.target_lag_sec = lag
        step.options.completion_target = (stamp + timedelta(seconds=lag)).isoformat() \
            if lag is not None and stamp is not None else None
    return plan
