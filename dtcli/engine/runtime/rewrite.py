"""A small DT's change committed by writing the whole table anew, in one overwrite commit that
also carries the frontier.

Replacing a few rows in place costs Delta many small Spark jobs whatever the table's size: a
`replaceWhere` with deletion vectors finds the files its predicate may match, scans them for the
matching rows, writes their deletion vectors and the deleted rows' change data, then the new
rows (9 jobs for 5 rows of a 100,000-row table, against 3 for an overwrite of it: measured with
benchmarks/refresh_profile.py); a MERGE more. A DT of a few thousand rows (most aggregates) is
read and written whole in less than that: its rows outside the change are written again with
the new ones. The result is the same rows in one commit; the table's history shows an overwrite
and its change data feed every row deleted and written again, which is why a DT that another DT
of the project reads (and so reads its change feed) is not written this way (see `applies`).

Counts come from observations of the write's own job (no job of their own): the rows the table
held, the rows it keeps, the rows that replace the others.
"""

from __future__ import annotations

from dtcli.engine.runtime import audit, listed
from dtcli.engine.runtime.apply import ROWS_MISSING, Applied, _copies, _write, checked, inside_only
from dtcli.engine.runtime.changes import WEIGHT, quote
from dtcli.engine.runtime.commit import LastCommit
from dtcli.engine.runtime.observed import count as _count
from dtcli.engine.runtime.observed import counts as _counts
from dtcli.engine.runtime.observed import observation as _observation
from dtcli.model import Frontier, StepOptions

TABLE_REWRITTEN = "table_rewritten"    # the history's refresh_strategy for a row change written so


def applies(options: StepOptions) -> bool:
    """Whether an incremental refresh writes this DT whole: at most `small_table_rows` rows (as
    its log says before the refresh; off by default; 50,000 is a file of a few MB whose read and
    write cost less than the jobs a replaceWhere adds), no partitioning or clustering the writer would
    have to be told about, no frozen region (whose rows a rewrite would have to carry over), and
    no DT of the project reading it (its change feed would show every row deleted and written
    again)."""
    rows = options.previous_rows
    # `0` is off: an empty DT is not written whole either
    layout = options.layout
    return (rows is not None and layout.small_table_rows > 0 and rows <= layout.small_table_rows
            and not layout.partition_by and not layout.cluster_by and not options.regions.active
            and not options.read_by_tables)


def replace_whole(spark, path: str, predicate: str, rows, frontier: Frontier) -> Applied:
    """As `apply.replace`: the rows matching `predicate` replaced by `rows` (which all match it;
    a row that does not fails the write, as replaceWhere checks), the table written whole."""
    from pyspark.sql import functions as F

    rows = audit.rows(spark, path, rows, predicate)
    held, kept, new = _observation(), _observation(), _observation()
    table = listed.read(spark, path).observe(held, _count())
    inside = F.coalesce(F.expr(f"({predicate})"), F.lit(False))
    staying = table.filter(~inside).observe(kept, _count())
    arriving = inside_only(rows, predicate).observe(new, _count())
    last = _overwrite(spark, path, staying.unionByName(arriving), frontier)
    counts = _counts(held, kept, new)
    if counts is None:      # the observations did not arrive: counted again
        counts = (spark.read.format("delta").option("versionAsOf", last["version"] - 1).load(path).count(),
                  staying.count(), arriving.count())
    before, stay, written = counts
    return Applied(written, before - stay, last["version"], stay)


def overwrite_all(spark, path: str, rows, frontier: Frontier, held: int) -> Applied:
    """Every row of the table replaced by `rows` (`held`: the rows it holds, from its log),
    committed on the driver where driver_write can."""
    from dtcli.engine.runtime import driver_write, slice_commit

    rows = audit.rows(spark, path, rows, None)
    done = driver_write.replace_all(spark, path, slice_commit.target(spark, path), rows, frontier)
    if done is not None:
        return Applied(done[0], done[1], done[2])
    last = _overwrite(spark, path, rows, frontier)
    return Applied(int(last["metrics"].get("numOutputRows", 0)), held, last["version"])


def changes_whole(spark, path: str, changes, cols: list[str], frontier: Frontier,
                  local: list | None) -> Applied:
    """As `apply.apply_row_changes` for a change that deletes rows: every row of the table with
    the change's weights added, written whole (a row the change would remove more often than the
    table holds it fails the write)."""
    from pyspark.sql import functions as F

    rows = [F.col(quote(c)) for c in cols]
    held, new = _observation(), _observation()
    table = (listed.read(spark, path).observe(held, _count())
             .select(*rows, F.lit(1).cast("long").alias(WEIGHT)))
    summed = (table.unionByName(changes.select(*rows, F.col(WEIGHT)))
              .groupBy(*rows).agg(F.sum(WEIGHT).alias(WEIGHT)).filter(F.col(WEIGHT) != 0))
    written = summed.select(*rows, _copies(checked(F.col(WEIGHT), ROWS_MISSING))).select(*rows) \
        .observe(new, _count())
    last = _overwrite(spark, path, written, frontier)
    if local is not None:
        inserted = sum(r[WEIGHT] for r in local if r[WEIGHT] > 0)
        deleted = -sum(r[WEIGHT] for r in local if r[WEIGHT] < 0)
    else:
        w = F.col(WEIGHT)
        totals = changes.agg(F.sum(F.when(w > 0, w).otherwise(0)), F.sum(F.when(w < 0, -w).otherwise(0))).first()
        inserted, deleted = int(totals[0] or 0), int(totals[1] or 0)
    counts = _counts(new)
    total = counts[0] if counts is not None else \
        spark.read.format("delta").option("versionAsOf", last["version"]).load(path).count()
    return Applied(int(inserted), int(deleted), last["version"], max(total - int(inserted), 0),
                   how=TABLE_REWRITTEN)


def _overwrite(spark, path: str, rows, frontier: Frontier) -> LastCommit:
    last = _write(spark, path, rows, frontier, "overwrite")
    if last is None:        # an overwrite always commits (it removes every file)
        raise RuntimeError(f"the overwrite of {path} wrote no commit")
    return last
