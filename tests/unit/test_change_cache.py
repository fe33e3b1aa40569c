"""The driver's projection of a run-wide change (engine/runtime/change_cache.py): weights summed
per projected row as Spark's groupBy would, zeros dropped; types whose Python equality is not
Spark's are left to each refresh's own read. No JVM."""

from __future__ import annotations

import math
from decimal import Decimal

from pyspark.sql import types as T

from dtcli.engine.runtime.change_cache import ChangeCache, Shared, _positions, net, plain


def _sorted(rows):
    return sorted(rows, key=repr)


def test_a_row_changed_only_in_a_column_not_read_cancels_out():
    # (k, g, v, weight): k=1's v was updated, k=2 was inserted
    rows = [(1, "x", 10, -1), (1, "x", 11, 1), (2, "y", 5, 1)]
    assert _sorted(net(rows, [0, 1])) == [(2, "y", 1)]
    assert _sorted(net(rows, [0, 2])) == [(1, 10, -1), (1, 11, 1), (2, 5, 1)]
    assert net(rows, [1, 0]) == [("y", 2, 1)]        # in the order asked


def test_nulls_group_together_and_duplicates_add_up():
    rows = [(None, "a", 1), (None, "b", 1), (None, "a", 2), (1, None, -1), (1, None, -1)]
    assert _sorted(net(rows, [0])) == [(1, -2), (None, 4)]
    assert _sorted(net(rows, [0, 1])) == [(1, None, -2), (None, "a", 3), (None, "b", 1)]


def test_no_column_read_nets_to_one_row_of_the_total_weight_or_none():
    assert net([(1, 1), (2, 1), (3, -1)], []) == [(1,)]
    assert net([(1, 1), (2, -1)], []) == []


def test_nan_groups_with_nan_and_negative_zero_with_zero_as_spark_groups_them():
    rows = [(float("nan"), 1, 1), (float("nan"), 2, 1), (-0.0, 3, 1), (0.0, 4, -1), (1.5, 5, 1)]
    out = {("nan" if math.isnan(r[0]) else r[0]): r[1] for r in net(rows, [0], floats={0})}
    assert out == {"nan": 2, 1.5: 1}       # -0.0 and 0.0 cancel
    [(zero, weight)] = net([(-0.0, 1, 1)], [0], floats={0})
    assert (math.copysign(1, zero), weight) == (1.0, 1)       # Spark's key is 0.0
    assert net([(None, 1, 1)], [0], floats={0}) == [(None, 1)]


def test_decimals_and_dates_compare_by_value():
    import datetime

    d = datetime.date(2026, 1, 2)
    rows = [(Decimal("1.50"), d, 1), (Decimal("1.50"), d, -1), (Decimal("2.00"), d, 1)]
    assert net(rows, [0, 1]) == [(Decimal("2.00"), d, 1)]


def test_only_types_python_compares_as_spark_groups_are_taken_from_the_cache():
    for t in (T.IntegerType(), T.LongType(), T.ShortType(), T.ByteType(), T.BooleanType(),
              T.DoubleType(), T.FloatType(), T.DecimalType(12, 2), T.DateType(), T.StringType()):
        assert plain(t), t
    for t in (T.TimestampType(), T.TimestampNTZType(), T.BinaryType(), T.StringType("UTF8_LCASE"),
              T.ArrayType(T.IntegerType()), T.MapType(T.StringType(), T.IntegerType()),
              T.StructType([T.StructField("a", T.IntegerType())]), T.CharType(3), T.VarcharType(3)):
        assert not plain(t), t


def test_a_column_the_entry_does_not_hold_is_read_by_the_refresh_itself():
    fields = [T.StructField("K", T.IntegerType()), T.StructField("v", T.DoubleType()),
              T.StructField("__dt_w", T.LongType())]
    whole = Shared(fields, [], complete=True)
    partial = Shared(fields, [], complete=False)      # a binary column was left out
    assert _positions(whole, ["v", "k"]) == [1, 0]    # names as Spark resolves them
    assert _positions(whole, None) == [0, 1]
    assert _positions(partial, None) is None
    assert _positions(partial, ["k", "b"]) is None
    assert _positions(partial, []) == []


def test_a_change_the_run_committed_is_kept_netted_as_its_feed_would_be_and_read_by_nobody():
    fields = [T.StructField("k", T.IntegerType()), T.StructField("at", T.TimestampType()),
              T.StructField("v", T.DoubleType()), T.StructField("__dt_w", T.LongType())]
    cache = ChangeCache()
    # k=1 changed only in a timestamp (a type the cache leaves out): it cancels, as a read would
    rows = [(1, "t0", 2.0, -1), (1, "t1", 2.0, 1), (2, "t1", -0.0, 1)]
    cache.seed("/t", 4, 5, fields, rows)
    assert cache.seeded("/t", 4, 5) is None             # not every column: not whole
    whole = fields[:1] + fields[2:]
    cache.seed("/u", 4, 5, whole, [(1, 2.0, -1), (1, 3.0, 1), (1, 3.0, 1), (2, 1.0, 1), (2, 1.0, -1)])
    shared = cache.seeded("/u", 4, 5)
    assert shared.complete and _sorted(shared.rows) == [(1, 2.0, -1), (1, 3.0, 2)]
    assert cache.seeded("/u", 5, 6) is None and cache.seeded("/v", 4, 5) is None
    cache.seed("/u", 4, 5, whole, [])                   # the first entry of a key stays
    assert cache.seeded("/u", 4, 5).rows == shared.rows
    small = ChangeCache(max_cells=5)                    # past the budget: not kept
    small.seed("/u", 0, 1, whole, [(k, 1.0, 1) for k in range(3)])
    assert small.seeded("/u", 0, 1) is None
    cache.clear()
    assert cache.seeded("/u", 4, 5) is None
