"""`dt test` in the driver: a table's data tests over the whole table as it is now; nothing is written.

The checks are the ones a refresh audits (engine/runtime/auditor.py), handed every row of the table as
written rows with no old rows beside them: row-level checks count every row, `unique` every key,
a singular test reads the table itself. Each check runs even when an earlier one failed.
"""

from __future__ import annotations

from dtcli.data_tests import CheckResult
from dtcli.engine.runtime.auditor import AuditFailed, Auditor, Pending, said
from dtcli.engine.runtime.changes import WEIGHT


def test_table(spark, step) -> tuple[list[CheckResult], str | None]:
    """The results of the step's checks, and a message naming the error-severity ones that
    failed (None: none did)."""
    from pyspark.sql import functions as F

    auditor = Auditor(spark, step, step.options.audit.checks, None)
    try:
        rows = spark.read.format("delta").load(step.path).withColumn(WEIGHT, F.lit(1).cast("long"))
        auditor.screen(Pending(rows, None, None))
    except AuditFailed:
        pass
    finally:
        auditor.release()
    stopped = auditor.stopped()
    return auditor.outcome, ("; ".join(said(r) for r in stopped) if stopped else None)
