"""Registering DTs as tables in the metastore, in the refresh's Spark application.

A DT is registered as an external Delta table `S.<name>` at its warehouse location, after its
commit: the catalog entry is only a pointer (readers take columns and comment from the Delta
log), so a registration never touches the data and a failed one never undoes a refresh. What
happened is recorded in dt's state (dtcli/state/catalog.py); a failure is retried by the next
run. dt only replaces or drops an entry that points at the DT's own location: a table of the
same name somewhere else is somebody else's, and is left alone with an error.
"""

from __future__ import annotations

from dtcli.engine.runtime.changes import quote
from dtcli.engine.runtime.commit import set_comment
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS
from dtcli.events import CatalogChanged, Events, NameResolved
from dtcli.model import SUCCEEDED, Plan, RefreshRecord
from dtcli.plan_parts import Registration, Unregistration
from dtcli.state import catalog as state
from dtcli.state import source_names as names_state


def sql_name(qualified: str) -> str:
    """`schema.table` as SQL: the schema (and catalog) are identifiers (checked in settings),
    the table is a DT name, quoted."""
    *space, table = qualified.split(".")
    return ".".join([*space, quote(table)])


def _same_location(found: str, path: str) -> bool:
    def norm(p: str) -> str:
        p = p[len("file:"):] if p.startswith("file:") else p
        while p.startswith("//"):
            p = p[1:]
        return p.rstrip("/")
    return norm(found) == norm(path)


def location(spark, qualified: str) -> str | None:
    """Where the table `qualified` points (None: no such table)."""
    if not spark.catalog.tableExists(qualified):
        return None
    for row in spark.sql(f"DESCRIBE TABLE EXTENDED {sql_name(qualified)}").collect():
        if (row[0] or "").strip() == "Location":
            return (row[1] or "").strip()
    return None


def register(spark, qualified: str, path: str, previous: str | None = None) -> None:
    """Make `qualified` the name of the Delta table at `path` (and drop the DT's entry under
    `previous`, its old name, if that still points at it)."""
    namespace = qualified.rsplit(".", 1)[0]
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {namespace}")
    if previous:
        _drop_own(spark, previous, path)
    found = location(spark, qualified)
    if found is None:
        spark.sql(f"CREATE TABLE {sql_name(qualified)} USING delta LOCATION '{_literal(path)}'")
    elif not _same_location(found, path):
        raise RuntimeError(f"{qualified} already exists at {found}, not at this dynamic table's "
                           f"location {path}; dt leaves it alone: drop or rename that table, or "
                           f"set another schema in catalog:")


def unregister(spark, qualified: str, path: str | None) -> None:
    """Remove a dropped DT's entry (its data is gone: an entry that still resolves elsewhere is
    somebody else's table and stays)."""
    _drop_own(spark, qualified, path)


def _drop_own(spark, qualified: str, path: str | None) -> None:
    try:
        found = location(spark, qualified)
    except SPARK_ERRORS:
        found = None        # the entry's location no longer holds a table: it is the DT's, gone
        if not spark.catalog.tableExists(qualified):
            return
    if found is None or path is None or _same_location(found, path):
        spark.sql(f"DROP TABLE IF EXISTS {sql_name(qualified)}")


def _literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def metastore(conf: dict[str, str], qualified: str) -> str:
    """Which metastore a name lives in, as a user would recognise it in their settings."""
    parts = qualified.split(".")
    if len(parts) == 3 and parts[0] != "spark_catalog":
        return f"catalog {parts[0]} (spark.sql.catalog.{parts[0]})"
    uris = conf.get("spark.hadoop.hive.metastore.uris") or conf.get("spark.hive.metastore.uris")
    if uris:
        return f"the Hive metastore at {uris}"
    url = conf.get("spark.hadoop.javax.jdo.option.ConnectionURL")
    if url:
        return f"the Hive metastore in {url}"
    return f"Spark's session catalog ({conf.get('spark.sql.catalogImplementation', 'in-memory')})"


def unreachable(spark) -> str | None:
    """Why the session's Hive metastore cannot be used (None: it can, or the session has none).

    With `spark.sql.catalogImplementation: hive`, Spark and Delta resolve every statement on a
    Delta path (`delta.`/path``) through the session catalog first, so an unreachable metastore
    fails the refresh itself, and a `CREATE OR REPLACE TABLE ... AS` only after its commit. Asked
    once before the first refresh, so that no refresh starts that would fail half-way."""
    from dtcli.engine.runtime.spark_errors import error_message

    conf = dict(spark.sparkContext.getConf().getAll())
    if conf.get("spark.sql.catalogImplementation") != "hive":
        return None
    try:
        spark.catalog.databaseExists("default")
    except SPARK_ERRORS as exc:
        return (f"{metastore(conf, 'default.t')} cannot be reached: {error_message(exc)}; no refresh "
                f"was started (with spark.sql.catalogImplementation: hive every statement on a "
                f"Delta table goes through the metastore); start it or correct "
                f"spark.hadoop.hive.metastore.uris in the target's spark.conf, and run again")
    return None


