"""Column lineage (dtcli/sql/lineage.py, planning/column_lineage.py): each output column's input
columns and how it is made of them, and the columns every row depends on; computed before Spark
runs, from the query as written; shown by `dt explain`."""

from __future__ import annotations

import json
import shutil

import pytest
from sqlglot import exp, parse_one
from sqlglot.lineage import lineage as sqlglot_lineage

from dtcli import api
from dtcli.model import Column
from dtcli.planning.column_lineage import column_lineage
from dtcli.sql.lineage import column_lineage as query_lineage
from dtcli.sql.resolve import resolve
from tests.helpers import REPO, dt

INPUTS = {
    "src": (Column("id", "BIGINT"), Column("k", "INT"), Column("v", "INT"), Column("items", "ARRAY<INT>"),
            Column("s", "STRING")),
    "t": (Column("k", "INT"), Column("w", "INT"), Column("flag", "BOOLEAN")),
}


def _short(deps) -> dict[str, str]:
    """{'input.column': 'subtype[*]/...'} (* = masking), for exact assertions that read."""
    return {f"{f.input}.{f.column}": "/".join(t.subtype.lower() + ("*" if t.masking else "") for t in sorted(ts))
            for f, ts in deps.items()}


def _lineage(sql: str):
    resolved = resolve(parse_one(sql, read="spark"), INPUTS, "spark")
    assert resolved is not None, sql
    found = query_lineage(resolved.query)
    return {c: _short(d) for c, d in found.columns.items()}, _short(found.dataset)


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    root = tmp_path_factory.mktemp("lineage") / "shop"
    shutil.copytree(REPO / "example_project", root, ignore=shutil.ignore_patterns("warehouse", "target"))
    api.seed(root)
    return api.check(root)


def test_three_example_dts_exactly(shop):
    """An aggregate over a join, a join of three inputs, and a window over a DT."""
    def of(name):
        found = column_lineage(shop, name)
        return {c: _short(d) for c, d in found.columns.items()}, _short(found.dataset)

    assert of("customer_revenue") == (
        {"customer_id": {"customers.customer_id": "identity"}, "name": {"customers.name": "identity"},
         "country": {"customers.country": "identity"},
         "orders": {"order_items.order_id": "aggregation*"},          # COUNT(DISTINCT ...) reveals no value
         "revenue": {"order_items.amount": "aggregation"}},
        {"customers.customer_id": "group_by/join", "customers.name": "group_by", "customers.country": "group_by",
         "order_items.customer_id": "join"})
    assert of("order_items") == (
        {"order_id": {"valid_orders.order_id": "identity"}, "customer_id": {"valid_orders.customer_id": "identity"},
         "order_date": {"valid_orders.order_date": "identity"}, "line_no": {"order_lines.line_no": "identity"},
         "product_id": {"products.product_id": "identity"}, "category": {"products.category": "identity"},
         "quantity": {"order_lines.quantity": "identity"}, "unit_price": {"products.unit_price": "identity"},
         "amount": {"order_lines.quantity": "transformation", "products.unit_price": "transformation"}},
        {"valid_orders.order_id": "join", "order_lines.order_id": "join", "order_lines.product_id": "join",
         "products.product_id": "join"})
    assert of("customer_rank") == (
        {"customer_id": {"customer_revenue.customer_id": "identity"}, "name": {"customer_revenue.name": "identity"},
         "country": {"customer_revenue.country": "identity"}, "revenue": {"customer_revenue.revenue": "identity"},
         "country_rank": {"customer_revenue.country": "window", "customer_revenue.revenue": "window"}},
        {})


def test_the_other_example_dts(shop):
    def of(name):
        found = column_lineage(shop, name)
        return {c: _short(d) for c, d in found.columns.items()}, _short(found.dataset)

    assert of("valid_orders") == (
        {"order_id": {"orders.order_id": "identity"}, "customer_id": {"orders.customer_id": "identity"},
         "status": {"orders.status": "identity"}, "ordered_at": {"orders.ordered_at": "identity"},
         "order_date": {"orders.ordered_at": "transformation"}},
        {"orders.status": "filter"})
    events, rows = of("customer_events")       # UNION ALL: columns by position, from both branches
    assert events["customer_id"] == {"orders.customer_id": "identity", "page_clicks.customer_id": "identity"}
    assert events["kind"] == {} and rows == {}
    assert events["detail"] == {"orders.order_id": "transformation", "page_clicks.page": "identity"}
    daily, rows = of("daily_activity")
    assert daily["events"] == {} and daily["customers"] == {"customer_events.customer_id": "aggregation*"}
    assert rows == {"customer_events.event_at": "group_by", "customer_events.kind": "group_by"}
    # a custom INSERT INTO SELF: CHANGES() of orders is orders; METADATA$ columns are no input's
    log, rows = of("order_status_log")
    assert log == {"order_id": {"orders.order_id": "identity"}, "status": {"orders.status": "identity"},
                   "was_update": {}} and rows == {}


