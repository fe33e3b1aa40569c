"""How an incremental refresh that cannot go on ends, in the same refresh and with the reason
recorded: its changes cannot be read (vacuumed, feed off, schema changed): REINITIALIZE; the
change cannot be applied, or the refresh fails: FULL under ADAPTIVE, or under a forced
`refresh_mode: incremental` a failure that says why. Shared by the incremental and top-N
strategies, each with its own recompute."""

from __future__ import annotations

from collections.abc import Callable

from dtcli.engine.runtime import apply as applier
from dtcli.engine.runtime.audit import AuditFailed
from dtcli.engine.runtime.changes import ChangesUnavailable
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.model import FULL, INCREMENTAL, REINITIALIZE
from dtcli.sql.incremental_rewrite import Unsupported

Recompute = Callable[[RefreshContext], RefreshResult]


def guarded(ctx: RefreshContext, run: Callable[[], RefreshResult], recompute: Recompute) -> RefreshResult:
    """Run an incremental refresh; when its changes cannot be read, `recompute(ctx)` reinitializes;
    when the change cannot be applied or the refresh fails, it recomputes FULL (a forced
    `refresh_mode: incremental` fails instead). Either way the action and reason are recorded."""

    def fallback(ctx: RefreshContext, action: str, reason: str) -> RefreshResult:
        ctx.frontier.refresh_action = action
        result = recompute(ctx)
        result.fallback_action, result.message = action, reason
        if action == REINITIALIZE:
            result.reinit_reason = reason
        return result

    try:
        return run()
    except AuditFailed:         # the change was computed and breaks a test: nothing to recompute
        raise
    except ChangesUnavailable as err:
        return fallback(ctx, REINITIALIZE, str(err))
    except (Unsupported, applier.Inconsistent) as err:
        _forced(ctx, err, str(err))
        return fallback(ctx, FULL, f"incremental refresh not possible, refreshed FULL: {err}")
    except Exception as err:    # broad: any failure, a bug in dt's rewrite too, is answered by a FULL recompute
        found = applier.inconsistent(err)      # raised inside the job that computed the write
        if found is not None:
            _forced(ctx, err, str(found))
            return fallback(ctx, FULL, f"incremental refresh not possible, refreshed FULL: {found}")
        _forced(ctx, err, None)
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        return fallback(ctx, FULL, f"incremental refresh failed, refreshed FULL: {first}")


class ForcedIncrementalFailed(Exception):
    """An incremental refresh that failed on a DT whose `refresh_mode` is `incremental`: the
    refresh fails with the error (as Snowflake does for a forced mode) instead of recomputing
    FULL, which would show only as a FULL in the history. Carries the error's condition."""

    def __init__(self, message: str, condition: str | None):
        super().__init__(message)
        self.condition = condition

    def getCondition(self) -> str | None:     # read as Spark's errors are (spark_errors.error_condition)
        return self.condition


def _forced(ctx: RefreshContext, err: BaseException, what: str | None) -> None:
    """Raise when the user forced INCREMENTAL; return under ADAPTIVE (which falls back to FULL)."""
    if ctx.step.refresh_mode != INCREMENTAL:
        return
    from dtcli.engine.runtime.spark_errors import error_condition, error_message

    message = (what or error_message(err))[:300]
    raise ForcedIncrementalFailed(
        f"incremental refresh failed: {message} (refresh_mode is incremental, so it is not "
        f"recomputed FULL instead; `dt run --select {ctx.step.name} --full-refresh` recomputes "
        "once, refresh_mode: auto falls back to FULL by itself)",
        error_condition(err)) from err
