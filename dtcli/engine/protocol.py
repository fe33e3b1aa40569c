"""The wire between `dt` and its Spark application, in one place: the driver writes events to
stdout as `EVENT_PREFIX` + one JSON object per line (Spark's own logging goes to stderr); dt
asks it to stop by creating `STOP_FILE` next to the plan; the warm application of `--watch`
reads plan paths from dt's socket after presenting the token in `TOKEN_ENV`, and says why it
exits (`IDLE_EXIT`, `OWNER_GONE`).

Events the driver emits (`event` key): started, not_started {message}, plan {steps,
application_id, run_id}, start {name, action}, progress, finished {record}, catalog, resolved,
stopping, done, exit {reason}."""

from __future__ import annotations

EVENT_PREFIX = "@@dt "
STOP_FILE = "stop"        # created next to the plan by the launcher: finish the current refresh, then stop
TOKEN_ENV = "DT_SERVE_TOKEN"
IDLE_EXIT = "idle"        # the "exit" event's reason when no plan came within the idle timeout
OWNER_GONE = "owner-gone"
