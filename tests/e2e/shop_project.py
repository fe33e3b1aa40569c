"""The shop of the `dt`-process tests: four chained DTs over two seeds, and one change of both
(tests/e2e/test_cli_run.py, test_watch_warm.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from tests.helpers import dt_process, write_project

TABLES = {
    "paid": "SELECT order_id, customer_id, amount FROM orders WHERE status = 'paid'",
    "paid_lines": """
        SELECT p.order_id, p.customer_id, l.sku, l.qty, l.qty * p.amount AS weighted
        FROM {{ ref('paid') }} AS p JOIN lines AS l ON l.order_id = p.order_id
    """,
    "per_customer": """
        SELECT customer_id, COUNT(*) AS line_count, SUM(weighted) AS total
        FROM {{ ref('paid_lines') }} GROUP BY customer_id
    """,
    "ranked": """
        SELECT customer_id, total, RANK() OVER (PARTITION BY line_count ORDER BY total DESC) AS rnk
        FROM {{ ref('per_customer') }}
    """,
}
SEEDS = {
    "orders": "order_id,customer_id,status,amount\n" + "\n".join(
        f"{i},{i % 7 if i % 11 else ''},{'paid' if i % 3 else 'open'},{i * 1.5:.2f}" for i in range(1, 60)),
    "lines": "order_id,sku,qty\n" + "\n".join(f"{i // 2},sku{i % 5},{i % 4}" for i in range(2, 120)),
}


def shop_project(tmp_path: Path) -> Path:
    """The shop, seeded (through the `dt` process)."""
    root = write_project(tmp_path / "shop", TABLES, seeds=SEEDS)
    (root / "seeds" / "orders.yml").write_text("columns:\n  amount: decimal(10,2)\n  customer_id: int\n")
    assert dt_process("seed", "-p", str(root)).returncode == 0
    return root


def change_shop_sources(root: Path) -> None:
    """An update, a delete and appended lines with a duplicate and NULLs (delta-rs, no JVM)."""
    orders = DeltaTable(str(root / "warehouse" / "orders"))
    orders.update(predicate="order_id = 4", updates={"status": "'open'"})
    orders.delete("order_id = 5")
    write_deltalake(str(root / "warehouse" / "lines"), pa.table({
        "order_id": pa.array([1, 1, None], pa.int64()), "sku": ["skuX", "skuX", None],
        "qty": pa.array([2, 2, 1], pa.int64())}), mode="append")
