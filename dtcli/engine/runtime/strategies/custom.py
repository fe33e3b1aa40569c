"""CUSTOM_INCREMENTAL: run the table's own MERGE INTO SELF / INSERT INTO SELF statement over the
changes of its CHANGES() inputs since its frontier, in one Delta commit with the new frontier.

SELF read in the statement is the table as it is before this refresh; other tables are read at
the run's pinned versions (bound by the executor). A failing statement commits nothing, so the
next refresh reads the same changes again. Change data that cannot be read fails the refresh with
the reason and the fix: a custom table's history cannot be recomputed, so nothing is
reinitialized behind the user's back.

Creation writes the empty table (its declared columns, change data feed on) and then runs the
statement over every row of the inputs as INSERTs; a crash between the two leaves a table with
no frontier, which the next run creates again. With `backfill`, the table is a copy and the
frontier starts at creation (or at `start_at`).
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.engine.runtime import apply, audit, backfill, change_views, column_mapping, commit, listed
from dtcli.engine.runtime.changes import ChangesUnavailable, quote
from dtcli.engine.runtime.checkpoints import release
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.engine.runtime.deletion_vectors import table_property
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS, error_condition, is_unavailable
from dtcli.model import CUSTOM_INCREMENTAL, FULL, REINITIALIZE, CustomSpec
from dtcli.sql.custom import SELF_VIEW, changes_view

MULTIPLE_MATCHES = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"


class CustomRefreshFailed(Exception):
    """The statement cannot be applied as written; the message says why and what to do."""


def custom_refresh(ctx: RefreshContext) -> RefreshResult:
    views: list[str] = []
    held: list = []       # checkpointed change rows, released with the views
    try:
        return _run(ctx, views, held)
    except ChangesUnavailable as err:
        raise CustomRefreshFailed(f"[CHANGES_UNAVAILABLE] {err}") from err
    finally:
        for view in views:
            ctx.spark.catalog.dropTempView(view)
        for rows in held:
            release(rows)


def _run(ctx: RefreshContext, views: list[str], held: list) -> RefreshResult:
    spark, step = ctx.spark, ctx.step
    opts = step.options.custom
    creating = step.action in (FULL, REINITIALIZE)
    ctx.frontier.start_at = opts.start_at if creating or step.previous is None else step.previous.start_at
    if creating:
        if opts.start_versions is not None:
            return _backfilled(ctx, opts)
        # SELF is empty; the table is (re)created only once the statement's rows passed the audit,
        # so a REINITIALIZE that fails it leaves readers the last good version
        spark.createDataFrame([], ", ".join(f"{quote(c['name'])} {c['type']}" for c in opts.columns)) \
            .createOrReplaceTempView(SELF_VIEW)
    else:       # SELF with the columns it gains (NULL in its rows), added once the audit passed
        before = commit.last_commit(step.path)["version"]
        old = listed.read(spark, step.path, before)
        old.selectExpr("*", *[f"CAST(NULL AS {c['type']}) AS {quote(c['name'])}" for c in opts.add_columns]) \
            .createOrReplaceTempView(SELF_VIEW)
    views.append(SELF_VIEW)
    previous = step.previous.source_versions if step.previous and not creating else {}
    known_ids = (step.previous.input_ids or {}) if step.previous and not creating else {}
    ctx.frontier.input_ids = {}
    for change in opts.changes:
        name, mode = change.name, change.mode
        ctx.frontier.input_ids[name] = table_id = _table_id(change.path)
        if known_ids.get(name) not in (None, table_id):
            raise ChangesUnavailable(f"input {name} was recreated since the last refresh (its Delta table id "
                                     f"changed), so its changes since then cannot be read; the table's history "
                                     f"cannot be recomputed: recreate it with `dt drop {step.name} --yes` and "
                                     "`dt run`")
        current = spark.table(quote(name))        # bound by the executor at the pinned version
        if creating:
            rows = change_views.all_rows(current)
        else:
            start = previous.get(name)
            if start is None:
                raise ChangesUnavailable(f"the frontier of {step.name} records no version of {name} "
                                         "(CHANGES() of it was added to the statement?); to read it from now on, "
                                         f"recreate the table: `dt drop {step.name} --yes` and `dt run`")
            rows = change_views.read(spark, name, change.path, mode, int(start), ctx.input_versions[name],
                                     current, change.key, held)
        view = changes_view(name, mode)
        rows.createOrReplaceTempView(view)
        views.append(view)
    sql = audit.statement(spark, step.sql, opts.columns, _targeted(step.sql, step.path, opts.target_alias),
                          step.path, views)
    if creating:
        _create(ctx, opts)
        before = commit.last_commit(step.path)["version"]
    elif opts.add_columns:
        cols = ", ".join(f"{quote(c['name'])} {c['type']}" for c in opts.add_columns)
        spark.sql(f"ALTER TABLE delta.{quote(step.path)} ADD COLUMNS ({cols})")
        before = commit.last_commit(step.path)["version"]
    try:
        with commit.user_metadata(spark, ctx.frontier):
            spark.sql(sql)
    except SPARK_ERRORS as exc:
        if MULTIPLE_MATCHES in f"{error_condition(exc) or ''} {exc}":
            raise CustomRefreshFailed(
                f"[{MULTIPLE_MATCHES}] several rows of the MERGE source match one row of {step.name} on "
                f"{opts.on}; nothing was written. Deduplicate the USING query on the ON keys, e.g. "
                "QUALIFY ROW_NUMBER() OVER (PARTITION BY <keys> ORDER BY ...) = 1, or aggregate per key") from exc
        if is_unavailable(exc):       # the change rows are read lazily, by the statement
            names = ", ".join(c.name for c in opts.changes)
            raise change_views.unavailable(f"{names} since the last refresh", exc) from exc
        raise
    last = commit.last_commit(step.path)
    if last["version"] == before:           # Delta wrote nothing (no source rows): record the frontier
        return RefreshResult(table_version=apply.commit_nothing(spark, step.path, ctx.frontier))
    metrics = last["metrics"]
    if opts.kind == "MERGE":
        return RefreshResult(inserted=int(metrics.get("numTargetRowsInserted", 0)),
                             deleted=int(metrics.get("numTargetRowsDeleted", 0)),
                             table_version=last["version"],
                             updated=int(metrics.get("numTargetRowsUpdated", 0)))
    return RefreshResult(inserted=int(metrics.get("numOutputRows", 0)), table_version=last["version"])


def _table_id(path: str) -> str | None:
    from dtcli.state.delta_log import open_table

    table = open_table(path)
    return table.metadata().id if table is not None else None


def _targeted(sql: str, path: str, alias: str | None) -> str:
    """The statement writing to the table's path instead of SELF."""
    import sqlglot

    tree = sqlglot.parse_one(sql, read="spark")
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    table = exp.Table(this=exp.to_identifier(path, quoted=True), db=exp.to_identifier("delta"))
    if isinstance(tree, exp.Merge):
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias or "self")))
    target.replace(table)
    return tree.sql(dialect="spark")


