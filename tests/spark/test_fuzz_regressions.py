"""Cases found by random queries (issue 27), minimized, kept through the real Spark session.

Each one failed on the incremental path; the refresh must stay INCREMENTAL (the project forces
`refresh_mode: incremental`) and equal the query recomputed at the same versions.
"""

from __future__ import annotations

import pytest

from dtcli.model import INCREMENTAL, SUCCEEDED
from tests.spark.harness import Env

pytestmark = pytest.mark.spark


def _refreshed_incrementally(env: Env, names: list[str]) -> dict:
    records = env.refresh()
    for name in names:
        record = records[name]
        assert record.state == SUCCEEDED, record.state_message
        assert record.refresh_action == INCREMENTAL, (name, record.refresh_action, record.state_message)
        env.check(name)
    return records


def test_distinct_over_a_composite_key_of_mixed_types_refreshes_incrementally(spark, tmp_path):
    """Found as `SELECT DISTINCT a.s AS s, a.g AS g FROM a WHERE COALESCE(a.v, 0) BETWEEN 1
    AND 12`: the affected (s, g) keys were once written as `(s, g) IN (('y', 3), ...)`, which
    Spark refused (DATATYPE_MISMATCH.DATA_DIFF_TYPES: named_struct(s, s, g, g) against
    named_struct(col1, 'y', col2, 3)), and the forced incremental refresh fell back to FULL."""
    env = Env(spark, tmp_path)
    env.create_source("a", "s STRING, g INT, v INT",
                      [("x", 1, 1), ("y", 3, 5), ("y", 3, 5), ("z", 6, 2), (None, 2, 7), ("x", 2, None)])
    names = ["d", "k", "m"]
    env.write({"d": "SELECT DISTINCT a.s AS s, a.g AS g FROM a WHERE COALESCE(a.v, 0) BETWEEN 1 AND 12",
               "k": "SELECT DISTINCT s, g FROM a",
               # MAX is recomputed per affected group: the composite (s, g) key as literals
               "m": "SELECT s, g, MAX(v) AS mv FROM a GROUP BY s, g"})
    assert all(r.state == SUCCEEDED for r in env.refresh().values())
    # updates, deletes and appends in one batch, no NULL in the touched keys: the literal key path
    env.sql("UPDATE {a} SET v = 20 WHERE s = 'x' AND g = 1")
    env.sql("UPDATE {a} SET g = 4 WHERE s = 'y'")
    env.sql("DELETE FROM {a} WHERE s = 'z'")
    env.sql("INSERT INTO {a} VALUES ('y', 3, 9), ('w', 5, 1), ('x', 2, 3)")
    records = _refreshed_incrementally(env, names)
    assert records["m"].refresh_strategy == "keys_recomputed", records["m"].refresh_strategy
    # NULLs inside the composite key take the join-based path: still exact and incremental
    env.sql("DELETE FROM {a} WHERE s IS NULL")
    env.sql("INSERT INTO {a} VALUES (NULL, NULL, 4), ('v', NULL, 3)")
    _refreshed_incrementally(env, names)


def test_a_composite_key_predicate_of_mixed_types_selects_exactly_its_keys(spark):
    """The predicate the keyed path replaces rows with, evaluated by Spark itself: the struct of
    the columns and the literal structs must agree in field names and types."""
    from pyspark.sql.types import IntegerType, StringType

    from dtcli.engine.runtime.key_predicates import match_keys

    df = spark.createDataFrame([("y", 3), ("y", 4), ("x", 3), (None, 3), ("w", 5)], "s STRING, g INT")
    predicate = match_keys(["s", "g"], [StringType(), IntegerType()], [("y", 3), ("w", 5)])
    assert sorted(tuple(r) for r in df.filter(predicate).collect()) == [("w", 5), ("y", 3)]


def test_a_composite_key_compared_as_text_selects_exactly_its_keys_for_every_type(spark):
    """A composite key of integers, strings, dates and booleans is compared as one string per
    row: Spark's text of each column must be the text dt writes for each key, and no two rows may
    read the same (strings holding the separators, empty strings, characters beyond 16 bits,
    negative numbers, years before 1000, NULLs)."""
    from datetime import date

    from dtcli.engine.runtime.key_predicates import match_keys

    schema = "s STRING, t STRING, b TINYINT, h SMALLINT, i INT, l BIGINT, d DATE, f BOOLEAN"
    rows = [("a|b", "c", 1, 1, 1, 1, date(2024, 1, 31), True),      # the same text without the
            ("a", "b|c", 1, 1, 1, 1, date(2024, 1, 31), True),      # strings' lengths in front
            ("", "", -128, -32768, -2147483648, -9223372036854775808, date(5, 1, 1), False),
            ("x'y\\z", "\U0001F600é", 127, 32767, 2147483647, 9223372036854775807, date(9999, 12, 31), True),
            ("1:", ":1", 0, 0, 0, 0, date(1970, 1, 1), False),
            (None, "c", 1, 1, 1, 1, date(2024, 1, 31), True),
            ("a|b", None, 1, 1, 1, 1, date(2024, 1, 31), True)]
    df = spark.createDataFrame(rows, schema)
    types = [f.dataType for f in df.schema.fields]
    columns = df.columns
    for chosen in ([0], [1], [2, 3, 4], [0, 1, 2, 3, 4]):
        keys = [rows[n] for n in chosen]
        predicate = match_keys(columns, types, keys)
        assert predicate is not None and "named_struct" not in predicate
        assert sorted(tuple(r) for r in df.filter(predicate).collect()) == sorted(keys), predicate
