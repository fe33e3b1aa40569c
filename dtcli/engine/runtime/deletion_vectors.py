"""How a DT is written for its readers: with or without deletion vectors (`deletion_vectors`).

With deletion vectors on (dt's default), an incremental refresh that removes rows marks them
in a small side file instead of rewriting every data file holding one; readers must support
the `deletionVectors` table feature. Off, every removal rewrites files (copy-on-write) and
readers without that support (the `deltalake` package's pyarrow reader, for one) can read
the DT.

A new DT gets the property in its CREATE statement (strategies/full.py). An existing DT whose
setting changed is brought in line at its next refresh that runs Spark: on is one property
change; off drops the table feature, which rewrites the files that carry deletion vectors and
removes the feature from the protocol (Delta's DROP FEATURE, with checkpoint protection, so no
history is truncated). Neither changes the DT's rows, so downstream DTs see no change.
"""

from __future__ import annotations

from dtcli.engine.runtime.changes import quote

PROPERTY = "delta.enableDeletionVectors"
FEATURE = "deletionVectors"


def table_property(on: bool) -> dict[str, str]:
    return {PROPERTY: "true" if on else "false"}


def align(spark, path: str, on: bool) -> None:
    """Make the table at `path` written with deletion vectors `on` (or off), in place."""
    table = f"delta.{quote(path)}"
    if on:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{PROPERTY}' = 'true')")
        return
    from dtcli.state.delta_log import open_table

    features = open_table(path).protocol().reader_features or []
    if FEATURE in features:
        spark.sql(f"ALTER TABLE {table} DROP FEATURE {FEATURE}")
    else:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{PROPERTY}' = 'false')")
