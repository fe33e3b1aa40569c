"""The rows a DT is created from when it has `backfill`: its source at the pinned version.

planning/backfill.py pins the source (`BackfillCopy`); a query DT (strategies/full.py) and a
custom one (strategies/custom.py) are both created as a copy of it, its columns matched to the
table's by position and cast to their types, so that the copy has exactly the table's schema.
"""

from __future__ import annotations

from dtcli.engine.runtime.changes import quote
from dtcli.plan_parts import BackfillCopy


class BackfillMismatch(ValueError):
    """The source has another number of columns than the table: it is not a copy of it."""


def copied_rows(spark, source: BackfillCopy, columns: list[tuple[str, object]]):
    """`source` at its pinned version, as the table's (name, type) `columns`."""
    from pyspark.sql import functions as F

    rows = spark.read.format("delta").option("versionAsOf", source.version).load(source.path)
    if len(rows.columns) != len(columns):
        raise BackfillMismatch(f"backfill source {source.name} has {len(rows.columns)} columns, "
                               f"the table {len(columns)}")
    return rows.select(*[F.col(quote(c)).cast(t).alias(n) for c, (n, t) in zip(rows.columns, columns)])
