"""The Spark configuration every dt application runs with (pure Python: the launcher uses it)."""

from __future__ import annotations

BASE_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Every DT is written with the change data feed on, so DTs downstream of it can read changes.
    "spark.databricks.delta.properties.defaults.enableChangeDataFeed": "true",
    # ... and with deletion vectors: an incremental refresh that removes a few rows marks them
    # deleted instead of rewriting every file that holds one (copy-on-write).
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.log.level": "WARN",
    # Delta rebuilds table state with this many tasks (default 50); on a laptop or CI runner
    # that costs seconds per table read. Clusters with big logs should raise it in spark.conf.
    "spark.databricks.delta.snapshotPartitions": "2",
    # Delta keeps every table it opened in a JVM-wide cache (10,000 tables for 60 minutes by
    # default), each with its snapshot's state and plans: about 3 MB a table here. A run that
    # creates or refreshes 1,000 DTs filled the driver's 1 GB heap after about 800 of them and
    # then spent most of its time in garbage collection. A run reads each DT once or twice and
    # each source many times (those stay in the cache); a table evicted is read from its log again.
    "spark.databricks.delta.delta.log.cacheSize": "64",
    # Spark runs broadcasts and query stages on pooled threads (up to 128 and 1,024 of them), and
    # a new pool thread inherits the SparkSession active where it was created, for its lifetime:
    # often the session Delta clones for a replaceWhere commit, holding the refresh's views and a
    # table snapshot (about 3 MB). A long application (`--watch`, the fuzzer's Spark replay)
    # kept one more such session every few refreshes (57 after 200 refreshes, 138 pool threads
    # alive, heap dump); with 8 threads per pool they are bounded. dt's queries run a few
    # broadcasts and stages at a time, so 8 costs no concurrency here.
    "spark.sql.broadcastExchange.maxThreadThreshold": "8",
    "spark.sql.shuffleExchange.maxThreadThreshold": "8",
    "spark.sql.resultQueryStage.maxThreadThreshold": "8",
    # A broadcast join's hash table is built on the driver by a memory manager that believes it
    # has unlimited memory, so its first page is Spark's largest, 64 MB, however few rows it
    # holds, and it stays in the driver's block store until the broadcast is cleaned up: ten
    # broadcast joins of 20 rows kept 335 MB of heap (12.6 MB with 4 MB pages), and the fuzzer's
    # Spark replay filled a 2 GB driver with them. Tasks' sorts and aggregations take as many
    # 4 MB pages as they need (up to 32 GB per task).
    "spark.buffer.pageSize": "4m",
}


def session_conf(project_conf: dict[str, str], jars: list[str]) -> dict[str, str]:
    conf = dict(BASE_CONF)
    conf.update(project_conf)
    if jars:
        conf["spark.jars"] = ",".join(jars)
    return conf


# The JVM's C1 compiler only: it compiles Spark's and Delta's code at once instead of profiling
# it for C2. On a small machine a run of incremental refreshes is mostly a fresh JVM warming up,
# and C2's compile threads take cores from the tasks: C1 alone made such a `dt run` 18 % faster
# at TPC-H SF3 on 2 cores, while it made long scans (a FULL refresh at SF3) 35 % slower.
# C1 alone gets a 48 MB code cache instead of tiered compilation's 240 MB: a long run filled it
# ("CodeCache is full. Compiler has been disabled") and slowed down, so the size is kept.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
_JIT_FLAGS = ("TieredStopAtLevel", "TieredCompilation", "-Xint", "-Xcomp")


def jit_options(jit: str, master: str, conf: dict[str, str], actions: list[str] | None) -> dict[str, str]:
    """The driver's Java options with `spark.jit` applied (an empty dict: nothing to add).

    `quick` adds C1-only compilation; `peak` leaves the JVM's default; `auto` is `quick` for an
    application on a local master (where the refreshes run inside the driver's JVM) whose plan
    holds only incremental refreshes (`actions`; None for a long-lived warm application: peak).
    Java options of the user's that choose a compiler win."""
    from dtcli.model import INCREMENTAL, NO_DATA

    java = conf.get("spark.driver.extraJavaOptions", "")
    if any(flag in java for flag in _JIT_FLAGS):
        return {}
    quick = jit == "quick" or (
        jit == "auto" and master.startswith("local") and actions is not None
        and bool(actions) and all(a in (INCREMENTAL, NO_DATA) for a in actions))
    if not quick:
        return {}
    return {"spark.driver.extraJavaOptions": f"{QUICK_JIT} {java}".strip()}


def catalog_conf(project) -> dict[str, str]:
    """Spark settings for a project with `catalog:` (or sources declared by table name) that
    names no metastore of its own: Spark's
    Hive support over an embedded Derby database under the warehouse's `_dt/` (needs no server;
    one application at a time, which dt's warehouse lock gives). Derby's log and the directory of
    managed schemas go there too, not into the working directory. A target that sets
    `spark.sql.catalogImplementation` (a remote Hive metastore, Glue) or a catalog plugin of its
    own gets nothing added."""
    conf = project.spark_conf
    catalog = project.catalog
    by_name = any(s.table for s in project.sources.values())    # sources read by table name
    if (catalog is None and not by_name) or "spark.sql.catalogImplementation" in conf:
        return {}
    if catalog is not None and catalog.name and catalog.name != "spark_catalog":
        return {}       # a catalog plugin (Unity Catalog...): configured by its own settings
    if conf.get("spark.hadoop.hive.metastore.uris"):
        return {"spark.sql.catalogImplementation": "hive"}
    home = derby_home(project.root, project.warehouse)
    java = conf.get("spark.driver.extraJavaOptions", "")
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={home}/metastore_db;create=true",
        "spark.sql.warehouse.dir": f"{home}/schemas",
        "spark.driver.extraJavaOptions": f"{java} -Dderby.system.home={home}".strip(),
    }


def derby_home(root, warehouse: str) -> str:
    """The local metastore's folder: `<warehouse>/_dt/metastore`, or `<project>/_dt/metastore`
    when the warehouse is on an object store (Derby needs a local disk)."""
    from pathlib import Path

    base = Path(root) if "://" in warehouse else Path(warehouse)
    return str(base / "_dt" / "metastore")
