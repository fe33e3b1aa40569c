"""The change batches the benchmarks commit to the TPC-H sources, computed once and replayed.

Each batch changes `n` orders and their lines in one MERGE per source table, so the change
data feed records it as a pipeline's sources would: a third new orders (copies of existing
ones under new keys, with their lines), a third deleted, a third repriced (+5 % on the order
total and on its lines' prices). Two kinds:

* `recent`: the changed orders are drawn from the latest ones (the highest keys), and new
  orders get new, higher keys: what a pipeline usually sees, and where file pruning can work.
* `spread`: drawn at random from all orders: every file holds some, the worst case for pruning.

Rewriting lineitem through MERGE costs minutes at scale, so the first run keeps the files the
MERGE commits added under `benchmarks/data/`, and later runs copy them in (see `change_batch`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import tpch_data

HERE = Path(__file__).resolve().parent


def log(msg: str) -> None:
    from datetime import datetime

    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


BATCHES = ("recent", "spread")


def apply_change_batch(spark, paths: dict[str, str], n_orders: int, seed: int = 42,
                       kind: str = "spread") -> dict[str, Any]:
    """One MERGE per source: n/3 new orders (copies of existing ones under new keys, with their
    lines), n/3 deleted orders with their lines, n/3 orders whose lines and total get 5 % dearer.

    `spread`: the deleted, repriced and copied orders are drawn at random from all orders (the
    worst case for file pruning: every file holds some). `recent`: they are drawn from the
    latest orders (the highest keys, a window ten times the batch), as a pipeline usually sees
    new orders and changes to recent ones."""
    from pyspark.sql import functions as F

    orders = spark.read.format("delta").load(paths["orders"])
    lineitem = spark.read.format("delta").load(paths["lineitem"])
    per = max(1, n_orders // 3)
    pool = orders.select("o_orderkey")
    if kind == "recent":
        pool = pool.orderBy(F.col("o_orderkey").desc()).limit(30 * per)
    elif kind != "spread":
        raise ValueError(f"unknown change batch kind {kind!r}: {', '.join(BATCHES)}")
    picked = [r[0] for r in pool.orderBy(F.xxhash64("o_orderkey", F.lit(seed)))
              .limit(3 * per).collect()]
    deleted, updated, templates = picked[:per], picked[per:2 * per], picked[2 * per:3 * per]
    max_key = orders.agg(F.max("o_orderkey")).first()[0]
    new_key = {old: max_key + 1 + i for i, old in enumerate(sorted(templates))}
    # the picked keys as a table joined to each source: at 20 % of SF1's orders, literal IN
    # lists of 100,000 keys kept Spark's optimizer busy for many minutes
    picks = spark.createDataFrame(
        [(k, "D", None) for k in deleted] + [(k, "U", None) for k in updated]
        + [(k, "I", new_key[k]) for k in templates], "pick_key BIGINT, op STRING, new_key BIGINT")

    def changes(df, key: str, price: str):
        """The batch for one table: its deleted, repriced (op U) and copied (op I) rows."""
        dtypes = dict(df.dtypes)
        joined = df.join(F.broadcast(picks), F.col(key) == F.col("pick_key"))

        def column(c: str):
            if c == key:
                return F.when(F.col("op") == "I", F.col("new_key")).otherwise(F.col(c)).cast(dtypes[c]).alias(c)
            if c == price:
                return F.when(F.col("op") == "U", F.col(c) * F.lit(1.05)).otherwise(F.col(c)) \
                    .cast(dtypes[c]).alias(c)
            return F.col(c)
        return joined.select(*[column(c) for c in df.columns], "op")

    o_changes = changes(orders, "o_orderkey", "o_totalprice")
    l_changes = changes(lineitem, "l_orderkey", "l_extendedprice")
    # Materialize the batch before the first MERGE changes what its lineage would read.
    o_changes = o_changes.localCheckpoint(eager=True)
    l_changes = l_changes.localCheckpoint(eager=True)
    o_changes.createOrReplaceTempView("bench_order_changes")
    l_changes.createOrReplaceTempView("bench_line_changes")

    def merge(path: str, view: str, on: str, price: str, cols: list[str]) -> dict[str, Any]:
        spark.sql(f"""
            MERGE INTO delta.`{path}` AS t USING {view} AS c ON {on}
            WHEN MATCHED AND c.op = 'D' THEN DELETE
            WHEN MATCHED AND c.op = 'U' THEN UPDATE SET t.{price} = c.{price}
            WHEN NOT MATCHED AND c.op = 'I' THEN INSERT ({', '.join(cols)})
                 VALUES ({', '.join('c.' + c for c in cols)})""")
        from delta.tables import DeltaTable

        row = DeltaTable.forPath(spark, path).history(1).select("version", "operationMetrics").first()
        m = dict(row["operationMetrics"] or {})
        return {"version": int(row["version"]),
                "inserted": int(m.get("numTargetRowsInserted", 0)),
                "updated": int(m.get("numTargetRowsUpdated", 0)),
                "deleted": int(m.get("numTargetRowsDeleted", 0)),
                "files_rewritten": int(m.get("numTargetFilesRemoved", 0))}

    started = time.perf_counter()
    result = {
        "orders": merge(paths["orders"], "bench_order_changes", "t.o_orderkey = c.o_orderkey",
                        "o_totalprice", orders.columns),
        "lineitem": merge(paths["lineitem"], "bench_line_changes",
                          "t.l_orderkey = c.l_orderkey AND t.l_linenumber = c.l_linenumber",
                          "l_extendedprice", lineitem.columns),
    }
    spark.catalog.dropTempView("bench_order_changes")
    spark.catalog.dropTempView("bench_line_changes")
    result["orders_changed"] = 3 * per
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


CHANGE_FORMAT = 1      # bump when apply_change_batch changes what it writes


def _files(root: Path) -> set[str]:
    return {str(f.relative_to(root)) for f in root.rglob("*") if f.is_file()}


def cache_dir(sf: float, pristine: dict[str, str], change_orders: int, seed: int = 42,
              kind: str = "spread") -> Path:
    """Where a batch's files are kept once computed (it exists when they are)."""
    tag = "" if kind == "spread" else f"/{kind}"     # the spread batch keeps its cached copies
    digest = hashlib.sha256(f"{CHANGE_FORMAT}/{change_orders}/{seed}{tag}".encode())
    for table in sorted(pristine):
        digest.update((Path(pristine[table]) / "_delta_log" / f"{0:020d}.json").read_bytes())
    return tpch_data.sf_dir(sf) / "changes" / digest.hexdigest()[:16]


