"""Delta column mapping for the DTs whose column names need it.

A DT takes the name Spark gives an unaliased output (`sum(l_quantity)`, sql/spark_names.py), and
`columns:` may name a column anything; Delta refuses names holding any of ` ,;{}()\\n\\t=` unless
the table maps its columns by name (`delta.columnMapping.mode = 'name'`: each column's data is
stored under a physical name of its own). Only such DTs get it (planning/plan.py decides from the
names), in the CREATE statement of their recompute: column mapping needs readers that support the
`columnMapping` table feature (Spark with Delta, the `deltalake` package's QueryBuilder; not its
`to_pyarrow_table()`: docs/readers.md), and the change data feed of such a table reads only while
no column is renamed or dropped, which dt never does (a changed definition replaces the table).
"""

from __future__ import annotations

PROPERTY = "delta.columnMapping.mode"


def table_property(on: bool) -> dict[str, str]:
    return {PROPERTY: "name"} if on else {}


CHANGE_DATA_FEED = "delta.enableChangeDataFeed"


def prepare(spark, view: str, path: str, clauses: list[str], properties: dict[str, str]) -> dict[str, str]:
    """The table properties of the CREATE OR REPLACE TABLE ... AS SELECT that writes the rows of
    `view` (and the frontier) at `path`, after the commit that must come first when the table
    maps its columns by name.

    Delta 4.4 refuses, while the change data feed is on, a CREATE OR REPLACE ... AS SELECT that
    makes a table with column mapping anew or changes its columns
    (DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION, taken as dropping or renaming columns); the
    same statement over a mapped table with the same columns is accepted, and so is one with the
    feed off. So a new table, an unmapped one, or one whose columns change is first replaced by an
    empty one with the new columns and the feed off, then written with the feed on. A crash
    between the two leaves an empty table whose newest frontier is the one before it: of another
    definition or none, so the next run recomputes it; readers of its feed reinitialize, as they
    do whenever a table they read is replaced."""
    if properties.get(PROPERTY) != "name":
        return properties
    if not _mapped_alike(spark, view, path):
        empty = ", ".join(f"'{k}' = '{v}'" for k, v in sorted({**properties, CHANGE_DATA_FEED: "false"}.items()))
        from dtcli.engine.runtime.changes import quote

        spark.sql(f"CREATE OR REPLACE TABLE delta.{quote(path)} USING delta {' '.join(clauses)} "
                  f"TBLPROPERTIES ({empty}) AS SELECT * FROM {view} WHERE false")
    return {**properties, CHANGE_DATA_FEED: "true"}


def _mapped_alike(spark, view: str, path: str) -> bool:
    """Whether the table at `path` maps its columns by name and has the columns of `view`."""
    from dtcli.state.delta_log import open_table

    table = open_table(path)
    if table is None or table.metadata().configuration.get(PROPERTY) != "name":
        return False
    current = spark.read.format("delta").load(path).schema
    wanted = spark.table(view).schema
    return [(f.name, f.dataType) for f in current.fields] == [(f.name, f.dataType) for f in wanted.fields]
