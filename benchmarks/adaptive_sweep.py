"""ADAPTIVE against the faster of INCREMENTAL and FULL, over change sizes.

    .venv/bin/python benchmarks/adaptive_sweep.py --sf 1 --percent 0.01 0.1 1 5 20

At one scale factor, for each change size (a spread batch of that share of the orders, see
batches.py; the smallest first), per DT, from the same state of the DT, after one discarded
refresh of each action (no history kept) so that none of the three below is the first to read
the change or the whole inputs:

1. the refresh a scheduled run does (ADAPTIVE chooses, from the size of the change and the
   DT's refresh history so far) — its action and time;
2. INCREMENTAL forced, timed;
3. FULL forced, timed.

The refresh history is kept across sizes (only the DTs' tables are restored), so ADAPTIVE learns
from every refresh before it, as a DT in production does. The target: at every size, the
action ADAPTIVE chose takes at most 1.2× the faster of the two.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402
from batches import change_batch, log  # noqa: E402

TARGET = 1.2


def forced(spark, project_dir: Path, name: str, action: str, learn: bool = True) -> dict[str, Any]:
    """One refresh of `name` with its planned action replaced by `action` (the planner's
    ADAPTIVE choice is what is being measured against); with `learn` False it leaves no history
    for ADAPTIVE to learn from."""
    from dtcli import api
    from dtcli.engine.runtime.executor import execute_plan

    checked = api.check(project_dir, with_stats=True)
    plan = api.plan_run(checked, [name], full_refresh=action == "FULL")
    for step in plan.steps:
        if step.name == name:
            step.action = action
    started = time.perf_counter()
    record = next(r for r in execute_plan(spark, plan, write_history=learn) if r.name == name)
    if record.state != "SUCCEEDED":
        raise RuntimeError(f"{name}: {record.state_message}")
    return {"seconds": time.perf_counter() - started, "action": record.refresh_action,
            "strategy": record.refresh_strategy, "message": record.state_message}


def sweep(spark, sf: float, percents: list[float], tables) -> list[dict[str, Any]]:
    prepared = bench.prepare(spark, sf, tables)
    before = prepared.root / "warehouse.before-refresh"
    rows: list[dict[str, Any]] = []
    for percent in sorted(percents):
        orders = max(3, round(prepared.rows["orders"] * percent / 100))
        for table, path in prepared.pristine.items():
            bench.copy_tree(Path(path), prepared.sources[table])
        for t in tables:            # the DTs as created; the history keeps what they learnt
            bench.restore_table(spark, prepared.created, prepared.warehouse, t.name)
        change = change_batch(spark, sf, prepared.pristine, prepared.sources, orders, kind="spread")
        shutil.rmtree(before, ignore_errors=True)
        bench.copy_tree(prepared.warehouse, before)
        for t in tables:
            # discarded refreshes of both actions first: the first read of a new change (and the
            # first full read of the inputs after it) pays for the disk and for compiling its
            # queries, which would otherwise fall on whichever is timed first, ADAPTIVE's choice
            for action in ("INCREMENTAL", "FULL"):
                forced(spark, prepared.project_dir, t.name, action, learn=False)
                bench.restore_table(spark, before, prepared.warehouse, t.name)
            chosen = bench.refresh(spark, prepared.project_dir, t.name, full=False)[t.name]
            times = {}
            for action in ("INCREMENTAL", "FULL"):
                bench.restore_table(spark, before, prepared.warehouse, t.name)
                times[action] = forced(spark, prepared.project_dir, t.name, action)
            bench.restore_table(spark, before, prepared.warehouse, t.name)
            best = min(times["INCREMENTAL"]["seconds"], times["FULL"]["seconds"])
            row = {"sf": sf, "percent": percent, "orders": orders, "table": t.name,
                   "chosen": chosen["action"], "chosen_seconds": chosen["seconds"],
                   "reason": chosen.get("message") or "", "incremental": times["INCREMENTAL"],
                   "full": times["FULL"], "best": best, "change": change}
            row["ratio"] = chosen["seconds"] / best if best else None
            rows.append(row)
            log(f"SF{sf:g} {percent:g}% {t.name}: ADAPTIVE chose {chosen['action']} ({chosen['seconds']:.2f}s); "
                f"INCREMENTAL {times['INCREMENTAL']['seconds']:.2f}s [{times['INCREMENTAL']['strategy']}], "
                f"FULL {times['FULL']['seconds']:.2f}s")
    shutil.rmtree(before, ignore_errors=True)
    return rows


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    out = [f"Measured {meta['date']} at commit {meta['commit']}; machine: {meta['machine']}; load average "
           f"{meta['load_before']} before, {meta['load_after']} after. Seconds of Spark work per refresh "
           "(in-process, as run.py).", "",
           "| DT | SF | change (% of orders) | ADAPTIVE chose | its time (s) | INCREMENTAL (s) | FULL (s) | "
           f"chosen ÷ faster | within {TARGET:g}× |",
           "|---|---|---:|---|---:|---:|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: (r["table"], r["sf"], r["percent"])):
        ok = r["ratio"] is not None and r["ratio"] <= TARGET
        out.append(f"| {r['table']} | {r['sf']:g} | {r['percent']:g} | {r['chosen']} | {r['chosen_seconds']:.2f} | "
                   f"{r['incremental']['seconds']:.2f} | {r['full']['seconds']:.2f} | {r['ratio']:.2f}× | "
                   f"{'yes' if ok else '**no**'} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, nargs="+", default=[1])
    parser.add_argument("--percent", type=float, nargs="+", default=[0.01, 0.1, 1, 5, 20])
    parser.add_argument("--tables", nargs="+", choices=[t.key for t in bench.TABLES],
                        default=[t.key for t in bench.TABLES])
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="skip the sweep over SF0.01 that warms the JVM first (not reported)")
    args = parser.parse_args(argv)
    tables = tuple(t for t in bench.TABLES if t.key in args.tables)
    from dtcli.engine.launch.session import local_session

    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": bench.git("log", "-1", "--format=%h") or "?", "machine": bench.machine(),
            "load_before": bench.load_average()}
    spark = local_session(extra={k: v for k, v in bench.SESSION.items() if k != "spark.master"})
    try:
        if args.warmup:     # else the first refresh of the session pays for loading Spark's code
            log("warm-up: the sweep at SF0.01 (not reported)")
            sweep(spark, 0.01, [1, 20], tables)
        rows = [r for sf in args.sf for r in sweep(spark, int(sf) if float(sf).is_integer() else sf,
                                                    args.percent, tables)]
    finally:
        spark.stop()
    meta["load_after"] = bench.load_average()
    body = markdown(rows, meta)
    print(body)
    (bench.WORK / "adaptive_sweep.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1,
                                                               default=str))


if __name__ == "__main__":
    main()
