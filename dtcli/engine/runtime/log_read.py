"""A source version read from the Parquet files its log lists, where Delta would first spend Spark
jobs on its log: a table whose writer left no checksum file.

Delta reads a version without a checksum file (`deltalake` writes none, as the benchmarks' TPC-H
sources show) by loading its protocol and metadata from the log with a Spark job or two, before
any query; listing its files for a small table's read (listed.py) costs two more. For a version
whose files are all a reader needs, its rows are exactly those of its Parquet files read with the
table's schema: a table that reads with no reader feature at all (reader version 1: no deletion
vectors, column mapping, type widening or timestamps without time zone), not partitioned, whose
files were written under the columns' own names (columns a file lacks, added later, read as NULL,
as Delta reads them). Its log is read in Python (deltalake, as the planner reads it) and Spark
reads those files with no job. Any other version, a remote table, one too large to read over a
file list (listed.py), or one of many files (which Spark would list with a job of its own) is
read by Delta. The one log read decides, sizes and lists the version.
"""

from __future__ import annotations

import json
import os

from dtcli.engine.runtime.spark_errors import SPARK_ERRORS
from dtcli.state import storage
from dtcli.state.delta_log import DataFiles, data_files

# Spark lists more paths than this with a job of its own (spark.sql.sources.
# parallelPartitionDiscovery.threshold's default): such a table is left to Delta.
MOST_FILES = 32


# Column metadata Spark's Parquet read would act on where Delta's read does not, or the other
# way round (CHAR padding, a default filled into older files): such a table is left to Delta.
_READ_AS_DECLARED = ("__CHAR_VARCHAR_TYPE_STRING", "EXISTS_DEFAULT", "CURRENT_DEFAULT")


def read(spark, path: str, version: int, table_id: str | None = None):
    """(DataFrame of `path` at `version`, the table's id) read from the files its log lists, or
    None where Delta must read it (see the module's docstring). `table_id`: the table's id as the
    plan knows it; a table of another id (dropped and created again) is left to Delta."""
    if storage.is_remote(path) or os.path.exists(_checksum(path, version)):
        return None
    found = data_files(path, version)
    if not _plain(found, table_id):
        return None
    from pyspark.sql.types import StructType

    try:
        schema = StructType.fromJson(json.loads(found.schema_json))
        files = [os.path.join(path, name) for name, _, _ in found.files]
        df = spark.read.schema(schema).parquet(*files) if files else spark.createDataFrame([], schema)
    except (ValueError, KeyError, *SPARK_ERRORS):
        return None
    return df, found.table_id


def _plain(found: DataFiles | None, table_id: str | None) -> bool:
    """Whether `found` reads as its files alone (see the module's docstring), is small enough to
    be read over a file list at all (listed.py), and is the table the plan knows."""
    from dtcli.engine.runtime.listed import worth_listing

    return (found is not None and found.paths_suffice and bool(found.schema_json)
            and not any(key in found.schema_json for key in _READ_AS_DECLARED)
            and len(found.files) <= MOST_FILES and worth_listing((found.bytes, len(found.files)))
            and (table_id is None or found.table_id == table_id))


def _checksum(path: str, version: int) -> str:
    return os.path.join(path, "_delta_log", f"{int(version):020d}.crc")
