"""Entry point that spark-submit runs: execute one plan, streaming progress as JSON lines.

Usage (by the launcher): spark-submit ... driver.py PLAN.json [OWNER OPTIONS]
                     or: spark-submit ... driver.py --serve HOST:PORT IDLE_SECONDS APP_NAME [...]
                         (plan paths from dt's socket, one per line: see serve.py)
Owner options: --owner PID:START, --heartbeat PATH (see owner_watch.py): the application stops
starting refreshes once the dt process that launched it is gone.
Events go to stdout prefixed with EVENT_PREFIX; Spark's own logging goes to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __name__ == "__main__":
    # spark-submit runs this file as a script: the package is importable from its checkout too
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from dtcli.engine.protocol import EVENT_PREFIX, STOP_FILE
from dtcli.events import Done, NotStarted, RunEvent, Started, to_wire

_silent = False      # set once dt is gone: nobody reads our stdout any more


def emit(event: RunEvent) -> None:
    if _silent:
        return      # a full pipe nobody drains would block the driver while it holds the lock
    sys.stdout.write(EVENT_PREFIX + json.dumps(to_wire(event), default=str) + "\n")
    sys.stdout.flush()


def owner_options(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """Split `--owner X` / `--heartbeat Y` off the positional arguments."""
    rest, flags = [], {}
    items = iter(argv)
    for arg in items:
        if arg in ("--owner", "--heartbeat"):
            flags[arg[2:]] = next(items, "")
        else:
            rest.append(arg)
    return rest, flags


def watch_owner(flags: dict[str, str], warehouse: str | None, closed=None):
    """Start watching the dt process that launched us (and renewing the warehouse lock)."""
    import os

    from dtcli.engine.owner_watch import OwnerWatch
    from dtcli.state import lock, owner

    renew = lock.renewer(warehouse, {"owner": flags.get("owner")}) if warehouse else (lambda: True)
    return OwnerWatch(owner.parse(flags.get("owner")), heartbeat=flags.get("heartbeat") or None,
                      closed=closed, renew=renew, parent=os.getppid(), on_gone=_go_silent).start()


def started() -> Started:
    """The Started event, naming this process: dt waits for it to end when the JVM dies under it."""
    from dtcli.state import owner

    return Started(owner.token())


def _go_silent(reason: str) -> None:
    global _silent
    _silent = True


def stop_check(watch, stop_file: Path | None = None):
    """`should_stop` for the executor: the owner's death (a reason: the rest is FAILED), or the
    user's stop request (True: the rest is SKIPPED)."""
    def should_stop():
        reason = watch.check()      # now, not at the watch thread's next poll
        if reason:
            return reason
        return bool(stop_file is not None and stop_file.exists())
    return should_stop


def run_plan(spark, plan, should_stop, before_write=lambda: None) -> int:
    """Execute one plan in `spark`, streaming its events; 1 when a refresh failed."""
    from dtcli.engine.runtime.executor import execute_plan
    from dtcli.engine.runtime.progress import SparkProgress
    from dtcli.model.refresh_record import any_failed

    progress = SparkProgress(spark, emit)      # "progress" events while refreshes run
    try:
        records = execute_plan(spark, plan, progress.emit, should_stop=should_stop, before_write=before_write)
    finally:
        progress.close()
    emit(Done(plan.run_id))
    return 1 if any_failed(records) else 0


def configure_storage(spark, renew_lease: bool = True) -> None:
    """History appends go through deltalake here too: same object-store settings as Spark's;
    and error messages sent back must not quote their keys. A plain run's driver renews dt's
    warehouse lease (S3) until it ends; the warm application does not, since dt takes and
    releases the lease pass by pass (a pass's lease is dt's own)."""
    from dtcli import redact
    from dtcli.state import storage

    conf = dict(spark.sparkContext.getConf().getAll())
    storage.configure(conf)
    redact.remember(conf)
    from dtcli.state.lease import renew_in_driver

    if renew_lease:
        renew_in_driver()   # the warehouse lease dt holds for this application (S3 warehouses)


NOT_STARTED = 3     # exit code: the application could not start a Spark session


def startup_error(exc: BaseException) -> str:
    """Spark's own condition and message for a session that could not be built: the innermost
    `[CONDITION] message` of the Java causes (the outer ones only say a builder failed)."""
    import re

    from dtcli.engine.runtime.spark_errors import error_message

    stated = re.findall(r"(\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\] [^\n]*)", str(exc))
    return stated[-1].strip() if stated else error_message(exc)


def build_session(app_name: str):
    """The application's session: spark-submit has already set every setting (the launcher's)."""
    from pyspark.sql import SparkSession

    return SparkSession.builder.appName(app_name).getOrCreate()


def main(argv: list[str]) -> int:
    from dtcli.model import Plan

    argv, flags = owner_options(argv)
    if argv and argv[0] == "--serve":      # the warm application of `dt run --watch`
        from dtcli.engine.runtime.serve import PlanInbox, connect, serve
        from dtcli.engine.runtime.table_state import warm_after_pass

        address, idle, app_name = argv[1:4]
        inbox = PlanInbox(connect(address))     # first: dt waits for us before sending a plan
        emit(started())
        watch = watch_owner(flags, None, closed=inbox.owner_gone)
        spark = build_session(app_name)
        configure_storage(spark, renew_lease=False)

        def one(path: Path, should_stop) -> int:
            from dtcli.state import lock

            plan = Plan.from_json(path.read_text(encoding="utf-8"))
            gone = stop_check(watch)
            watch.renew = lock.renewer(plan.warehouse, {"owner": flags.get("owner")})
            try:        # the lock is renewed while a pass runs: between passes dt holds none
                return run_plan(spark, plan, lambda: gone() or should_stop(), watch.check)
            finally:
                watch.renew = lambda: True
                if not (gone() or should_stop()):
                    warm_after_pass(spark, [step.path for step in plan.spark_steps])

        code = serve(inbox, float(idle), emit, one)
        spark.stop()
        return code
    plan_path = Path(argv[0])
    plan = Plan.from_json(plan_path.read_text(encoding="utf-8"))
    watch = watch_owner(flags, plan.warehouse)
    emit(started())
    try:
        spark = build_session(f"dt:{plan.project}")
        configure_storage(spark)
        # Spark builds the SQL session state (and checks the SQL settings) at its first use:
        # here, so that a setting it rejects fails the application before any refresh starts
        spark._jsparkSession.sessionState()
    except Exception as exc:    # broad: the driver's start-up, any failure is the run's NotStarted answer
        emit(NotStarted(startup_error(exc)))
        return NOT_STARTED
    code = run_plan(spark, plan, stop_check(watch, plan_path.with_name(STOP_FILE)), watch.check)
    spark.stop()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
