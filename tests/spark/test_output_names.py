"""Unaliased outputs take the names Spark gives them (sql/spark_names.py), and a DT whose names
Delta holds only with column mapping works end to end: created, refreshed incrementally (keyed,
from its own rows, row by row), read by a downstream DT through its change data feed, and read
without a JVM (dt's log readers, the `deltalake` package)."""

from __future__ import annotations

import pytest
import sqlglot

from dtcli.model import INCREMENTAL, SUCCEEDED
from dtcli.sql.spark_names import output_name
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

# every form sql/spark_names.py names, as a user writes it (`L_Q` as written: its table spells it `l_q`)
NAMED = [
    "sum(L_Q)", "SUM(t.l_q)", "count(*)", "count(1)", "COUNT(k)", "count(DISTINCT k)", "count(distinct k, g)",
    "avg(d)", "min(g)", "max(k)", "k + 1", "t.k + 1", "k - 1", "k * 2", "k / 2", "k % 2", "k div 2",
    "-k", "(k + 1) * 2", "k + 1 * 2", "k > 1", "k >= 1", "k < 1", "k <= 1", "k = 1", "k == 1", "k <> 1",
    "k != 1", "k <=> 1", "NOT b", "b AND k > 1", "b OR false", "k IS NULL", "k IS NOT NULL",
    "k IN (1, 2)", "k NOT IN (1, 2)", "k BETWEEN 1 AND 3", "g LIKE 'x%'", "g NOT LIKE 'x%'",
    "g RLIKE 'x'", "CAST(k AS STRING)", "cast(k as bigint)", "CAST(d AS DECIMAL(10,2))", "k::string",
    "TRY_CAST(g AS INT)", "1.5", "'abc'", "NULL", "true", "1L", "2.5D", "1.5BD", "upper(g)", "UPPER(g)",
    "ucase(g)", "lower(g)", "concat(g, 'y')", "concat_ws('-', g, g)", "coalesce(k, 0)",
    "COALESCE(g, 'n')", "nvl(k, 0)", "ifnull(k, 0)", "if(k > 1, 'a', 'b')", "IF(b, 1, 2)",
    "CASE WHEN k > 1 THEN 'a' ELSE 'b' END", "CASE k WHEN 1 THEN 'a' END",
    "CASE WHEN k > 1 THEN 'a' WHEN k > 0 THEN 'b' END", "trim(g)", "length(g)", "round(d, 1)",
    "round(avg(d), 2)", "abs(k)", "floor(d)", "ceil(d)", "sqrt(k)", "pow(k, 2)", "power(k, 2)",
    "year(dt)", "month(dt)", "md5(g)", "greatest(k, 2)", "least(k, 2)", "nullif(k, 1)", "stddev(k)",
    "first(k)", "array_agg(k)", "any_value(k)", "bool_and(b)", "sum(k) / count(*)", "sum(k * d)",
    "sum(dec * (1 - dec))", "sum(CASE WHEN g = 'x' THEN k ELSE 0 END)", "100.00 * sum(k) / sum(d)",
    "count(*) > 1", "max(k) - min(k)", "k || g",
    # spelt in any case, named in lower case by the name written (TPC-DS q79, q85, q99)
    "SUBSTRING(g, 1, 2)", "substring(g, 1, 2)", "SUBSTR(g, 1, 2)", "Substr(g, 2)", "SUBSTRING(g FROM 2 FOR 1)",
    "substr(g FROM 2)",
    "substring(upper(g), 1, k + 1)", "ceiling(d)", "CEILING(d)", "CEIL(d)", "LEFT(g, 2)", "right(g, 2)",
    "REPLACE(g, 'x', 'y')", "char_length(g)", "LENGTH(g)",
    "sum(k) FILTER (WHERE k > 1)", "count(*) filter (where g = 'x')", "count_if(k > 1)", "stddev_samp(k)",
    "stddev_pop(k)", "variance(k)", "var_samp(k)", "var_pop(k)", "collect_set(k)",
]
# forms only a grouping by ROLLUP, CUBE or GROUPING SETS allows (TPC-DS q27, q36, q70, q86)
GROUPED = ["grouping(k)", "GROUPING(t.k)", "grouping_id(k, g)", "grouping_id()"]


