"""Sources declared by table name: bad declarations are exit 2 with file and line (no JVM)."""

from __future__ import annotations

import pytest

from tests.helpers import dt, write_project

TABLES = {"paid": "SELECT order_id FROM orders"}


@pytest.mark.parametrize("spec, said", [
    ("{table: raw.orders, path: data/orders}", "has both a path and a table name"),
    ("{table: 'raw orders'}", "is not a qualified table name"),
    ("{table: orders}", "is not a qualified table name"),
    ("{table: a.b.c.d}", "is not a qualified table name"),
])
def test_a_bad_table_declaration_is_exit_2_with_file_and_line(tmp_path, spec, said):
    root = write_project(tmp_path / "p", TABLES, config=f"sources:\n  orders: {spec}\n")
    result = dt("validate", "-p", str(root))
    assert result.code == 2
    assert said in result.err and "dt_project.yml:" in result.err
    assert not (root / "warehouse").exists()


def test_a_name_never_looked_up_tells_how_to_look_it_up(tmp_path):
    root = write_project(tmp_path / "p", TABLES, config="sources:\n  orders:\n    table: Raw.Orders\n")
    result = dt("validate", "-p", str(root))
    assert result.code == 2
    assert "source 'orders' is the table raw.orders, which has not been looked up" in result.err
    assert "`dt run` looks table names up" in result.err


def test_a_dry_run_does_not_start_spark_to_look_names_up(tmp_path):
    root = write_project(tmp_path / "p", TABLES, config="sources:\n  orders:\n    table: raw.orders\n")
    result = dt("run", "--dry-run", "-p", str(root))
    assert result.code == 2 and "has not been looked up" in result.err
