"""Incremental vs FULL refresh of dynamic tables over TPC-H, measured in one run.

    make bench                                   # = .venv/bin/python benchmarks/run.py
    .venv/bin/python benchmarks/run.py --sf 1 3  # the same, explicitly

For each scale factor: a dt project under `benchmarks/work/sfN/` whose sources are (copies of)
the TPC-H Delta tables, with three DTs — (a) a filter/project over lineitem, (b) revenue per
customer (lineitem JOIN orders GROUP BY o_custkey), (c) each customer's orders ranked by value
(RANK() OVER (PARTITION BY o_custkey ...)). They are created (initial FULL), then one change
batch is committed to the sources (new orders with their lines, deleted orders with their lines,
price updates; one MERGE per source table, so the change data feed records it). Then, per DT:

1. the refresh a scheduled run would do after that change (INCREMENTAL once the engine
   supports it; the action actually taken is reported, never assumed), timed;
2. a `--full-refresh` of the same DT at the same source versions, timed;
3. the two results compared as multisets (row count and a sum of row hashes).

Repetitions restore the warehouse as it was before step 1. The same absolute change (by default
1,500 orders and their ~6,000 lines: 0.1 % of SF1) is applied at every scale factor, so the SF1
vs SF3 incremental times show whether cost follows the change or the table. Everything runs in
one SparkSession, driving the engine in-process (`dtcli.api` + `execute_plan`), after a warm-up
pass over a tiny scale factor that exercises the same code paths. Timings are wall-clock seconds
of `execute_plan` (the Spark work); planning (reading Delta logs without a JVM) is reported
separately. Only ratios measured inside one run mean anything.

Results are printed as markdown, written to `benchmarks/work/results.json`, and put between the
results markers of `benchmarks/README.md` (`--no-readme` to skip).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / "work"
README = HERE / "README.md"

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import tpch_data  # noqa: E402
from batches import BATCHES, change_batch  # noqa: E402

SF1_ORDERS = 1_500_000
DEFAULT_CHANGE_ORDERS = SF1_ORDERS // 1000      # 0.1 % of SF1's orders (and, ~4 lines each, of its lines)


@dataclass(frozen=True)
class BenchTable:
    key: str
    name: str
    what: str
    target: float             # required speed-up of incremental over FULL at SF10, recent batch
    sql: str
    inputs: tuple[str, ...] = ()
    floor_key: str = ""       # the DT column the floor's commit names the removed rows by


TABLES = (
    BenchTable("a", "shipped_lines", "filter/project over lineitem", 10.0, inputs=("lineitem",),
               floor_key="l_orderkey", sql="""
        -- (a) Shipped (fulfilled) lines with their net revenue.
        SELECT l_orderkey, l_linenumber, l_partkey, l_suppkey, l_quantity, l_extendedprice,
               l_discount, l_extendedprice * (1 - l_discount) AS revenue,
               l_shipdate, l_returnflag, l_shipmode
        FROM lineitem
        WHERE l_linestatus = 'F'
        """),
    BenchTable("b", "customer_revenue", "lineitem ⋈ orders, GROUP BY o_custkey", 5.0,
               inputs=("lineitem", "orders"), floor_key="o_custkey", sql="""
        -- (b) Revenue per customer.
        SELECT o.o_custkey,
               COUNT(*) AS line_count,
               SUM(l.l_quantity) AS quantity,
               SUM(l.l_extendedprice * (1 - l.l_discount)) AS revenue
        FROM lineitem AS l
        JOIN orders AS o ON l.l_orderkey = o.o_orderkey
        GROUP BY o.o_custkey
        """),
    BenchTable("c", "order_rank", "RANK() OVER (PARTITION BY o_custkey ORDER BY o_totalprice DESC)", 5.0,
               inputs=("orders",), floor_key="o_custkey", sql="""
        -- (c) Each customer's orders ranked by value.
        SELECT o_custkey, o_orderkey, o_orderdate, o_totalprice,
               RANK() OVER (PARTITION BY o_custkey ORDER BY o_totalprice DESC) AS price_rank
        FROM orders
        """),
)


def log(msg: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


def sf_label(sf: float) -> str:
    return f"SF{sf:g}"


# ---- project and data ---------------------------------------------------------------------

# The Spark settings of every session the benchmarks start (dt's, the peers'): one driver
# with both cores, as a user runs on a laptop or a single small VM.
SESSION = {"spark.master": "local[2]", "spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"}


def write_project(root: Path, sources: dict[str, Path], tables=TABLES) -> Path:
    project = root / "project"
    if project.exists():
        shutil.rmtree(project)
    (project / "tables").mkdir(parents=True)
    lines = ["# Generated by benchmarks/run.py; recreated on every run.",
             "name: tpch_bench", "dialect: spark", f"warehouse: {root / 'warehouse'}",
             "spark:", f"  master: {SESSION['spark.master']}", "  conf:",
             *[f"    {k}: '{v}'" for k, v in SESSION.items() if k != "spark.master"],
             "defaults:", "  target_lag: 1 hour", "  refresh_mode: auto", "sources:"]
    keys = {"lineitem": "[l_orderkey, l_linenumber]", "orders": "[o_orderkey]", "customer": "[c_custkey]"}
    for name, path in sources.items():
        lines += [f"  {name}:", f"    path: {path}", f"    primary_key: {keys[name]}"]
    (project / "dt_project.yml").write_text("\n".join(lines) + "\n")
    for t in tables:
        (project / "tables" / f"{t.name}.sql").write_text(textwrap.dedent(t.sql).strip() + "\n")
    return project


def copy_tree(source: Path, target: Path) -> None:
    """Snapshot/restore a warehouse: data files hard-linked, logs copied (see working_copy)."""
    tpch_data.working_copy(source, target)


def clear_delta_cache(spark) -> None:
    """Tables were replaced on disk behind Spark's back: drop its cached Delta snapshots (and
    the reads dt keeps from one run to the next, engine/runtime/pinned.py)."""
    from dtcli.engine.runtime.pinned import forget_carried

    forget_carried()
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    spark.catalog.clearCache()


# ---- refreshing ---------------------------------------------------------------------------

def refresh(spark, project_dir: Path, name: str | None, *, full: bool) -> dict[str, dict[str, Any]]:
    """Plan and execute one refresh (of `name`, or of every DT), timing the Spark part."""
    from dtcli import api
    from dtcli.engine.runtime.executor import execute_plan
    from dtcli.model import SUCCEEDED
    from dtcli.state.delta_log import open_table

    started = time.perf_counter()
    checked = api.check(project_dir, with_stats=True)
    project = checked.project
    plan = api.plan_run(checked, [name] if name else None, full_refresh=full)
    profiler = cProfile.Profile() if PROFILE else None
    planned = time.perf_counter()
    if profiler:
        profiler.enable()
    try:
        records = execute_plan(spark, plan)
    finally:
        if profiler:
            profiler.disable()
    done = time.perf_counter()
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.state != SUCCEEDED:
            raise RuntimeError(f"{record.name}: {record.refresh_action} refresh {record.state}: "
                               f"{record.state_message}")
        table = open_table(project.table_path(record.name))
        last = table.history(1)[0] if table is not None else {}
        mode = checked.modes[record.name]
        out[record.name] = {
            "action": record.refresh_action, "mode": mode.mode, "mode_reason": mode.reason,
            "message": record.state_message,
            "seconds": done - planned, "plan_seconds": planned - started,
            "profile": engine_profile(profiler, done - planned) if profiler else [],
            "strategy": record.refresh_strategy,
            "inserted": record.num_inserted_rows, "deleted": record.num_deleted_rows,
            "version": record.table_version, "source_versions": record.source_versions,
            "commit": {"operation": last.get("operation"),
                       "metrics": {k: v for k, v in (last.get("operationMetrics") or {}).items()
                                   if k in ("executionTimeMs", "scanTimeMs", "rewriteTimeMs",
                                            "numTargetFilesAdded", "numTargetFilesRemoved",
                                            "numTargetRowsCopied", "numTargetRowsInserted",
                                            "numTargetRowsDeleted", "numOutputRows", "numFiles",
                                            "numAddedFiles", "numRemovedFiles", "numCopiedRows",
                                            "numDeletedRows")}},
        }
    return out


PROFILE = True


def engine_profile(profiler, total: float, top: int = 8) -> list[dict[str, Any]]:
    """Where a refresh spends its time, by dtcli function and without overlap: a function's share
    is its cumulative time minus that of the dtcli functions it calls, i.e. the time it is the
    innermost dtcli frame, which includes the Spark work it waits for through py4j. The shares
    add up to the refresh's time."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]

    def ours(key) -> bool:
        return "/dtcli/" in key[0]

    share = {key: row[3] for key, row in stats.items() if ours(key)}
    for key, (_, _, _, _, callers) in stats.items():
        if not ours(key):
            continue
        for caller, (_, _, _, cumtime) in callers.items():
            if caller in share and caller != key:
                share[caller] -= cumtime
    rows = []
    for (filename, line, func), seconds in share.items():
        rel = filename.split("/dtcli/", 1)[1][:-3].replace("/", ".")
        rows.append({"function": f"{rel}.{func}:{line}", "seconds": round(max(seconds, 0.0), 2)})
    rows.sort(key=lambda r: -r["seconds"])
    return [r for r in rows[:top] if r["seconds"] >= 0.02 * total]


