"""Entry point that spark-submit runs: execute one plan, streaming progress as JSON lines.

Usage (by the launcher): spark-submit ... driver.py PLAN.json
                     or: spark-submit ... driver.py --serve HOST:PORT IDLE_SECONDS APP_NAME
                         (plan paths from dt's socket, one per line: see serve.py)
Events go to stdout prefixed with EVENT_PREFIX; Spark's own logging goes to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

EVENT_PREFIX = "@@dt "
STOP_FILE = "stop"   # created next to the plan by the launcher: finish the current refresh, then stop


def emit(event: dict) -> None:
    sys.stdout.write(EVENT_PREFIX + json.dumps(event, default=str) + "\n")
    sys.stdout.flush()


def run_plan(spark, plan, should_stop) -> int:
    """Execute one plan in `spark`, streaming its events; 1 when a refresh failed."""
    from dtcli.engine.executor import execute_plan
    from dtcli.engine.progress import SparkProgress
    from dtcli.model import any_failed

    progress = SparkProgress(spark, emit)      # "progress" events while a refresh runs
    try:
        records = execute_plan(spark, plan, progress.emit, should_stop=should_stop)
    finally:
        progress.close()
    emit({"event": "done", "run_id": plan.run_id})
    return 1 if any_failed(records) else 0


def configure_storage(spark) -> None:
    """History appends go through deltalake here too: same object-store settings as Spark's;
    and error messages sent back must not quote their keys."""
    from dtcli import redact
    from dtcli.state import storage

    conf = dict(spark.sparkContext.getConf().getAll())
    storage.configure(conf)
    redact.remember(conf)
    from dtcli.state.lease import renew_in_driver

    renew_in_driver()   # the warehouse lease dt holds for this application (S3 warehouses)


def main(argv: list[str]) -> int:
    from dtcli.engine.session import build_session
    from dtcli.model import Plan

    if argv and argv[0] == "--serve":      # the warm application of `dt run --watch`
        from dtcli.engine.serve import PlanInbox, connect, serve

        address, idle, app_name = argv[1:4]
        inbox = PlanInbox(connect(address))     # first: dt waits for us before sending a plan
        emit({"event": "started"})
        spark = build_session({}, app_name=app_name)
        configure_storage(spark)

        def one(path: Path, should_stop) -> int:
            return run_plan(spark, Plan.from_json(path.read_text(encoding="utf-8")), should_stop)

        code = serve(inbox, float(idle), emit, one)
        spark.stop()
        return code
    plan_path = Path(argv[0])
    plan = Plan.from_json(plan_path.read_text(encoding="utf-8"))
    stop_file = plan_path.with_name(STOP_FILE)
    emit({"event": "started"})
    spark = build_session({}, app_name=f"dt:{plan.project}")
    configure_storage(spark)
    code = run_plan(spark, plan, stop_file.exists)
    spark.stop()
    return code


if __name__ == "__main__":
    # spark-submit runs this file as a script; make the package importable from its checkout too.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main(sys.argv[1:]))
