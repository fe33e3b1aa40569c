"""Explain's operator table and the refresh mode tell one story: a DT refreshes incrementally
exactly when every row of its operator table does (no JVM)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import dt, write_project

QUERIES = {
    "two_outer": "SELECT a.id, b.v AS bv, c.v AS cv FROM a LEFT JOIN b ON a.id = b.id LEFT JOIN c ON a.id = c.id",
    "one_outer": "SELECT a.id, b.v AS bv FROM a LEFT JOIN b ON a.id = b.id",
    "full_outer": "SELECT a.id, b.v AS bv FROM a FULL OUTER JOIN b ON a.id = b.id",
    "agg": "SELECT id, SUM(v) AS s, COUNT(*) AS n FROM a GROUP BY id",
    "distinct": "SELECT DISTINCT v FROM a",
    "window": "SELECT id, v, RANK() OVER (PARTITION BY id ORDER BY v) AS r FROM a",
    "union": "SELECT id, v FROM a UNION ALL SELECT id, v FROM b",
    "limit": "SELECT id FROM a ORDER BY id LIMIT 1",
    "top_grouped": "SELECT id, SUM(v) AS s FROM a GROUP BY id ORDER BY s DESC LIMIT 2",
    "top_hidden": "SELECT id FROM a ORDER BY v DESC LIMIT 2 OFFSET 1",
    "top_distinct_hidden": "SELECT DISTINCT id FROM a ORDER BY v LIMIT 2",
    "inner_limit": "SELECT id FROM (SELECT id FROM a ORDER BY id LIMIT 1) AS s",
    "nondeterministic": "SELECT id, rand() AS r FROM a",
    "scalar_agg": "SELECT COUNT(*) AS n FROM a",
    "except": "SELECT id, v FROM a EXCEPT SELECT id, v FROM b",
    "intersect_all": "SELECT id FROM a INTERSECT ALL SELECT id FROM b",
    "union_distinct": "SELECT id FROM a UNION SELECT id FROM b",
    "rollup": "SELECT id, SUM(v) AS s FROM a GROUP BY ROLLUP (id)",
    "hidden_key": "SELECT SUM(v) AS s FROM a GROUP BY id",
    "averages": "SELECT id, AVG(v) AS m, SUM(v) AS s FROM a GROUP BY id HAVING COUNT(*) > 1",
    "averages_off": "SELECT id, AVG(v) AS m, SUM(v) AS s FROM a GROUP BY id HAVING COUNT(*) > 1",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("agree") / "p", QUERIES,
                         seeds={s: "id,v\n1,2\n" for s in ("a", "b", "c")},
                         table_yml={"averages_off": "aggregate_totals: false\n"})
    assert dt("seed", "-p", str(root)).code == 0
    return root


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_the_mode_is_incremental_exactly_when_every_operator_is(project, name):
    result = dt("explain", name, "-p", str(project), "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    operators = doc["operators"]
    assert operators
    every = all(op["incremental"] for op in operators)
    assert every == (doc["refresh_mode"] != "FULL"), (doc["refresh_mode"], doc["refresh_mode_reason"], operators)


def test_explain_lists_the_internal_tables_a_dt_keeps(project):
    """A top-N over an aggregate keeps the rows under it (not created before its first run);
    one over a filter of one input keeps none."""
    doc = json.loads(dt("explain", "top_grouped", "-p", str(project), "--format", "json").out)
    (table,) = doc["internal_tables"]
    assert table["role"] == "top_n_rows" and table["maintained"] and table["version"] is None
    assert table["path"] == str(project / "warehouse" / "_dt" / "internal" / "top_grouped" / "top_n_rows")
    assert json.loads(dt("explain", "limit", "-p", str(project), "--format", "json").out)["internal_tables"] == []
    shown = json.loads(dt("show", "dynamic", "tables", "-p", str(project), "--internal", "--format", "json").out)
    assert {r["name"]: [t["role"] for t in r["internal_tables"]] for r in shown}["top_grouped"] == ["top_n_rows"]
    assert "internal_tables" not in json.loads(dt("show", "dynamic", "tables", "-p", str(project),
                                                  "--format", "json").out)[0]


def test_explain_shows_how_a_top_n_is_split(project):
    doc = json.loads(dt("explain", "top_hidden", "-p", str(project), "--format", "json").out)
    top = doc["top_n"]
    assert (top["limit"], top["offset"], top["hidden_sort_columns"]) == (2, 1, 1)
    assert "__dt_s0" in top["inner_sql"] and "LIMIT" not in top["inner_sql"]
    assert top["recomputed_from"] == "its input" and doc["rewritten_sql"] is None
    printed = dt("explain", "top_grouped", "-p", str(project))
    assert printed.code == 0 and "top-N: the rows 1..2" in printed.out and "internal tables" in printed.out


def test_explain_lists_the_running_totals_of_an_aggregate_and_how_it_refreshes(project):
    """An aggregate of COUNT / SUM / AVG keeps its running totals (sql/rules/aggregate_totals.py)
    and says so in a row of its own; with `aggregate_totals: false`, or when its outputs are its
    keys, COUNT(*) and SUMs (its own rows are its totals), it keeps none."""
    doc = json.loads(dt("explain", "averages", "-p", str(project), "--format", "json").out)
    (table,) = doc["internal_tables"]
    assert table["role"] == "aggregate_totals" and table["maintained"] and "COUNT(*)" in table["holds"]
    (row,) = [op for op in doc["operators"] if "aggregate_totals" in op["strategy"]]
    assert row["incremental"] and "running totals" in row["strategy"]
    for name in ("averages_off", "agg"):
        doc = json.loads(dt("explain", name, "-p", str(project), "--format", "json").out)
        assert doc["internal_tables"] == [], name
        assert not [op for op in doc["operators"] if "aggregate_totals" in op["strategy"]], name
    printed = dt("explain", "averages", "-p", str(project))
    assert printed.code == 0 and "aggregate_totals" in printed.out