def fingerprint(spark, path: str, version: int) -> tuple[int, str]:
    """Row count and sum of row hashes: equal for equal multisets, cheap to compare."""
    from pyspark.sql import functions as F

    df = spark.read.format("delta").option("versionAsOf", version).load(path)
    digest = F.xxhash64(*[F.col(c) for c in df.columns]).cast("decimal(38,0)")
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(digest).alias("h")).first()
    return int(row["n"]), str(row["h"])


def diff_rows(spark, path: str, v1: int, v2: int) -> tuple[int, int]:
    a = spark.read.format("delta").option("versionAsOf", v1).load(path)
    b = spark.read.format("delta").option("versionAsOf", v2).load(path)
    return a.exceptAll(b).count(), b.exceptAll(a).count()


@dataclass
class ScaleResult:
    sf: float
    batch: str
    source_rows: dict[str, int]
    change: dict[str, Any]
    creation: dict[str, dict[str, Any]]
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)   # per DT, per repetition
    dt_rows: dict[str, int] = field(default_factory=dict)


@dataclass
class Prepared:
    """One scale factor's sources and DTs, created once and restored before every batch."""

    sf: float
    root: Path
    pristine: dict[str, str]
    sources: dict[str, Path]
    project_dir: Path
    creation: dict[str, dict[str, Any]]
    rows: dict[str, int]

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def created(self) -> Path:
        return self.root / "warehouse.created"