def change_batch(spark, sf: float, pristine: dict[str, str], sources: dict[str, Path],
                 change_orders: int, seed: int = 42, say=log, kind: str = "spread") -> dict[str, Any]:
    """Commit the change batch to the working sources, replaying a cached copy when there is one.

    The batch is deterministic, and rewriting lineitem through MERGE costs minutes (the changed
    orders are spread over every file), so the first run keeps what the MERGE commits added (the
    commit file, new data files, change data files) under `benchmarks/data/`, keyed by the
    pristine tables' first commit. Later runs copy those files in, data first and the commit file
    last: the source tables end up byte-for-byte as if the MERGE had run again."""
    cache = cache_dir(sf, pristine, change_orders, seed, kind)
    meta = cache / "batch.json"
    if meta.exists():
        for table, target in sources.items():
            saved = cache / table
            if not saved.exists():
                continue
            names = sorted(_files(saved), key=lambda n: (n.startswith("_delta_log"), n))
            for name in names:
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(saved / name, target / name)
        result = json.loads(meta.read_text())
        result["replayed"] = True
        say(f"SF{sf:g}: {kind} change batch replayed from {cache.relative_to(HERE)}")
        return result
    before = {t: _files(Path(p)) for t, p in pristine.items()}
    result = apply_change_batch(spark, {t: str(p) for t, p in sources.items()}, change_orders, seed,
                                kind)
    result["kind"] = kind
    partial = cache.with_name(cache.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for table, target in sources.items():
        for name in sorted(_files(target) - before[table]):
            (partial / table / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(target / name, partial / table / name)
    (partial / "batch.json").write_text(json.dumps(result, indent=1))
    shutil.rmtree(cache, ignore_errors=True)
    partial.rename(cache)
    result["replayed"] = False
    return result