@pytest.mark.parametrize("sql, columns, rows", [
    ("SELECT * FROM src",                                            # a star, expanded
     {"id": {"src.id": "identity"}, "k": {"src.k": "identity"}, "v": {"src.v": "identity"},
      "items": {"src.items": "identity"}, "s": {"src.s": "identity"}}, {}),
    ("SELECT id, CASE WHEN v > 0 THEN s ELSE 'neg' END AS label, CASE k WHEN 1 THEN 'one' END AS kk FROM src",
     {"id": {"src.id": "identity"}, "label": {"src.s": "transformation", "src.v": "conditional"},
      "kk": {"src.k": "conditional"}}, {}),
    ("SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY id) AS running FROM src",
     {"k": {"src.k": "identity"}, "running": {"src.v": "aggregation", "src.k": "window", "src.id": "window"}}, {}),
    ("WITH c AS (SELECT k, SUM(v) AS total FROM src WHERE s <> 'x' GROUP BY k) "
     "SELECT c.k, c.total * 2 AS dbl, t.w FROM c JOIN t ON t.k = c.k",          # a CTE, through its columns
     {"k": {"src.k": "identity"}, "dbl": {"src.v": "aggregation"}, "w": {"t.w": "identity"}},
     {"src.k": "group_by/join", "src.s": "filter", "t.k": "join"}),
    ("SELECT d.k, d.n FROM (SELECT k, COUNT(*) AS n FROM src GROUP BY k HAVING MAX(v) > 1) AS d",
     {"k": {"src.k": "identity"}, "n": {}}, {"src.k": "group_by", "src.v": "filter"}),
    ("SELECT id, (SELECT MAX(w) FROM t WHERE t.k = src.k) AS m FROM src",      # a correlated scalar subquery
     {"id": {"src.id": "identity"}, "m": {"t.w": "aggregation", "t.k": "filter", "src.k": "filter"}}, {}),
    ("SELECT id FROM src WHERE k IN (SELECT k FROM t WHERE flag) AND NOT EXISTS (SELECT 1 FROM t WHERE t.w = src.v)",
     {"id": {"src.id": "identity"}},
     {"src.k": "filter", "src.v": "filter", "t.k": "filter", "t.flag": "filter", "t.w": "filter"}),
    ("SELECT DISTINCT k, s FROM src", {"k": {"src.k": "identity"}, "s": {"src.s": "identity"}},
     {"src.k": "group_by", "src.s": "group_by"}),
    ("SELECT s.id, x.item FROM src s LATERAL VIEW explode(s.items) x AS item",
     {"id": {"src.id": "identity"}, "item": {"src.items": "transformation"}}, {}),
    ("SELECT id, md5(s) AS h, COUNT(*) FILTER (WHERE v > 0) OVER (PARTITION BY k) AS pos FROM src",
     {"id": {"src.id": "identity"}, "h": {"src.s": "transformation*"}, "pos": {"src.k": "window", "src.v": "filter"}},
     {}),
    ("SELECT k FROM src UNION SELECT k FROM t",                      # UNION (distinct) groups its rows
     {"k": {"src.k": "identity", "t.k": "identity"}}, {"src.k": "group_by", "t.k": "group_by"}),
    ("SELECT id, v FROM src ORDER BY v DESC LIMIT 3", {"id": {"src.id": "identity"}, "v": {"src.v": "identity"}},
     {"src.v": "sort"}),
    ("SELECT k, SUM(CASE WHEN s = 'a' THEN v ELSE 0 END) AS sa FROM src GROUP BY k",
     {"k": {"src.k": "identity"}, "sa": {"src.v": "aggregation", "src.s": "conditional"}}, {"src.k": "group_by"}),
    ("SELECT id, IF(t.flag, src.v, NULL) AS fv FROM src LEFT JOIN t ON t.k = src.k",
     {"id": {"src.id": "identity"}, "fv": {"src.v": "transformation", "t.flag": "conditional"}},
     {"src.k": "join", "t.k": "join"}),
    ("SELECT k, v FROM src QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) = 1",
     {"k": {"src.k": "identity"}, "v": {"src.v": "identity"}}, {"src.k": "filter", "src.v": "filter"}),
    ("SELECT COUNT(*) AS n FROM src", {"n": {}}, {}),
    ("SELECT k FROM src EXCEPT SELECT k FROM t",                     # the left side's values; the right filters
     {"k": {"src.k": "identity"}}, {"src.k": "group_by", "t.k": "filter"}),
    ("SELECT k FROM src INTERSECT ALL SELECT w FROM t WHERE flag",
     {"k": {"src.k": "identity"}}, {"t.w": "filter", "t.flag": "filter"}),
    ("SELECT k, s, SUM(v) AS total FROM src GROUP BY GROUPING SETS ((k), (s))",
     {"k": {"src.k": "identity"}, "s": {"src.s": "identity"}, "total": {"src.v": "aggregation"}},
     {"src.k": "group_by", "src.s": "group_by"}),
    ("SELECT k, SUM(v) AS total FROM src GROUP BY ROLLUP (k)",
     {"k": {"src.k": "identity"}, "total": {"src.v": "aggregation"}}, {"src.k": "group_by"}),
    ("SELECT a.k, b.total FROM (SELECT k FROM src) a JOIN (SELECT k, SUM(w) total FROM t GROUP BY k) b ON a.k = b.k",
     {"k": {"src.k": "identity"}, "total": {"t.w": "aggregation"}}, {"src.k": "join", "t.k": "group_by/join"}),
])
def test_each_construct(sql, columns, rows):
    assert _lineage(sql) == (columns, rows)


