"""The fault test's project: twelve DTs over three seeded sources (joins, outer join, aggregates
with MIN/MAX and COUNT DISTINCT, windows, a scalar aggregate, a chain four deep, a top-N that
keeps an internal table, a correlated subquery whose aggregate is kept as one), and random
change batches committed to the sources with deltalake (no JVM: the kills are what is tested).
The top-N's singular test sleeps while its rows hold the sku `nap` (`Changes.nap_lines` adds
it): a kill can then be aimed between its internal table's commit and its own."""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from tests.helpers import dt_process, write_project

TABLES = {
    "paid": "SELECT order_id, customer_id, amount FROM orders WHERE status = 'paid'",
    "paid_lines": "SELECT p.order_id, p.customer_id, l.sku, l.qty FROM {{ ref('paid') }} AS p "
                  "JOIN lines AS l ON l.order_id = p.order_id",
    "per_customer": "SELECT customer_id, COUNT(*) AS n, SUM(qty) AS qty FROM {{ ref('paid_lines') }} "
                    "GROUP BY customer_id",
    "ranked": "SELECT customer_id, qty, RANK() OVER (PARTITION BY n ORDER BY qty DESC) AS rnk "
              "FROM {{ ref('per_customer') }}",
    "with_region": "SELECT p.order_id, p.amount, c.region FROM {{ ref('paid') }} AS p "
                   "LEFT JOIN customers AS c ON c.customer_id = p.customer_id",
    "region_totals": "SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM {{ ref('with_region') }} "
                     "GROUP BY region",
    "by_status": "SELECT status, COUNT(*) AS n, MIN(amount) AS lo, MAX(amount) AS hi FROM orders GROUP BY status",
    "sku_qty": "SELECT sku, SUM(qty) AS qty, COUNT(DISTINCT order_id) AS orders FROM lines GROUP BY sku",
    "sku_rank": "SELECT sku, qty, DENSE_RANK() OVER (PARTITION BY orders ORDER BY qty) AS r FROM {{ ref('sku_qty') }}",
    "totals": "SELECT COUNT(*) AS n, SUM(qty) AS q FROM {{ ref('sku_qty') }}",
    # a top-N over an aggregate: its refreshes commit an internal table, then the DT
    "top_skus": "SELECT sku, SUM(qty) AS qty FROM lines GROUP BY sku ORDER BY qty DESC, sku LIMIT 2",
    # a correlated AVG kept as running totals (kept_aggregate_1): committed before the DT too
    "above_average": "SELECT o.order_id, o.amount FROM orders AS o WHERE o.amount > "
                     "(SELECT AVG(o2.amount) FROM orders AS o2 WHERE o2.customer_id = o.customer_id)",
}
# data tests the changes never break: a kill may land while a refresh checks what it is about to
# commit, and must leave the DT as a kill anywhere else does
TESTS = {"paid_lines": "columns:\n  - name: order_id\n    data_tests: [not_null]\n"
                       "data_tests:\n  - expression_is_true: {expression: 'qty >= 0'}\n",
         "region_totals": "columns:\n  - name: n\n    data_tests: [not_null]\n"}
# a singular test on `top_skus` that finds no failing row (reflect returns the text of what the
# method returned: never 'awake'); it sleeps 4 s per row of the sku `nap` and reads no other row's
# clock (CASE evaluates its branch only when the condition holds). A refresh of top_skus checks it
# after its internal table committed and before the DT's own commit: the window the kill aims at.
NAP = "nap"
SINGULAR = {"top_skus_napping": "SELECT * FROM {{ ref('top_skus') }}\n"
                                f"WHERE CASE WHEN sku = '{NAP}' THEN reflect('java.lang.Thread', 'sleep', "
                                "CAST(4000 AS BIGINT)) = 'awake' ELSE false END\n"}
SEEDS = {
    "orders": "order_id,customer_id,status,amount\n" + "\n".join(
        f"{i},{i % 7 if i % 11 else ''},{'paid' if i % 3 else 'open'},{i * 1.5:.2f}" for i in range(1, 60)),
    "lines": "order_id,sku,qty\n" + "\n".join(f"{i // 2},sku{i % 5},{i % 4}" for i in range(2, 120)),
    "customers": "customer_id,region\n" + "\n".join(f"{i},r{i % 3}" for i in range(0, 7)),
}


