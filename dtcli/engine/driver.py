"""Entry point that spark-submit runs: execute one plan, streaming progress as JSON lines.

Usage (by the launcher): spark-submit ... driver.py PLAN.json
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


def main(argv: list[str]) -> int:
    from dtcli.engine.executor import execute_plan
    from dtcli.engine.progress import SparkProgress
    from dtcli.engine.session import build_session
    from dtcli.model import Plan, any_failed

    plan_path = Path(argv[0])
    plan = Plan.from_json(plan_path.read_text(encoding="utf-8"))
    stop_file = plan_path.with_name(STOP_FILE)
    emit({"event": "started"})
    spark = build_session({}, app_name=f"dt:{plan.project}")
    progress = SparkProgress(spark, emit)      # "progress" events while a refresh runs
    records = execute_plan(spark, plan, progress.emit, should_stop=stop_file.exists)
    progress.close()
    emit({"event": "done"})
    spark.stop()
    return 1 if any_failed(records) else 0


if __name__ == "__main__":
    # spark-submit runs this file as a script; make the package importable from its checkout too.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main(sys.argv[1:]))
