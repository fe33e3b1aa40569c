"""Which subquery aggregates a DT keeps as running totals (sql/rules/kept_aggregates.py): not one
grouped by the leading columns of its input's declared primary key, whose groups are a few rows
found by key (the lines of an order), but one grouped by any other column, and any over an input
that declares no key. Decided when the project is checked: no JVM."""

from __future__ import annotations

import pytest

from tests.helpers import dt, write_project

LINES = "order_id,line,part,qty\n1,1,7,3\n1,2,8,20\n2,1,7,5\n"
BIG_ORDERS = ("SELECT l.order_id, SUM(l.qty) AS q FROM {t} AS l WHERE l.order_id IN "
              "(SELECT order_id FROM {t} GROUP BY order_id HAVING SUM(qty) > 10) GROUP BY l.order_id")
SMALL_LINES = ("SELECT l.order_id, l.line FROM {t} AS l "
               "WHERE l.qty < (SELECT 0.5 * AVG(l2.qty) FROM {t} AS l2 WHERE l2.part = l.part)")


@pytest.fixture(scope="module")
def kept(tmp_path_factory) -> dict[str, list[str]]:
    """The kept_aggregate roles `dt explain` lists per DT."""
    from dtcli import api
    from dtcli.artifacts.typed_json import to_json
    from dtcli.planning.explain import explain
    from dtcli.project import load_project

    tables = {"big_orders": BIG_ORDERS.format(t="lines"), "small_lines": SMALL_LINES.format(t="lines"),
              "big_orders_nokey": BIG_ORDERS.format(t="lines_nokey")}
    yml = {name: "refresh_mode: incremental\n" for name in tables}
    root = write_project(tmp_path_factory.mktemp("kept") / "p", tables, table_yml=yml,
                         seeds={"lines": LINES, "lines_nokey": LINES})
    (root / "seeds" / "lines.yml").write_text("primary_key: [order_id, line]\n")
    assert dt("seed", "-p", str(root)).code == 0
    checked = api.check(load_project(root))
    out = {}
    for name in tables:
        doc = to_json(explain(checked, name))
        assert doc["refresh_mode"] == "INCREMENTAL", (name, doc["refresh_mode_reason"])
        out[name] = [t["role"] for t in doc["internal_tables"] if t["role"].startswith("kept_aggregate_")]
        out[name + " by key"] = [o["strategy"] for o in doc["operators"]
                                 if o["operator"].startswith("aggregate recomputed by key")]
    return out


def test_groups_by_the_leading_key_columns_are_recomputed_not_kept(kept):
    assert kept["big_orders"] == []
    # explain says why, naming the input and its key
    [why] = kept["big_orders by key"]
    assert "lines's primary key (order_id, line)" in why, why


def test_groups_by_another_column_are_kept(kept):
    assert kept["small_lines"] == ["kept_aggregate_1"]
    assert kept["small_lines by key"] == []


def test_without_a_declared_key_the_groups_are_kept(kept):
    assert kept["big_orders_nokey"] == ["kept_aggregate_1"]