AGREE = [
    "SELECT * FROM src",
    "SELECT id, CASE WHEN v > 0 THEN s ELSE 'neg' END AS label FROM src",
    "SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY id) AS running FROM src",
    "WITH c AS (SELECT k, SUM(v) AS total FROM src WHERE s <> 'x' GROUP BY k) SELECT c.k, c.total * 2 AS dbl, t.w "
    "FROM c JOIN t ON t.k = c.k",
    "SELECT d.k, d.n FROM (SELECT k, COUNT(*) AS n FROM src GROUP BY k) AS d",
    "SELECT s.id, x.item FROM src s LATERAL VIEW explode(s.items) x AS item",
    "SELECT k FROM src UNION ALL SELECT w FROM t",
    "SELECT * FROM src JOIN t USING (k)",
    "SELECT a.k, b.total FROM (SELECT k FROM src) a JOIN (SELECT k, SUM(w) total FROM t GROUP BY k) b ON a.k = b.k",
]


@pytest.mark.parametrize("sql", AGREE)
def test_the_input_columns_agree_with_sqlglots_lineage(sql):
    """sqlglot's `lineage` lists the input columns an output column's expression reaches (it does
    not tell a value from a condition): the same set as dt's per-column fields."""
    qualified = resolve(parse_one(sql, read="spark"), INPUTS, "spark").query
    found = query_lineage(qualified)
    for name, deps in found.columns.items():
        node = sqlglot_lineage(name, qualified, None, dialect="spark")
        leaves = {(n.source.name, n.name.split(".")[-1]) for n in node.walk()
                  if not n.downstream and isinstance(n.source, exp.Table)}
        assert {(f.input, f.column) for f in deps} == leaves, name


def test_columns_renamed_by_config_keep_their_lineage_by_position():
    qualified = resolve(parse_one("SELECT k, v + 1 AS w FROM src", read="spark"), INPUTS, "spark").query
    found = query_lineage(qualified, ["key", "next_v"])
    assert list(found.columns) == ["key", "next_v"] and _short(found.columns["next_v"]) == {"src.v": "transformation"}


def test_a_rewritten_query_is_traced_as_written(shop, monkeypatch):
    """A query dt's rules rewrote (notes recorded) is qualified again as the user wrote it."""
    from dtcli.planning.checked import Qualified

    monkeypatch.setattr(Qualified, "rewrites", lambda self, name: ("a rewrite",))
    monkeypatch.setattr(Qualified, "__getitem__", lambda self, name: parse_one("SELECT 1 AS nothing"))
    found = column_lineage(shop, "valid_orders")
    assert _short(found.dataset) == {"orders.status": "filter"}


def test_explain_shows_it_as_a_table_and_in_json(shop):
    root = str(shop.project.root)
    data = dt("explain", "customer_revenue", "-p", root, "--format", "json").json()
    revenue = next(c for c in data["column_lineage"]["columns"] if c["name"] == "revenue")
    assert revenue["inputs"] == [{"input": "order_items", "column": "amount",
                                  "transformations": [{"type": "DIRECT", "subtype": "AGGREGATION", "masking": False}]}]
    assert {"input": "order_items", "column": "customer_id",
            "transformations": [{"type": "INDIRECT", "subtype": "JOIN", "masking": False}]} \
        in data["column_lineage"]["dataset"]
    shown = dt("explain", "customer_revenue", "-p", root)
    assert shown.code == 0
    text = " ".join(shown.out.split())
    assert "column lineage" in text and "order_items.amount (aggregation)" in text
    assert "order_items.order_id (aggregation, masked)" in text
    assert "every row depends on: customers.country (group by)" in text
    json.dumps(data)