def prepare(spark, sf: float, tables=TABLES, say=log) -> Prepared:
    pristine = tpch_data.ensure(sf, log=say)
    root = WORK / f"sf{sf:g}"
    sources = {table: root / "sources" / table for table in pristine}
    for table, path in pristine.items():
        copy_tree(Path(path), sources[table])
    warehouse = root / "warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    clear_delta_cache(spark)
    project_dir = write_project(root, sources, tables)
    say(f"{sf_label(sf)}: creating {', '.join(t.name for t in tables)} (initial FULL)")
    creation = {}
    for t in tables:
        creation.update(refresh(spark, project_dir, t.name, full=False))
        say(f"  {t.name}: {creation[t.name]['action']} in {creation[t.name]['seconds']:.1f}s "
            f"({creation[t.name]['inserted']:,} rows)")
    prepared = Prepared(sf, root, pristine, sources, project_dir, creation,
                        {t: tpch_data.row_count(sf, t) for t in pristine})
    copy_tree(warehouse, prepared.created)
    return prepared


def restore_table(spark, snapshot: Path, warehouse: Path, name: str) -> None:
    copy_tree(snapshot / name, warehouse / name)
    clear_delta_cache(spark)


def run_batch(spark, p: Prepared, kind: str, *, change_orders: int, repeat: int, verify: bool,
              peers: bool, tables=TABLES, say=log) -> ScaleResult:
    """One change batch at one scale factor: per DT, dt's refresh after it, FULL at the same
    versions, and (with `peers`) the floor and the hand-written MERGE, each from the same
    state of the DT."""
    import floor
    import handwritten

    for table, path in p.pristine.items():
        copy_tree(Path(path), p.sources[table])
    copy_tree(p.created, p.warehouse)
    clear_delta_cache(spark)
    change = change_batch(spark, p.sf, p.pristine, p.sources, change_orders, say=say, kind=kind)
    say(f"{sf_label(p.sf)}: {kind} change batch committed"
        f"{'' if change['replayed'] else ' in ' + str(change['seconds']) + 's'}: "
        f"orders +{change['orders']['inserted']} -{change['orders']['deleted']} "
        f"~{change['orders']['updated']}, lineitem +{change['lineitem']['inserted']} "
        f"-{change['lineitem']['deleted']} ~{change['lineitem']['updated']}")
    result = ScaleResult(p.sf, kind, p.rows, change, p.creation)
    before = p.root / "warehouse.before-refresh"
    copy_tree(p.warehouse, before)
    paths = {t: str(path) for t, path in p.sources.items()}
    v1 = {t: change[t]["version"] for t in ("orders", "lineitem")}
    v0 = {t: v - 1 for t, v in v1.items()}
    for rep in range(repeat):
        if rep:
            copy_tree(before, p.warehouse)
            clear_delta_cache(spark)
        for t in tables:
            dt_path = str(p.warehouse / t.name)
            after = refresh(spark, p.project_dir, t.name, full=False)[t.name]
            removed, written = floor.committed_rows(spark, dt_path, after["version"])
            full = refresh(spark, p.project_dir, t.name, full=True)[t.name]
            if after["source_versions"] != full["source_versions"]:
                raise RuntimeError(f"{t.name}: refreshes read different versions "
                                   f"{after['source_versions']} vs {full['source_versions']}")
            run = {"after_change": after, "full": full}
            truth = fingerprint(spark, dt_path, full["version"]) if verify or peers else None
            if verify:
                mine = fingerprint(spark, dt_path, after["version"])
                run["rows"], run["equal"] = truth[0], mine == truth
                if mine != truth:
                    run["diff"] = diff_rows(spark, dt_path, after["version"], full["version"])
                result.dt_rows[t.name] = truth[0]
            if peers:
                restore_table(spark, before, p.warehouse, t.name)
                changed = {i: (paths[i], v0[i], v1[i]) for i in t.inputs}
                run["floor"] = floor.measure(spark, dt_path, changed, removed, written, t.floor_key)
                restore_table(spark, before, p.warehouse, t.name)
                started = time.perf_counter()
                metrics = handwritten.JOBS[t.name](spark, dt_path, paths, v0, v1)
                run["merge"] = {"seconds": time.perf_counter() - started, "metrics": metrics}
                from delta.tables import DeltaTable

                version = DeltaTable.forPath(spark, dt_path).history(1).select("version").first()[0]
                run["merge"]["equal"] = fingerprint(spark, dt_path, version) == truth
            for df in (removed, written):
                release_checkpoint(df)
            result.runs.setdefault(t.name, []).append(run)
            say(f"  {t.name} #{rep + 1}: {after['action']} [{after.get('strategy')}]"
                f"{' (' + after['message'] + ')' if after.get('message') else ''} {after['seconds']:.2f}s "
                f"(+{after['inserted']:,} -{after['deleted']:,}) vs FULL {full['seconds']:.2f}s"
                + (f", floor {run['floor']['seconds']:.2f}s, MERGE {run['merge']['seconds']:.2f}s"
                   f" (MERGE {'equal' if run['merge']['equal'] else 'DIFFERS'})" if peers else "")
                + (f"; results {'equal' if run['equal'] else 'DIFFER ' + str(run.get('diff'))}"
                   if "equal" in run else ""))
    shutil.rmtree(before, ignore_errors=True)
    return result