def make_project(root: Path) -> Path:
    # incremental: after creation every refresh with changes must be INCREMENTAL, so a FULL or
    # REINITIALIZE in the history can only be a fallback (what a second writer caused)
    root = write_project(root, TABLES, seeds=SEEDS, config="defaults: {refresh_mode: incremental}\n",
                         table_yml=TESTS)
    (root / "seeds" / "orders.yml").write_text("columns:\n  amount: decimal(10,2)\n  customer_id: int\n")
    (root / "tests").mkdir()
    for name, sql in SINGULAR.items():
        (root / "tests" / f"{name}.sql").write_text(sql)
    assert dt_process("seed", "-p", str(root)).returncode == 0
    return root


class Changes:
    """Random batches of inserts (with NULLs and duplicates), updates and deletes."""

    def __init__(self, root: Path, rng: random.Random):
        self.root, self.rng, self.next_order = root, rng, 1000

    def _table(self, name: str) -> DeltaTable:
        return DeltaTable(str(self.root / "warehouse" / name))

    def _append(self, name: str, rows: dict[str, list]) -> None:
        schema = pa.schema(self._table(name).schema().to_arrow())
        write_deltalake(str(self.root / "warehouse" / name), pa.table(rows).cast(schema), mode="append")

    def batch(self) -> list[str]:
        done = []
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice([self.new_orders, self.restatus, self.reprice, self.drop_order, self.new_lines,
                                  self.requantify, self.drop_sku, self.move_customer])
            done.append(op())
        return done

    def new_orders(self) -> str:
        n = self.rng.randint(1, 3)
        ids = [self.next_order + i for i in range(n)]
        self.next_order += n
        if self.rng.random() < 0.3:
            ids.append(ids[0])                                     # a duplicate row
        self._append("orders", {
            "order_id": ids, "customer_id": [self.rng.choice([None, 1, 2, 3, 4, 5, 6]) for _ in ids],
            "status": [self.rng.choice(["paid", "open", None]) for _ in ids],
            "amount": [Decimal(self.rng.randint(1, 900)) / 4 for _ in ids]})
        return f"orders +{len(ids)}"

    def restatus(self) -> str:
        key = self.rng.randint(1, 60)
        self._table("orders").update(predicate=f"order_id % 7 = {key % 7}",
                                     updates={"status": self.rng.choice(["'paid'", "'open'"])})
        return f"orders status where id%7={key % 7}"

    def reprice(self) -> str:
        key = self.rng.randint(1, 60)
        self._table("orders").update(predicate=f"order_id = {key}", updates={"amount": "amount + 1"})
        return f"orders amount of {key}"

    def drop_order(self) -> str:
        key = self.rng.randint(1, 60)
        self._table("orders").delete(f"order_id = {key}")
        return f"orders -{key}"

    def new_lines(self) -> str:
        n = self.rng.randint(1, 4)
        self._append("lines", {"order_id": [self.rng.randint(1, 62) for _ in range(n)],
                               "sku": [self.rng.choice(["sku1", "sku2", "sku7", None]) for _ in range(n)],
                               "qty": [self.rng.randint(0, 5) for _ in range(n)]})
        return f"lines +{n}"

    def nap_lines(self) -> str:
        """Lines of the sku `nap`, enough to rank it first in top_skus (whose test then sleeps)."""
        self._append("lines", {"order_id": [self.rng.randint(1, 62)], "sku": [NAP], "qty": [500]})
        return f"lines +1 ({NAP})"

    def requantify(self) -> str:
        key = self.rng.randint(1, 60)
        self._table("lines").update(predicate=f"order_id = {key}", updates={"qty": "qty + 1"})
        return f"lines qty of {key}"

    def drop_sku(self) -> str:
        sku = self.rng.choice(["sku0", "sku3", "sku7"])
        self._table("lines").delete(f"sku = '{sku}'")
        return f"lines -{sku}"

    def move_customer(self) -> str:
        key = self.rng.randint(0, 6)
        self._table("customers").update(predicate=f"customer_id = {key}",
                                        updates={"region": self.rng.choice(["'r0'", "'r1'", "'r9'", "NULL"])})
        return f"customers region of {key}"
