"""Which scans a change's join values are pushed into (engine/runtime/narrowing.py), decided
from the scanned table's log without a JVM: only where its files' statistics say the predicate
skips enough of them."""

from __future__ import annotations

from datetime import date, datetime

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyspark.sql.types import DoubleType, LongType, TimestampType
from sqlglot import exp

from dtcli.engine.runtime import narrowing
from dtcli.engine.runtime.narrowing import Narrowing
from dtcli.state.delta_log import file_stats


class Change:
    """An input's change as the pushdown sees it: the values of its columns (ChangeSet.values)."""

    def __init__(self, columns: dict[str, tuple[list, object]]):
        self.columns = columns

    def values(self, column: str):
        return self.columns.get(column)


def _table(path, files: list[list[int]]) -> str:
    """A Delta table of column `k` (and a date column `d`), one file per list of keys."""
    for n, keys in enumerate(files):
        data = pa.table({"k": pa.array(keys, pa.int64()),
                         "d": pa.array([date(2020, 1, 1 + n)] * len(keys), pa.date32())})
        write_deltalake(str(path), data, mode="append")
    return str(path)


def _in_key_order(stats) -> list[int]:
    """The files' sizes ordered by their smallest key (the log lists them in any order)."""
    return [size for _, size in sorted(zip(stats.bounds("k")[0], stats.sizes))]


def test_file_stats_tell_the_bytes_a_range_filter_skips(tmp_path):
    path = _table(tmp_path / "t", [[1, 2, 3], [10, 11, 12], [20, 25]])
    stats = file_stats(path)
    assert len(stats.sizes) == 3 and stats.bytes == sum(stats.sizes)
    sizes = _in_key_order(stats)
    assert stats.skipped_bytes("k", [(11, 11)]) == sizes[0] + sizes[2]
    assert stats.skipped_bytes("K", [(3, 10)]) == sizes[2]          # touches two files' ends
    assert stats.skipped_bytes("k", [(4, 9), (13, 19)]) == stats.bytes
    assert stats.skipped_bytes("k", [(0, 100)]) == 0
    assert stats.skipped_bytes("d", [(date(2020, 1, 2), date(2020, 1, 2))]) == sizes[0] + sizes[2]
    assert stats.skipped_bytes("nope", [(1, 1)]) is None            # no statistics: cannot tell
    assert stats.skipped_bytes("k", [("a", "b")]) is None           # values of another type
    assert file_stats(path, version=0).sizes == sizes[:1]
    assert file_stats(str(tmp_path / "none")) is None


def test_a_change_is_pushed_only_into_scans_it_skips_enough_of(tmp_path, monkeypatch):
    path = _table(tmp_path / "big", [[1, 2, 3], [10, 11, 12], [20, 25]])
    sizes = _in_key_order(file_stats(path))
    monkeypatch.setattr(narrowing, "SMALL_INPUT_BYTES", 0)
    monkeypatch.setattr(narrowing, "SKIP_WORTH_BYTES", sizes[0] + sizes[2] - 1)
    change = Change({"k": ([11, None, 12], LongType())})
    narrow = Narrowing({"t": change}, {"t": ("/nowhere", 1), "big": (path, None)})
    col = exp.column("k", "big")
    # skips the first and last files: worth it, and the predicate names the values (no NULL)
    pushed = narrow("t", "k", "big")(col).sql(dialect="spark")
    assert "big.k IN (11L, 12L)" in pushed and "NULL" not in pushed
    # values spanning every file skip none: the scan is left as it is
    assert narrow.__class__({"t": Change({"k": ([2, 11, 25], LongType())})},
                            narrow.inputs)("t", "k", "big")(col) is None
    # a FROM item that is no input table (a subquery) is narrowed: its scans are its own
    assert narrow("t", "k", None)(col) is not None
    monkeypatch.setattr(narrowing, "SMALL_INPUT_BYTES", sum(sizes))
    assert narrow("t", "k", "big") is None          # small: read whole
    assert narrow("t", "missing", "big") is None    # values not known


@pytest.mark.parametrize("values, data_type", [
    ([1.5, 2.5], DoubleType()), ([datetime(2020, 1, 1, 12, 0)], TimestampType())])
def test_values_that_cannot_be_written_as_literals_are_joined_not_named(values, data_type):
    """A double or a timestamp does not round-trip as a literal: nothing is pushed (before, the
    term got `false` and lost every row it should have joined)."""
    narrow = Narrowing({"t": Change({"x": (values, data_type)})}, {})
    assert narrow("t", "x", None) is None


def test_a_change_whose_join_column_is_only_null_joins_nothing():
    narrow = Narrowing({"t": Change({"x": ([None, None], DoubleType())})}, {})
    assert narrow("t", "x", None)(exp.column("x", "u")) == exp.false()


def test_a_key_set_value_not_written_as_a_literal_narrows_nothing():
    """A key set's column filter (strategies/incremental.py) leaves the scan whole when one of
    the keys cannot be written as a literal: `false` there would join no row."""
    from decimal import Decimal

    from pyspark.sql.types import DecimalType

    from dtcli.engine.runtime.key_sets import column_filter as _column_filter

    column = exp.column("k", table="t")
    restrict = _column_filter([Decimal("1.50"), Decimal("NaN")], DecimalType(10, 2))
    assert restrict(column) is None
    restrict = _column_filter([Decimal("1.50"), None], DecimalType(10, 2))
    assert "IS NULL" in restrict(column).sql() and "1.50" in restrict(column).sql()
    assert _column_filter([], LongType())(column) == exp.false()


def test_a_chain_of_equalities_carries_values_only_between_columns_of_one_type(tmp_path):
    """Through `via` (pushdown.py's chains through input tables to a derived table's column):
    a BIGINT key equal to a BIGINT equal to the derived column carries the change's values; a
    STRING in the chain does not ('01' = 1 and 1 = '1', yet '01' <> '1')."""
    ints = _table(tmp_path / "ints", [[1, 2]])
    texts = str(tmp_path / "texts")
    write_deltalake(texts, pa.table({"k": pa.array(["01", "2"])}))
    narrow = Narrowing({"t": Change({"k": ([1, 2], LongType())})},
                       {"t": (ints, None), "same": (ints, None), "text": (texts, None)})
    col = exp.column("k", "d")
    assert narrow("t", "k", None, via=[("same", "k")])(col) is not None
    assert narrow("t", "k", None, via=[("text", "k")]) is None
    assert narrow("t", "k", None, via=[("same", "missing")]) is None