def _create(ctx: RefreshContext, opts: CustomSpec) -> None:
    """The empty table with its declared columns (and the change data feed, for its readers)."""
    step, layout = ctx.step, ctx.step.options.layout
    cols = ", ".join(f"{quote(c['name'])} {c['type']}" for c in opts.columns)
    clauses = []
    if layout.partition_by:
        clauses.append(f"PARTITIONED BY ({', '.join(quote(c) for c in layout.partition_by)})")
    if layout.cluster_by:
        clauses.append(f"CLUSTER BY ({', '.join(quote(c) for c in layout.cluster_by)})")
    if layout.comment:
        clauses.append(f"COMMENT {exp.Literal.string(layout.comment).sql(dialect='spark')}")
    props = {"delta.enableChangeDataFeed": "true", **table_property(layout.deletion_vectors),
             **column_mapping.table_property(layout.column_mapping)}
    clauses.append("TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in sorted(props.items())) + ")")
    ctx.spark.sql(f"CREATE OR REPLACE TABLE delta.{quote(step.path)} ({cols}) USING delta {' '.join(clauses)}")


def _backfilled(ctx: RefreshContext, opts: CustomSpec) -> RefreshResult:
    """The table as a copy of the backfill source, its frontier at creation or `start_at`."""
    try:
        copied = backfill.copied_rows(ctx.spark, ctx.step.options.backfill.copy,
                                      [(spec["name"], spec["type"]) for spec in opts.columns])
    except backfill.BackfillMismatch as err:
        raise CustomRefreshFailed(str(err)) from err
    ctx.frontier.source_versions.update(opts.start_versions)
    ctx.frontier.input_ids = {c.name: _table_id(c.path) for c in opts.changes}
    layout = ctx.step.options.layout
    commit.replace_table(ctx.spark, copied, ctx.step.path, ctx.frontier,
                         partition_by=layout.partition_by, cluster_by=layout.cluster_by,
                         comment=layout.comment,
                         properties={"delta.enableChangeDataFeed": "true",
                                     **table_property(layout.deletion_vectors),
                                     **column_mapping.table_property(layout.column_mapping)})
    last = commit.last_commit(ctx.step.path)
    return RefreshResult(copied=int(last["metrics"].get("numOutputRows", 0)), table_version=last["version"],
                         table_replaced=True)


STRATEGIES = {CUSTOM_INCREMENTAL: custom_refresh}   # refresh kinds this module does
