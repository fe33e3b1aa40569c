"""Apply one batch of source changes to the example shop (inserts, updates, deletes).

Used by `make demo` between two runs. It writes through deltalake, which records the change
data feed like Spark does, so no JVM is needed.
Usage: python scripts/shop_changes.py example_project
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake


def main(project: Path) -> None:
    wh = project / "warehouse"
    ts = pa.timestamp("us", tz="UTC")
    # Two new orders with their lines.
    write_deltalake(str(wh / "orders"), pa.table({
        "order_id": pa.array([2001, 2002], pa.int64()), "customer_id": pa.array([3, 41], pa.int32()),
        "status": ["placed", "placed"],
        "ordered_at": pa.array([1793000000000000, 1793000600000000], ts)}), mode="append")
    write_deltalake(str(wh / "order_lines"), pa.table({
        "order_id": pa.array([2001, 2001, 2002], pa.int64()), "line_no": pa.array([1, 2, 1], pa.int32()),
        "product_id": pa.array([101, 105, 110], pa.int32()), "quantity": pa.array([2, 1, 3], pa.int32())}),
        mode="append")
    orders = DeltaTable(str(wh / "orders"))
    orders.update(predicate="order_id = 1005", updates={"status": "'cancelled'"})   # leaves valid_orders
    orders.update(predicate="order_id = 1010", updates={"status": "'delivered'"})
    DeltaTable(str(wh / "order_lines")).delete("order_id = 1020 AND line_no = 1")
    DeltaTable(str(wh / "products")).update(predicate="product_id = 105",
                                             updates={"unit_price": f"CAST({Decimal('12.34')} AS DECIMAL(10,2))"})
    DeltaTable(str(wh / "page_clicks")).delete("click_id <= 5")
    write_deltalake(str(wh / "customers"), pa.table({
        "customer_id": pa.array([41], pa.int32()), "name": ["customer_41"], "country": ["NL"],
        "signup_date": pa.array([20400], pa.date32())}), mode="append")
    print("applied a change batch: 2 orders + 3 lines inserted, 2 orders updated, "
          "1 line deleted, 1 price updated, 5 clicks deleted, 1 customer inserted")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "example_project"))
