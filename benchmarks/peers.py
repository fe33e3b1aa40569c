"""dt against Spark Declarative Pipelines, end to end, on the same Delta sources and change.

    .venv/bin/python benchmarks/peers.py --sf 1 3 10

For each scale factor, from pristine copies of the TPC-H sources (benchmarks/data):

1. `dt run --all` creates the three DTs of run.py (a process: Python start, planning, spark-submit,
   JVM start, refreshes, history, exit), timed from start to exit;
2. `spark-pipelines run` of the same three queries as materialized views over the same Delta
   sources (the default format: Delta-format views fail on their second run, see below), timed;
3. the recent change batch is committed to the sources (batches.py);
4. `dt run --all` after the change, and `spark-pipelines run` after the change, each timed;
5. the results are compared: each DT against the view of the same query (row count and a sum
   of row hashes, in one local Spark session, not timed).

Spark Declarative Pipelines run here as pyspark 4.2 ships them: `spark-pipelines` needs
SPARK_HOME (pyspark's folder) and PYSPARK_PYTHON; the Delta jars go in SPARK_DIST_CLASSPATH and
the session's settings (Delta's extension and catalog, the Hive catalog with an embedded Derby
database, which lets a pipeline run a second time, driver memory, shuffle partitions) in a
spark-defaults.conf under SPARK_CONF_DIR: its command line's --conf does not reach the driver.
Every run recomputes every view. With `--delta-views`, the views are declared `format="delta"`
as well and that variant is run twice, to record how its second run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402
import tpch_data  # noqa: E402
from batches import cache_dir, change_batch, log  # noqa: E402

PEERS = HERE / "work" / "peers"

# The three queries of run.py as pipeline definitions, reading the Delta sources by path.
DEFINITIONS = '''
from pyspark import pipelines as dp
from pyspark.sql import functions as F

LINEITEM, ORDERS = {lineitem!r}, {orders!r}


def _read(path):
    return spark.read.format("delta").load(path)


@dp.materialized_view(name="shipped_lines"{fmt})
def shipped_lines():
    l = _read(LINEITEM)
    return (l.where(F.col("l_linestatus") == "F")
            .select("l_orderkey", "l_linenumber", "l_partkey", "l_suppkey", "l_quantity",
                    "l_extendedprice", "l_discount",
                    (F.col("l_extendedprice") * (1 - F.col("l_discount"))).alias("revenue"),
                    "l_shipdate", "l_returnflag", "l_shipmode"))


@dp.materialized_view(name="customer_revenue"{fmt})
def customer_revenue():
    l, o = _read(LINEITEM).alias("l"), _read(ORDERS).alias("o")
    return (l.join(o, F.col("l.l_orderkey") == F.col("o.o_orderkey"))
            .groupBy("o.o_custkey")
            .agg(F.count(F.lit(1)).alias("line_count"), F.sum("l.l_quantity").alias("quantity"),
                 F.sum(F.col("l.l_extendedprice") * (1 - F.col("l.l_discount"))).alias("revenue")))


@dp.materialized_view(name="order_rank"{fmt})
def order_rank():
    from pyspark.sql import Window

    o = _read(ORDERS)
    by_value = Window.partitionBy("o_custkey").orderBy(F.col("o_totalprice").desc())
    return o.select("o_custkey", "o_orderkey", "o_orderdate", "o_totalprice",
                    F.rank().over(by_value).alias("price_rank"))
'''


def sdp_project(root: Path, sources: dict[str, Path], delta_format: bool) -> dict[str, str]:
    """A pipeline project, its Spark configuration folder, and the environment to run it."""
    from dtcli.engine.launch import jars

    project = root / "pipeline"
    shutil.rmtree(project, ignore_errors=True)
    (project / "transformations").mkdir(parents=True)
    (project / "spark-pipeline.yml").write_text(textwrap.dedent(f"""\
        name: tpch_peer
        storage: file://{project / 'storage'}
        libraries:
          - glob:
              include: transformations/**
        """))
    fmt = ', format="delta"' if delta_format else ""
    (project / "transformations" / "tpch.py").write_text(DEFINITIONS.format(
        lineitem=str(sources["lineitem"]), orders=str(sources["orders"]), fmt=fmt))
    conf_dir = root / "spark-conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    # no spark.master: spark-pipelines starts its own local Spark Connect server (local[*], here
    # both cores, as dt's local[2]) and refuses a master beside it
    settings = {**{k: v for k, v in bench.SESSION.items() if k != "spark.master"},
                "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                "spark.sql.catalogImplementation": "hive",
                "spark.sql.warehouse.dir": str(root / "spark-warehouse"),
                "spark.driver.extraJavaOptions": f"-Dderby.system.home={root / 'derby'}",
                "spark.ui.enabled": "false"}
    (conf_dir / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
    import pyspark

    env = dict(os.environ)
    env.update({"SPARK_HOME": str(Path(pyspark.__file__).parent), "PYSPARK_PYTHON": sys.executable,
                "SPARK_CONF_DIR": str(conf_dir), "SPARK_DIST_CLASSPATH": ":".join(jars.resolve())})
    return {"project": str(project), **{f"env:{k}": v for k, v in env.items()}}


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None, log_file: Path | None = None
          ) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if log_file is not None:
        log_file.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    # the exception's own line says why a run failed; the last lines are the JVM's shutdown noise
    error = next((line.strip() for line in lines if "Exception:" in line or "Error:" in line), "")
    return {"seconds": seconds, "returncode": done.returncode, "tail": lines[-3:], "error": error}


def spark_pipelines(spec: dict[str, str], log_file: Path) -> dict[str, Any]:
    env = {k[4:]: v for k, v in spec.items() if k.startswith("env:")}
    command = [str(Path(sys.executable).with_name("spark-pipelines")), "run"]
    return timed(command, Path(spec["project"]), env, log_file)


def dt_run(project: Path, log_file: Path) -> dict[str, Any]:
    """`dt run --all`: every DT refreshed now, whatever its target lag (a plain `dt run` right
    after the creation would find none due yet)."""
    return timed([str(Path(sys.executable).with_name("dt")), "run", "--all", "-p", str(project)], project,
                 log_file=log_file)


def run_scale(sf: float, change_orders: int, delta_views: bool) -> dict[str, Any]:
    pristine = tpch_data.ensure(sf, log=log)
    root = PEERS / f"sf{sf:g}"
    shutil.rmtree(root, ignore_errors=True)
    sources = {t: root / "sources" / t for t in pristine}
    for table, path in pristine.items():
        bench.copy_tree(Path(path), sources[table])
    project = bench.write_project(root, sources)
    logs = root / "logs"
    logs.mkdir(parents=True)
    out: dict[str, Any] = {"sf": sf}
    log(f"SF{sf:g}: dt run (creation)")
    out["dt_first"] = dt_run(project, logs / "dt-first.log")
    spec = sdp_project(root, sources, delta_format=False)
    log(f"SF{sf:g}: spark-pipelines run (first)")
    out["sdp_first"] = spark_pipelines(spec, logs / "sdp-first.log")
    log(f"SF{sf:g}: dt run with no change")
    out["dt_no_change"] = dt_run(project, logs / "dt-no-change.log")
    change = replay_batch(sf, pristine, sources, change_orders)
    out["change"] = change
    log(f"SF{sf:g}: dt run after the recent change")
    out["dt_after"] = dt_run(project, logs / "dt-after.log")
    log(f"SF{sf:g}: spark-pipelines run after the recent change")
    out["sdp_after"] = spark_pipelines(spec, logs / "sdp-after.log")
    out["equal"] = compare(root, project)
    if delta_views:
        delta_root = root / "delta-views"
        delta_spec = sdp_project(delta_root, sources, delta_format=True)
        out["sdp_delta_first"] = spark_pipelines(delta_spec, logs / "sdp-delta-first.log")
        out["sdp_delta_second"] = spark_pipelines(delta_spec, logs / "sdp-delta-second.log")
    for key, value in out.items():
        if isinstance(value, dict) and "returncode" in value:
            log(f"  {key}: {value['seconds']:.1f}s rc={value['returncode']}")
    return out


def replay_batch(sf: float, pristine: dict[str, str], sources: dict[str, Path], change_orders: int):
    """The recent batch run.py commits: replayed from its cache without Spark, or computed in a
    local session when no run cached it yet."""
    if (cache_dir(sf, pristine, change_orders, kind="recent") / "batch.json").exists():
        return change_batch(None, sf, pristine, sources, change_orders, say=log, kind="recent")
    from dtcli.engine.launch.session import local_session

    spark = local_session(extra={k: v for k, v in bench.SESSION.items() if k != "spark.master"})
    try:
        return change_batch(spark, sf, pristine, sources, change_orders, say=log, kind="recent")
    finally:
        spark.stop()


def compare(root: Path, project: Path) -> dict[str, bool]:
    """Each DT against the pipeline's view of the same query (multiset fingerprints)."""
    from dtcli.engine.launch.session import local_session

    spark = local_session()
    try:
        out = {}
        for t in bench.TABLES:
            dt = spark.read.format("delta").load(str(root / "warehouse" / t.name))
            view = spark.read.parquet(str(root / "spark-warehouse" / t.name))
            out[t.name] = _fingerprint(dt) == _fingerprint(view.select(*dt.columns))
        return out
    finally:
        spark.stop()


def _fingerprint(df) -> tuple[int, str]:
    from pyspark.sql import functions as F

    digest = F.xxhash64(*[F.col(c) for c in df.columns]).cast("decimal(38,0)")
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(digest).alias("h")).first()
    return int(row["n"]), str(row["h"])


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    out = [f"Measured {meta['date']} at commit {meta['commit']}; machine: {meta['machine']}; load "
           f"average {meta['load_before']} before, {meta['load_after']} after. Each figure is one "
           "process, start to exit.", "",
           "| SF | `dt run` creating (s) | `spark-pipelines run` first (s) | `dt run`, no change (s) | "
           "`dt run` after the change (s) | `spark-pipelines run` after the change (s) | "
           "pipelines ÷ dt after the change | same rows |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        ratio = r["sdp_after"]["seconds"] / r["dt_after"]["seconds"]
        same = "yes" if all(r["equal"].values()) else f"**no** {r['equal']}"
        out.append(f"| {r['sf']:g} | {r['dt_first']['seconds']:.1f} | {r['sdp_first']['seconds']:.1f} | "
                   f"{r['dt_no_change']['seconds']:.1f} | {r['dt_after']['seconds']:.1f} | "
                   f"{r['sdp_after']['seconds']:.1f} | {ratio:.1f}× | {same} |")
    failed = [(r["sf"], k) for r in results for k, v in r.items()
              if isinstance(v, dict) and v.get("returncode") not in (None, 0)]
    for r in results:
        if "sdp_delta_second" in r:
            second = r["sdp_delta_second"]
            out += ["", f"Views declared `format=\"delta\"` (SF{r['sf']:g}): first run rc "
                    f"{r['sdp_delta_first']['returncode']}, second run rc {second['returncode']}"
                    + (f": `{_why(second)}`" if second["returncode"] else "") + "."]
    if failed:
        out += ["", "Runs that failed: " + ", ".join(f"SF{sf:g} {k}" for sf, k in failed) + "."]
    return "\n".join(out)


def _why(run: dict[str, Any]) -> str:
    """The failure's message without its exception class chain (older results have only a tail)."""
    error = run.get("error") or " ".join(run["tail"])
    return error.rsplit("Exception: ", 1)[-1][:300]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, nargs="+", default=[1, 3])
    parser.add_argument("--change-orders", type=int, default=bench.DEFAULT_CHANGE_ORDERS)
    parser.add_argument("--delta-views", action="store_true",
                        help="also run the pipeline with format='delta' views twice (its second run fails)")
    args = parser.parse_args(argv)
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": bench.git("log", "-1", "--format=%h") or "?", "machine": bench.machine(),
            "load_before": bench.load_average()}
    PEERS.mkdir(parents=True, exist_ok=True)
    results = []
    for sf in args.sf:
        results.append(run_scale(int(sf) if float(sf).is_integer() else sf, args.change_orders, args.delta_views))
        meta["load_after"] = bench.load_average()
        # written after every scale: an SF10 run that dies keeps what SF1 and SF3 measured
        (PEERS / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=str))
    print(markdown(results, meta))


if __name__ == "__main__":
    main()