def publish(spark, plan: Plan, records: list[RefreshRecord], emit: Events = lambda e: None) -> list[state.Event]:
    """The plan's catalog work, after its refreshes: register the DTs (not one whose refresh
    failed in this run: its table may not exist; the next run registers it), remove dropped
    ones. Each outcome is recorded and announced; failures are messages, never exceptions."""
    conf = dict(spark.sparkContext.getConf().getAll())
    failed = {r.name for r in records if r.state != SUCCEEDED}
    events = [_attempt(spark, reg, state.REGISTERED, conf)
              for reg in plan.registrations if reg.name not in failed]
    events += [_attempt(spark, gone, state.UNREGISTERED, conf) for gone in plan.unregistrations]
    state.append(plan.warehouse, events)
    retried = {r.name for r in plan.registrations if r.retry}
    for event in events:
        emit(CatalogChanged(event.name, event.event, event.qualified_name, event.path, event.message,
                            event.previous, event.name in retried))
    return events


def _attempt(spark, item: Registration | Unregistration, done: str, conf: dict[str, str]) -> state.Event:
    from dtcli.engine.runtime.spark_errors import error_message

    name, qualified, path = item.name, item.qualified_name, item.path
    previous = item.previous if isinstance(item, Registration) else None
    try:
        if isinstance(item, Registration):
            register(spark, qualified, path, previous)
            if item.comment_changed:      # edited while no input changed: no refresh commits it
                set_comment(spark, path, item.comment)
        else:
            unregister(spark, qualified, path)
    except (*SPARK_ERRORS, RuntimeError) as exc:     # RuntimeError: the name is another table's
        verb = "registering" if done == state.REGISTERED else "removing"
        event = state.FAILED if done == state.REGISTERED else state.DROPPING
        message = (f"{verb} {qualified} in {metastore(conf, qualified)} failed: {error_message(exc)}; "
                   f"no refresh is affected; check that the metastore is reachable with the "
                   f"target's spark.conf: the next dt run retries")
        return state.Event(name, event, qualified, path, message, previous)
    return state.Event(name, done, qualified, path)


def resolve_names(spark, plan: Plan, emit: Events = lambda e: None,
                  unavailable: str | None = None) -> list[names_state.Resolution]:
    """Where the sources the plan names by table live: each name's location and Delta table id
    from the metastore, recorded for JVM-free planning and announced. A name that does not
    resolve to a Delta table is recorded with the reason (the run reports it as bad input), as
    is every name when the metastore is `unavailable`. A `recheck` of a known name (a refresh
    run reading it) records only a different answer, and keeps the known one on a failure."""
    from dtcli.engine.runtime.spark_errors import error_message

    conf = dict(spark.sparkContext.getConf().getAll())
    found = []
    for item in plan.resolutions:
        table = item.table
        if unavailable:
            if not item.recheck:
                found.append(names_state.Resolution(table, message=unavailable))
            continue
        try:
            detail = spark.sql(f"DESCRIBE DETAIL {sql_name(table)}").collect()[0].asDict()
            if str(detail.get("format") or "").lower() != "delta":
                raise ValueError(f"{table} is a {detail.get('format')} table, not a Delta table")
            answer = names_state.Resolution(table, _local(detail["location"]), detail.get("id"))
            if not item.recheck or (answer.location, answer.table_id) != (item.location, item.table_id):
                found.append(answer)
        except (*SPARK_ERRORS, ValueError, KeyError) as exc:     # ValueError: not a Delta table
            if item.recheck:
                continue        # the known answer stands; this run reads from it as planned
            found.append(names_state.Resolution(
                table, message=f"{metastore(conf, table)} does not resolve {table} to a Delta table: "
                               f"{error_message(exc)}"))
    names_state.append(plan.warehouse, found)
    for resolution in found:
        emit(NameResolved(resolution.table, resolution.location, resolution.table_id, resolution.message))
    return found


def _local(location: str) -> str:
    """A metastore location as dt writes paths: `file:/x` is the local path `/x`."""
    if location.startswith("file:"):
        location = location[len("file:"):]
        while location.startswith("//"):
            location = location[1:]
    return location.rstrip("/")