def release_checkpoint(df) -> None:
    from dtcli.engine.runtime.checkpoints import release

    release(df)


def delta_floor(spark, repeat: int) -> dict[str, float]:
    """Best-of-`repeat` seconds of single Delta commits on a 1,000-row table (deletion vectors
    and change data feed on, as a DT has): what any refresh pays before it computes anything."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    path = str(WORK / "floor")
    shutil.rmtree(path, ignore_errors=True)
    base = spark.range(1000).select(F.col("id"), (F.col("id") * 2).alias("v"))
    writer = (base.write.format("delta").option("delta.enableDeletionVectors", "true")
              .option("delta.enableChangeDataFeed", "true"))
    writer.save(path)
    ten = spark.range(100, 110).select(F.col("id"), F.lit(7).cast("long").alias("v"))
    ops = {
        "append 10 rows": lambda: ten.write.format("delta").mode("append").save(path),
        "replaceWhere 10 rows (delete + insert, one commit)":
            lambda: ten.write.format("delta").mode("overwrite")
            .option("replaceWhere", "id >= 100 AND id < 110").save(path),
        "MERGE 10 rows": lambda: DeltaTable.forPath(spark, path).alias("t")
            .merge(ten.alias("s"), "t.id = s.id").whenMatchedDelete()
            .whenNotMatchedInsertAll().execute(),
        "overwrite all 1,000 rows": lambda: base.write.format("delta").mode("overwrite").save(path),
    }
    best: dict[str, float] = {}
    for _ in range(max(repeat, 3)):
        for name, op in ops.items():
            started = time.perf_counter()
            op()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
    shutil.rmtree(path, ignore_errors=True)
    return best


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(line for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} cores ({cpu}){mem}, {system}, Python {platform.python_version()}"


def load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main(argv: list[str] | None = None) -> None:
    from report import markdown, update_readme

    parser = argparse.ArgumentParser(description="dt incremental refresh against FULL, its floor and a "
                                                 "hand-written MERGE (TPC-H)")
    parser.add_argument("--sf", type=float, nargs="+", default=[1, 3], help="scale factors (default 1 3)")
    parser.add_argument("--batch", nargs="+", choices=BATCHES, default=list(BATCHES),
                        help="change batches (default: recent spread)")
    parser.add_argument("--change-orders", type=int, default=DEFAULT_CHANGE_ORDERS,
                        help="orders changed at every SF (a third new, deleted, repriced; default 0.1%% of SF1)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per DT (the best is reported)")
    parser.add_argument("--repeat-large", type=int, default=1,
                        help="repetitions from SF10 up (default 1)")
    parser.add_argument("--tables", nargs="+", choices=[t.key for t in TABLES], default=[t.key for t in TABLES])
    parser.add_argument("--no-peers", dest="peers", action="store_false",
                        help="skip the floor and the hand-written MERGE")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="skip comparing the incremental result with the FULL one")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false")
    parser.add_argument("--no-profile", dest="profile", action="store_false",
                        help="do not profile the engine's Python functions (cProfile)")
    parser.add_argument("--no-readme", dest="readme", action="store_false", help="do not update README.md")
    parser.add_argument("--shuffle-partitions", default="8")
    parser.add_argument("--driver-memory", default="8g")
    args = parser.parse_args(argv)
    scales = [int(s) if float(s).is_integer() else s for s in args.sf]
    tables = tuple(t for t in TABLES if t.key in args.tables)
    global PROFILE
    PROFILE = args.profile

    from dtcli.engine.launch.session import local_session

    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": git("log", "-1", "--format=%h") or "?",
            "dirty": bool(git("status", "--porcelain", "--", "dtcli", "benchmarks")),
            "machine": machine(), "repeat": args.repeat, "repeat_large": args.repeat_large,
            "load_before": load_average(),
            "session": f"local[2], spark.driver.memory {args.driver_memory}, "
                       f"spark.sql.shuffle.partitions {args.shuffle_partitions}, one session for the whole run"}
    for sf in scales:           # generate data before the JVM starts: it needs the cores
        tpch_data.ensure(sf, log=log)
    extra = {"spark.driver.memory": args.driver_memory,
             "spark.sql.shuffle.partitions": args.shuffle_partitions}
    spark = local_session(extra=extra)
    results: list[ScaleResult] = []
    try:
        if args.warmup:
            started = time.perf_counter()
            log("warm-up: the whole pipeline at SF0.01 (not reported)")
            quiet = lambda m: None  # noqa: E731
            warm = prepare(spark, 0.01, tables, say=quiet)
            for kind in args.batch:
                run_batch(spark, warm, kind, change_orders=max(3, args.change_orders // 100), repeat=1,
                          verify=False, peers=args.peers, tables=tables, say=quiet)
            log(f"warm-up done in {time.perf_counter() - started:.0f}s")
        for sf in scales:
            prepared = prepare(spark, sf, tables)
            for kind in args.batch:
                results.append(run_batch(spark, prepared, kind, change_orders=args.change_orders,
                                         repeat=args.repeat if sf < 10 else args.repeat_large,
                                         verify=args.verify, peers=args.peers, tables=tables))
        log("Delta's fixed cost per commit (1,000-row table)")
        meta["floor"] = delta_floor(spark, args.repeat)
    finally:
        spark.stop()
    meta["load_after"] = load_average()
    body = markdown(results, meta, tables)
    print()
    print(body)
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "results.json").write_text(json.dumps(
        {"meta": meta, "results": [r.__dict__ for r in results]}, indent=1, default=str))
    if args.readme:
        given = sys.argv[1:] if argv is None else argv
        command = (f"`.venv/bin/python benchmarks/run.py {' '.join(given)}`" if given else
                   "`make bench` (= `.venv/bin/python benchmarks/run.py --sf 1 3`)")
        update_readme(body, command)
        log(f"results written to {README.relative_to(REPO)}")


if __name__ == "__main__":
    main()
