"""Keys a user writes are used or refused, never silently ignored: a source's declared columns
are checked against its Delta table, seeds/<name>.yml keys are checked, descriptions and the
project's version reach the docs and run_results (no JVM)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import dt, write_project

SEEDS = {"orders": "order_id,amount,note\n1,1.5,a\n2,3.0,\n"}
TABLES = {"paid": "SELECT order_id, amount FROM orders WHERE amount > 2"}


def _project(tmp_path, config=""):
    root = write_project(tmp_path / "p", TABLES, seeds=SEEDS, config=config)
    assert dt("seed", "-p", str(root)).code == 0
    return root


def _declared(tmp_path, columns: str):
    root = _project(tmp_path)
    # the seed, declared again as a path source with columns
    (root / "dt_project.yml").write_text((root / "dt_project.yml").read_text() +
                                         f"sources:\n  raw_orders:\n    path: warehouse/orders\n"
                                         f"    columns: {columns}\n")
    (root / "tables" / "paid.sql").write_text("SELECT order_id, amount FROM raw_orders WHERE amount > 2\n")
    return root


def test_declared_columns_that_match_the_delta_table_pass(tmp_path):
    root = _declared(tmp_path, "[{name: order_id, type: bigint}, {name: amount, type: double}, note]")
    result = dt("validate", "-p", str(root))
    assert result.code == 0, result.err


@pytest.mark.parametrize("columns, said", [
    ("[order_id, customer_id]", "declares column 'customer_id', which its Delta table does not have"),
    ("{order_id: int}", "declares column 'order_id' as int, but its Delta table has BIGINT"),
    ("[{name: amount, kind: x}]", "unknown key 'kind' in a column"),
    ("7", "columns must be a list of names"),
])
def test_declared_columns_that_differ_are_exit_2_naming_the_column(tmp_path, columns, said):
    root = _declared(tmp_path, columns)
    result = dt("validate", "-p", str(root))
    assert result.code == 2, result.err
    assert said in result.err and "dt_project.yml:" in result.err


def test_a_typo_in_a_seed_yml_is_exit_2_with_a_suggestion(tmp_path):
    root = _project(tmp_path)
    (root / "seeds" / "orders.yml").write_text("primary_key: [order_id]\nrelly: true\n")
    result = dt("validate", "-p", str(root))
    assert result.code == 2
    assert "unknown seed 'orders' key 'relly'" in result.err and "orders.yml:2" in result.err
    assert "rely" in result.err


def test_descriptions_and_the_project_version_reach_the_docs(tmp_path):
    root = _project(tmp_path, config="version: '1.4'\n")
    (root / "seeds" / "orders.yml").write_text("description: Orders from the <b>shop</b>\n")
    assert dt("docs", "generate", "-p", str(root)).code == 0
    doc = json.loads((root / "target" / "docs" / "project.json").read_text())
    assert doc["metadata"]["project_version"] == "1.4"
    assert doc["sources"]["orders"]["description"] == "Orders from the <b>shop</b>"
    page = next((root / "target" / "docs").glob("sources/orders*.html")).read_text()
    assert "Orders from the &lt;b&gt;shop&lt;/b&gt;" in page