def test_dt_names_unaliased_outputs_as_spark_does(spark):
    spark.sql("CREATE OR REPLACE TEMP VIEW t AS SELECT * FROM VALUES (1, 'x', 2.5, DATE '2024-01-02', "
              "CAST(1.25 AS DECIMAL(12,2)), true, 3) AS t(k, g, d, dt, dec, b, l_q)")
    wrong = {}
    for expr in NAMED + GROUPED:
        text = f"SELECT {expr} FROM t" + (" GROUP BY ROLLUP(k, g)" if expr in GROUPED else "")
        ours = output_name(sqlglot.parse_one(text, read="spark").selects[0], text)
        theirs = spark.sql(text).columns[0]
        if ours != theirs:
            wrong[expr] = (ours, theirs)
    assert not wrong, "\n".join(f"{e}: dt {o!r}, Spark {t!r}" for e, (o, t) in wrong.items())


def test_a_dt_with_spark_named_columns_refreshes_and_is_read(spark, tmp_path):
    from deltalake import DeltaTable

    from dtcli.state.delta_log import table_info

    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT",
                      [(1, "x", 1), (1, "x", 1), (2, None, 3), (None, "y", None), (3, "z", 4)])
    tables = {
        # from its own rows (counts), its keys selected
        "agg": "SELECT g, count(k), count(*) FROM a GROUP BY g",
        # its keys recomputed and replaced (MAX cannot be subtracted)
        "keyed": "SELECT g, max(v) + 1, count(DISTINCT k) FROM a GROUP BY g",
        # row by row
        "rows": "SELECT k, v * 2, upper(g) FROM a WHERE v IS NULL OR v > 0",
        # a DT reading one: its columns named as the upstream names them, read from its feed
        "down": "SELECT g, `count(k)` AS s, `count(1)` + 1 FROM agg WHERE `count(1)` > 0",
        # named plainly, until redefined below
        "plain": "SELECT k, v AS vv FROM a",
    }
    env.write(tables)
    records = env.refresh()
    assert all(r.state == SUCCEEDED for r in records.values()), {n: (r.state, r.state_message) for n, r in records.items()}
    expected = {"agg": ["g", "count(k)", "count(1)"], "keyed": ["g", "(max(v) + 1)", "count(DISTINCT k)"],
                "rows": ["k", "(v * 2)", "upper(g)"], "down": ["g", "s", "(count(1) + 1)"]}
    project = env.project("agg")
    for name, names in expected.items():
        path = project.table_path(name)
        assert spark.read.format("delta").load(path).columns == names
        info = table_info(path)
        assert [c.name for c in info.schema] == names                     # dt's own log reader
        assert info.properties.get("delta.columnMapping.mode") == "name"
        assert DeltaTable(path).schema().to_arrow().names == names          # the deltalake package
        env.check(name)
    env.sql("INSERT INTO {a} VALUES (4, 'x', 2), (NULL, NULL, 5)")
    env.sql("UPDATE {a} SET v = v + 1 WHERE g = 'z'")
    env.sql("DELETE FROM {a} WHERE k = 2")
    records = env.refresh()
    for name in tables:
        assert records[name].state == SUCCEEDED, (name, records[name].state_message)
        assert records[name].refresh_action == INCREMENTAL, (name, records[name].state_message)
        env.check(name)
    assert records["agg"].refresh_strategy == "own_rows_aggregate", records["agg"].refresh_strategy
    assert records["keyed"].refresh_strategy == "keys_recomputed", records["keyed"].refresh_strategy
    # redefined: a mapped table with other columns, a plain one that now needs mapping (Delta
    # refuses both in one statement while the change data feed is on: engine/runtime/column_mapping.py)
    tables.update({"agg": "SELECT g, count(*), max(k) FROM a GROUP BY g",
                   "down": "SELECT g, `count(1)` + 1 FROM agg",
                   "plain": "SELECT k, v + 1 FROM a"})
    env.write(tables)
    records = env.refresh()
    assert all(r.state == SUCCEEDED for r in records.values()), {n: (r.state, r.state_message) for n, r in records.items()}
    for name, names in {"agg": ["g", "count(1)", "max(k)"], "down": ["g", "(count(1) + 1)"],
                        "plain": ["k", "(v + 1)"]}.items():
        assert spark.read.format("delta").load(project.table_path(name)).columns == names
        env.check(name)
    env.sql("INSERT INTO {a} VALUES (5, 'x', 9)")
    records = env.refresh()
    for name in tables:
        assert records[name].refresh_action == INCREMENTAL, (name, records[name].state_message)
        env.check(name)
