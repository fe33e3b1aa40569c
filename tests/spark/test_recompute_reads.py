"""The differential checks read a DT's rows and the recompute's inputs through deltalake
(tests/helpers.py table_rows, version_frame): they must be what Spark reads, value for value and
type for type, or every check would compare against something else. A table with each plain type
(NULLs, negative and pre-1970 values, microseconds, empty arrays), partitioned, with column mapping,
deletion vectors and a renamed column, at each of its versions."""

from __future__ import annotations

import pytest

from tests.helpers import rows_of, table_rows, version_frame

pytestmark = pytest.mark.spark


def test_deltalake_reads_are_what_spark_reads(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"""CREATE TABLE delta.`{path}` (i INT, b BIGINT, s SMALLINT, t TINYINT, f FLOAT, d DOUBLE,
        m DECIMAL(12,2), str STRING, ok BOOLEAN, dt DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, arr ARRAY<INT>,
        sarr ARRAY<STRING>, part STRING) USING delta PARTITIONED BY (part)
        TBLPROPERTIES (delta.enableChangeDataFeed = true, delta.enableDeletionVectors = true,
                       delta.columnMapping.mode = 'name')""")
    spark.sql(f"""INSERT INTO delta.`{path}` VALUES
        (1, 10000000000, 3, 4, 1.1, 2.2, 3.33, 'x', true, DATE'2025-01-02', TIMESTAMP'2025-01-02 03:04:05.123456',
         TIMESTAMP_NTZ'2025-01-02 03:04:05.5', array(1, 2), array('a', NULL), 'p1'),
        (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (2, -1, -3, -4, -0.0, 1e300, -0.01, '', false, DATE'1969-12-31', TIMESTAMP'1969-12-31 23:59:59.999999',
         TIMESTAMP_NTZ'1900-01-01 00:00:00', array(), array(), 'p2'),
        (3, 3, 3, 3, 3.0, 3.0, 3.00, 'é', true, DATE'2025-01-02', TIMESTAMP'2025-06-01 00:00:00',
         TIMESTAMP_NTZ'2025-06-01 00:00:00', array(NULL), array('z'), 'p1')""")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE i = 3")                   # a deletion vector
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN str TO label")     # column mapping
    for version in (1, 2, 3):
        read = spark.read.format("delta").option("versionAsOf", version).load(path)
        columns, rows = table_rows(spark, path, version)
        assert columns == read.columns
        assert rows == rows_of(read) and sum(rows.values()) == (4 if version == 1 else 3), version
        local = version_frame(spark, path, version)
        assert [(f.name, f.dataType, f.nullable) for f in local.schema] == \
            [(f.name, f.dataType, f.nullable) for f in read.schema]
        assert rows_of(local) == rows_of(read), version
