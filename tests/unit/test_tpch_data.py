"""The tests' tiny TPC-H data (tests/tpch.py) makes every one of the 22 queries return rows, before
and after its change batches, on DuckDB (no JVM): a DT over an empty result would prove little."""

from __future__ import annotations

import pytest
import sqlglot

from tests import tpch

duckdb = pytest.importorskip("duckdb")

@pytest.fixture(scope="module")
def con():
    con = duckdb.connect()
    data = tpch.generate()
    for name in tpch.SCHEMA:
        arrow = tpch.arrow_table(name, data[name])     # noqa: F841 (DuckDB scans it by name)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM arrow")
    return con


def _empty(con) -> list[str]:
    empty = []
    for name, sql in tpch.queries().items():
        rows = con.execute(sqlglot.transpile(sql, read="spark", write="duckdb")[0]).fetchall()
        # a global aggregate over no rows is one row of NULLs
        if not rows or all(v is None for v in rows[0]) and len(rows) == 1:
            empty.append(name)
    return empty


def test_every_query_returns_rows_on_the_generated_data_and_after_each_batch(con):
    assert len(tpch.queries()) == 22
    assert _empty(con) == []
    for k in (1, 2):
        for statement in tpch.batches(k):
            sql = statement.format(**{t: t for t in tpch.TABLES})
            con.execute(sqlglot.transpile(sql, read="spark", write="duckdb")[0])
        assert _empty(con) == [], f"after batch {k}"


def test_the_keys_hold():
    data = tpch.generate()
    for table, positions in {"part": (0,), "supplier": (0,), "customer": (0,), "orders": (0,),
                             "partsupp": (0, 1), "lineitem": (0, 3)}.items():
        keys = [tuple(r[p] for p in positions) for r in data[table]]
        assert len(keys) == len(set(keys)), table
    orders = {o[0] for o in data["orders"]}
    assert {line[0] for line in data["lineitem"]} == orders        # every order has lines
    assert all(o[1] % 3 for o in data["orders"])                  # a third of customers never order
