"""Spark's side of `dt test --unit`: a unit test's rows written as Delta tables, and the DT's
rows compared with the expected ones (dtcli/api/unit_tests.py runs the cases).

Given and expected values arrive as YAML or CSV gives them; each becomes text and is cast to
its column's type by Spark (`CAST('2026-01-02' AS DATE)`, `CAST('10.5' AS DECIMAL(12,2))`), so
a value means what it would mean in SQL. A column a row leaves out is NULL, as in dbt.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass, field

from dtcli.unit_tests import GivenRow


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _frame(spark, rows: list[GivenRow], columns: list[tuple[str, str | None]]):
    """The rows as a DataFrame of `columns` (name, Spark SQL type; None: the text as it is)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(name, StringType()) for name, _ in columns])
    data = [tuple(_text(row.get(name.lower())) for name, _ in columns) for row in rows]
    frame = spark.createDataFrame(data, schema)
    return frame.select([F.col(f"`{name}`").cast(kind).alias(name) if kind else F.col(f"`{name}`")
                         for name, kind in columns])


def write_input(spark, path: str, rows: list[GivenRow], columns: list[tuple[str, str | None]],
                before: list[GivenRow] | None = None) -> None:
    """Write `rows` as the Delta table at `path` (the session creates it with the change data
    feed on). `before`: the rows it holds now; when `rows` only adds to them, the new rows are
    appended (an insert-only change), else the table is overwritten (Delta records every old
    row deleted and every new one inserted; the refresh nets them out)."""
    if before is None:
        _frame(spark, rows, columns).write.format("delta").mode("overwrite").save(path)
        return
    key = [json.dumps([_text(r.get(n.lower())) for n, _ in columns]) for r in rows]
    old = Counter(json.dumps([_text(r.get(n.lower())) for n, _ in columns]) for r in before)
    added = Counter(key) - old
    if not (old - Counter(key)):
        left = dict(added)
        new = []
        for row, k in zip(rows, key):
            if left.get(k):
                left[k] -= 1
                new.append(row)
        if new:
            _frame(spark, new, columns).write.format("delta").mode("append").save(path)
        return
    _frame(spark, rows, columns).write.format("delta").mode("overwrite").save(path)


@dataclass
class Comparison:
    columns: list[str]
    expected: list[tuple] = field(default_factory=list)
    actual: list[tuple] = field(default_factory=list)

    @property
    def missing(self) -> list[tuple]:
        """Expected rows the DT does not hold (as many times as they are short)."""
        return list((Counter(self.expected) - Counter(self.actual)).elements())

    @property
    def unexpected(self) -> list[tuple]:
        return list((Counter(self.actual) - Counter(self.expected)).elements())

    @property
    def equal(self) -> bool:
        return not self.missing and not self.unexpected


def compare(spark, path: str, expected: list[GivenRow]) -> Comparison:
    """The DT at `path` against the expected rows, on the columns the expected rows name (all of
    the DT's when they name none), as multisets: order does not matter, duplicates do."""
    table = spark.read.format("delta").load(path)
    types = {f.name.lower(): (f.name, f.dataType.simpleString()) for f in table.schema.fields}
    named = list(dict.fromkeys(c for row in expected for c in row))
    unknown = [c for c in named if c not in types]
    if unknown:         # dt validate checks this where it knows the DT's columns before Spark runs
        raise ValueError(f"expect names column '{unknown[0]}', which the DT does not have "
                         f"(its columns: {', '.join(n for n, _ in types.values())})")
    columns = [types[c] for c in named] or list(types.values())
    actual = [_hashable(r) for r in table.select([f"`{n}`" for n, _ in columns]).collect()]
    wanted = [_hashable(r) for r in _frame(spark, expected, columns).collect()] if expected else []
    return Comparison([n for n, _ in columns], wanted, actual)


def _hashable(value: object) -> object:
    """A row (or value) as tuples all the way down, to count rows holding arrays, maps or structs."""
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value
