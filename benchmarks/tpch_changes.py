"""Small change batches over six TPC-H tables, committed without a JVM (deltalake's MERGE).

    import tpch_changes
    summary = tpch_changes.apply_batch(paths, batch_no=0)     # paths: table -> Delta path
    .venv/bin/python benchmarks/tpch_changes.py --sf 0.1 --every 20 --count 18 DIR  # a writer

What a pipeline over TPC-H sees between two refreshes, at any scale factor (the same absolute
size, as batches.py's batches): new orders with their lines, deleted orders with their lines,
and updates across lineitem, orders, customer, part, partsupp and supplier, of columns the 22
queries filter on (dates, discounts, quantities, segments, brands, types, sizes, containers,
balances, supplier comments) and join on (an order's customer, a customer's and a supplier's
nation). The default batch (`Batch()`): 30 new orders with their lines (copies of recent orders
under new keys), 15 orders deleted with their lines, 10 orders updated with their lines, 5
customers, 5 parts, 5 partsupp rows and 3 suppliers updated: about 0.6 % of SF0.01's orders,
0.006 % of SF1's.

Each table gets one MERGE (one commit; the change data feed records it as a source's would),
dimensions first, lineitem last. Orders are drawn from the most recent ones (the highest keys),
as batches.py's `recent` batch does: the MERGE then rewrites the last file or two of lineitem
and orders, not all of them, so a batch costs about a second at SF1 and can be committed every
few seconds by a separate process while dt refreshes. A batch is a function of the tables'
state, the seed and its number: a run that starts from the same data makes the same changes.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

CHANGED_TABLES = ("customer", "part", "partsupp", "supplier", "orders", "lineitem")
OP = "dt_bench_op"      # the merge source's column saying what to do with the row
CENT = Decimal("0.01")


@dataclass(frozen=True)
class Batch:
    new_orders: int = 30
    deleted_orders: int = 15
    updated_orders: int = 10
    customers: int = 5
    parts: int = 5
    partsupps: int = 5
    suppliers: int = 3


def _table(path: str):
    from deltalake import DeltaTable

    return DeltaTable(str(path))


def _column(path: str, name: str) -> list:
    return _table(path).to_pyarrow_dataset().to_table(columns=[name]).column(name).to_pylist()


def _rows(path: str, key: str, keys: list) -> list[dict[str, Any]]:
    """The rows whose `key` is in `keys` (the range bound lets Arrow skip row groups)."""
    import pyarrow.compute as pc

    if not keys:
        return []
    field = pc.field(key)
    where = (field >= min(keys)) & (field <= max(keys)) & field.isin(keys)
    return _table(path).to_pyarrow_dataset().to_table(filter=where).to_pylist()


def _merge(path: str, rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, int]:
    """One MERGE of `rows` (each with OP = I, U or D) into the table at `path`."""
    import pyarrow as pa

    if not rows:
        return {"inserted": 0, "updated": 0, "deleted": 0}
    table = _table(path)
    schema = table.schema().to_arrow() if hasattr(table.schema(), "to_arrow") else table.schema()
    schema = pa.schema(list(pa.schema(schema)) + [pa.field(OP, pa.string())])
    source = pa.Table.from_pylist(rows, schema=schema)
    on = " AND ".join(f"t.{k} = s.{k}" for k in keys)
    # the range of the first key column, on the target side too: without it deltalake's MERGE
    # read the whole target (SF10's lineitem, 60 M rows, took more than 24 GB and was killed);
    # the generated tables are in key order, so the range keeps the MERGE to a few files
    first = [r[keys[0]] for r in rows if r[keys[0]] is not None]
    if first and all(isinstance(v, int) for v in first):
        on = f"t.{keys[0]} >= {min(first)} AND t.{keys[0]} <= {max(first)} AND {on}"
    metrics = (table.merge(source, on, source_alias="s", target_alias="t")
               .when_matched_delete(predicate=f"s.{OP} = 'D'")
               .when_matched_update_all(predicate=f"s.{OP} = 'U'", except_cols=[OP])
               .when_not_matched_insert_all(predicate=f"s.{OP} = 'I'", except_cols=[OP])
               .execute())
    return {"inserted": int(metrics.get("num_target_rows_inserted", 0)),
            "updated": int(metrics.get("num_target_rows_updated", 0)),
            "deleted": int(metrics.get("num_target_rows_deleted", 0)),
            "version": _table(path).version()}


def _dearer(value: Decimal, percent: int) -> Decimal:
    return (value * (100 + percent) / 100).quantize(CENT)


def _orders_and_lines(paths: Mapping[str, str], rng: random.Random, batch: Batch,
                      customer_keys: list[int]) -> tuple[list, list]:
    """New, deleted and updated orders, and the same for their lines."""
    keys = sorted(_column(paths["orders"], "o_orderkey"))
    wanted = batch.new_orders + batch.deleted_orders + batch.updated_orders
    recent = keys[-10 * wanted:]
    picked = rng.sample(recent, min(wanted, len(recent)))
    templates = picked[:batch.new_orders]
    deleted = picked[batch.new_orders:batch.new_orders + batch.deleted_orders]
    updated = picked[batch.new_orders + batch.deleted_orders:]
    new_key = {old: keys[-1] + 1 + i for i, old in enumerate(sorted(templates))}
    orders, lines = [], []
    for row in _rows(paths["orders"], "o_orderkey", templates + deleted + updated):
        key = row["o_orderkey"]
        if key in new_key:
            orders.append({**row, "o_orderkey": new_key[key], OP: "I"})
        elif key in deleted:
            orders.append({**row, OP: "D"})
        else:       # repriced, reprioritised, and every other one moved to another customer
            row = {**row, OP: "U", "o_totalprice": _dearer(row["o_totalprice"], 5),
                   "o_orderpriority": rng.choice(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"])}
            if len(orders) % 2:
                row["o_custkey"] = rng.choice(customer_keys)
            orders.append(row)
    for row in _rows(paths["lineitem"], "l_orderkey", templates + deleted + updated):
        key = row["l_orderkey"]
        if key in new_key:
            lines.append({**row, "l_orderkey": new_key[key], OP: "I"})
        elif key in deleted:
            lines.append({**row, OP: "D"})
        else:       # dearer, shipped a few days later, another discount and quantity
            from datetime import timedelta

            lines.append({**row, OP: "U", "l_extendedprice": _dearer(row["l_extendedprice"], 5),
                          "l_shipdate": row["l_shipdate"] + timedelta(days=rng.randint(1, 40)),
                          "l_discount": Decimal(rng.randint(0, 10)) / 100,
                          "l_quantity": Decimal(rng.randint(1, 50)),
                          "l_returnflag": rng.choice(["A", "N", "R"])})
    return orders, lines


def _customers(paths, rng, batch, customer_keys) -> list:
    segments = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
    rows = _rows(paths["customer"], "c_custkey", rng.sample(customer_keys, batch.customers))
    return [{**r, OP: "U", "c_acctbal": Decimal(rng.randint(-99999, 999999)) / 100,
             "c_mktsegment": rng.choice(segments),
             "c_nationkey": rng.randint(0, 24) if i % 2 else r["c_nationkey"]}
            for i, r in enumerate(rows)]


def _parts(paths, rng, batch, part_keys) -> list:
    """A changed categorical column takes another part's value, so it stays in the domain the
    queries filter on."""
    parts = _rows(paths["part"], "p_partkey", rng.sample(part_keys, 2 * batch.parts))
    changed, donors = parts[:batch.parts], parts[batch.parts:]
    return [{**r, OP: "U", "p_brand": d["p_brand"], "p_type": d["p_type"], "p_size": d["p_size"],
             "p_container": d["p_container"], "p_retailprice": _dearer(r["p_retailprice"], 3)}
            for r, d in zip(changed, donors)]


def _partsupps(paths, rng, batch, part_keys) -> list:
    chosen = {}
    for row in _rows(paths["partsupp"], "ps_partkey", rng.sample(part_keys, batch.partsupps)):
        chosen.setdefault(row["ps_partkey"], row)       # one supplier's row per chosen part
    return [{**r, OP: "U", "ps_supplycost": _dearer(r["ps_supplycost"], 10),
             "ps_availqty": r["ps_availqty"] + rng.randint(-500, 500)}
            for r in chosen.values()]


def _suppliers(paths, rng, batch) -> list:
    keys = _column(paths["supplier"], "s_suppkey")
    rows = _rows(paths["supplier"], "s_suppkey", rng.sample(keys, batch.suppliers))
    return [{**r, OP: "U", "s_acctbal": Decimal(rng.randint(-99999, 999999)) / 100,
             "s_nationkey": rng.randint(0, 24) if i % 2 == 0 else r["s_nationkey"],
             "s_comment": (r["s_comment"] + " Customer Complaints") if i == 1 else r["s_comment"]}
            for i, r in enumerate(rows)]


def apply_batch(paths: Mapping[str, str | Path], batch_no: int = 0, *, seed: int = 42,
                batch: Batch = Batch()) -> dict[str, Any]:
    """Commit change batch number `batch_no` to the six tables (one MERGE each; nation and
    region are never changed), or to those of them in `paths` (lineitem and orders at least:
    run.py's three DTs read lineitem, orders and customer). Returns, per table, rows inserted /
    updated / deleted and the version committed, with the seconds it took."""
    import tpch_data

    paths = {t: str(p) for t, p in paths.items()}
    started = time.perf_counter()
    rng = random.Random(f"{seed}/{batch_no}")
    customer_keys = sorted(set(_column(paths["customer"] if "customer" in paths else paths["orders"],
                                       "c_custkey" if "customer" in paths else "o_custkey")))
    orders, lines = _orders_and_lines(paths, rng, batch, customer_keys)
    changes = {"orders": orders, "lineitem": lines}
    if "customer" in paths:
        changes["customer"] = _customers(paths, rng, batch, customer_keys)
    if "part" in paths:
        part_keys = _column(paths["part"], "p_partkey")
        changes["part"] = _parts(paths, rng, batch, part_keys)
        if "partsupp" in paths:
            changes["partsupp"] = _partsupps(paths, rng, batch, part_keys)
    if "supplier" in paths:
        changes["supplier"] = _suppliers(paths, rng, batch)
    out: dict[str, Any] = {"batch": batch_no}
    for table in CHANGED_TABLES:
        if table in changes:
            out[table] = _merge(paths[table], changes[table], tpch_data.PRIMARY_KEYS[table])
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def describe(result: Mapping[str, Any]) -> str:
    parts = []
    for table in CHANGED_TABLES:
        if table not in result:
            continue
        m = result[table]
        parts.append(f"{table} +{m['inserted']} -{m['deleted']} ~{m['updated']}")
    return f"batch {result['batch']} in {result['seconds']}s: " + ", ".join(parts)


def main(argv: list[str] | None = None) -> None:
    """A writer: commit a batch every `--every` seconds to the tables under DIR/<table>."""
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", type=Path, help="folder holding one Delta table per TPC-H table")
    parser.add_argument("--every", type=float, default=20.0, help="seconds between batch starts")
    parser.add_argument("--count", type=int, default=1, help="batches to commit (0: until killed)")
    parser.add_argument("--first", type=int, default=0, help="number of the first batch")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--log", type=Path, default=None, help="append one JSON line per batch here")
    args = parser.parse_args(argv)
    paths = {t: args.sources / t for t in CHANGED_TABLES if (args.sources / t).exists()}
    n = args.first
    next_start = time.monotonic()
    while args.count == 0 or n < args.first + args.count:
        time.sleep(max(0.0, next_start - time.monotonic()))
        next_start += args.every
        result = apply_batch(paths, n, seed=args.seed)
        result["at"] = time.time()
        print(describe(result), flush=True)
        if args.log:
            with args.log.open("a") as fh:
                fh.write(json.dumps(result) + "\n")
        n += 1


if __name__ == "__main__":
    main()
