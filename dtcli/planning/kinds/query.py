"""A query table: its rows are its query's, so dt derives its columns (bound against its
inputs, renamed and typed by `columns:`), its refresh mode (planning/query_mode.py), the order
a recompute writes its rows in, its lineage; its refresh action follows dt's rules
(planning/plan.py decide_action)."""

from __future__ import annotations

from dtcli.data_tests import Expectation
from dtcli.errors import DtError, ValidationError, Where
from dtcli.model import FULL, Column, CustomSpec, Project, TableDef
from dtcli.planning import frozen, internal
from dtcli.planning.check_cache import CheckCache
from dtcli.planning.checked_project import Checked
from dtcli.planning.kinds.base import CheckScope, TableCheck
from dtcli.planning.query_mode import query_mode
from dtcli.planning.resolved_mode import ModeScope, ResolvedMode
from dtcli.planning.snapshot import Snapshot
from dtcli.sql.analysis import QueryAnalysis, analyze
from dtcli.sql.incremental_rewrite.layout import key_positions
from dtcli.sql.lineage import ColumnLineage
from dtcli.sql.lineage import column_lineage as query_lineage
from dtcli.sql.output_names import check_output_names, given_names, unnamed
from dtcli.sql.resolve import Resolved, resolve
from dtcli.sql.table_statement import TableStatement, read_query
from dtcli.sql.types import to_sqlglot
from dtcli.state.delta_log import enable_cdf_sql
from dtcli.unit_tests import UnitTest


class QueryKind:
    name = "query"
    keeps_history = False      # recomputed from its inputs whenever dt's rules say so

    def read(self, sql: str, name: str, file: str, dialect: str, known: dict[str, str], *,
             quote: bool) -> TableStatement:
        return read_query(sql, name, file, dialect, known, quote=quote)

    def check(self, scope: CheckScope, table: TableDef) -> TableCheck:
        _check_config(table)
        project, name, schemas = scope.project, table.name, scope.schemas
        inputs = {i: schemas.get(i, ()) for i in table.inputs}
        # an input whose columns are unknown (its query left to Spark) leaves this one to Spark too
        resolved, key = None, None
        if all(inputs.values()) and not scope.unsure & set(inputs):
            key = CheckCache.key("resolve", table.sql, table.spark_sql, table.file, project.dialect,
                                 tuple((i, tuple((c.name, c.type) for c in cols)) for i, cols in inputs.items()))
            resolved = scope.cache.get(key, _resolve, table, inputs, project.dialect)
        columns = _table_schema(project, scope.snapshot, name, scope.hashes[name],
                                resolved.columns if resolved else ())
        renamed = bool(table.config.columns)
        scope.cache.get(CheckCache.key("names", key or (table.sql, table.spark_sql, table.file), columns, renamed),
                        _check_output_names, table, columns, renamed)
        unsure = bool(resolved and not resolved.names_certain and columns == resolved.columns
                      and not table.config.columns)
        # the analysis reads the parse of the file and the (qualified) query: both follow from the key
        analysis_key = CheckCache.key("analysis", key if resolved else
                                      (table.sql, table.spark_sql, table.file, project.dialect))
        analysis = scope.cache.get(analysis_key, _analyze, table, resolved)
        predicate = frozen.check_table(table, columns, project.dialect)
        return TableCheck(columns, analysis, resolved=resolved, cache_key=key, names_unsure=unsure,
                          predicate=predicate)

    def check_expectation(self, table: TableDef, expectation: Expectation) -> None:
        return None           # its rows are computed: any expectation can keep rows out

    def check_unit_tests(self, table: TableDef, cases: list[UnitTest]) -> None:
        return None           # checked case by case (planning/unit_tests.py)

    def mode(self, scope: ModeScope, table: TableDef) -> ResolvedMode:
        return query_mode(scope, table)

    def redefined_now(self, checked: Checked, name: str) -> bool:
        return True           # its rows are the new query's from the next run on

    def changed_inputs(self, table: TableDef, changed: list[str]) -> list[str]:
        return changed        # a change of any input changes its query's result

    def own_action(self, checked: Checked, name: str, changed: list[str],
                   full_refresh: bool) -> tuple[str, str | None]:
        raise NotImplementedError("a query table's refresh action follows dt's rules (plan.decide_action)")

    def custom_spec(self, checked: Checked, name: str) -> CustomSpec | None:
        return None

    def given_names(self, checked: Checked, name: str) -> list[str] | None:
        """The names of the DT's columns when its query leaves some to Spark (unaliased
        expressions) and no `columns:` names them: as derived (sql/spark_names.py). The engine
        renames the result to them, so the table holds the names dt derived without a JVM,
        whatever the SQL it runs (sqlglot's Spark text of the query) would be named."""
        table = checked.project.tables[name]
        if table.config.columns or not unnamed(table.query):
            return None
        derived = [c.name for c in checked.schemas.get(name, ())]
        return derived or given_names(table.query, table.parsed.text if table.parsed else None)

    def write_order(self, checked: Checked, name: str) -> list[str] | None:
        """Its `cluster_by` columns, else the key its incremental refreshes name rows by; None
        with `sort_by_key: false`."""
        table = checked.project.tables[name]
        if not table.config.sort_by_key:
            return None
        if table.config.cluster_by:
            return list(table.config.cluster_by)
        columns = [c.name for c in checked.schemas.get(name, ())]
        positions = key_positions(checked.qualified.get(name) or table.spark_sql) if columns else []
        return [columns[k] for k in positions if k < len(columns)] or None

    def explain(self, checked: Checked, name: str) -> tuple[None, list[str]]:
        """What keeps it from refreshing incrementally that the user can change: a source's
        change data feed, an upstream DT's mode; and columns only Spark will bind."""
        project, mode = checked.project, checked.modes[name]
        table = project.tables[name]
        warnings = []
        for inp in table.inputs:
            if inp in project.sources and not checked.snapshot.sources[inp].change_data_feed:
                warnings.append(f"source {inp} has no change data feed, so {name} refreshes FULL; "
                                f"enable it with: {enable_cdf_sql(project.input_path(inp))}")
        for inp in table.inputs:
            up = checked.modes.get(inp)
            if up is not None and up.mode == FULL and mode.mode == FULL and checked.analyses[name].incremental:
                warnings.append(f"upstream dynamic table {inp} refreshes FULL, so {name} cannot refresh "
                                "incrementally; make the upstream incremental to fix it")
        if not checked.qualified.bound(name):
            warnings.append(f"dt could not bind every column of {name} to its inputs before Spark runs "
                            "(a construct sqlglot does not resolve); Spark checks them at refresh time")
        return None, warnings

    def internal_tables(self, checked: Checked, name: str) -> list[dict]:
        return internal.listed(checked, name)

    def column_lineage(self, checked: Checked, name: str, names: list[str]) -> ColumnLineage | None:
        """From the query as written: a query the rules rewrote (a semi-join made of IN (SELECT
        ...)) is qualified again as written (milliseconds)."""
        if not checked.qualified.bound(name):
            return None
        if not checked.qualified.rewrites(name):
            return query_lineage(checked.qualified[name], names)
        table = checked.project.tables[name]
        inputs = {i: checked.schemas.get(i, ()) for i in table.inputs}
        try:
            resolved = resolve(table.query, inputs, checked.project.dialect, table.file)
        except DtError:
            return None
        return query_lineage(resolved.query, names) if resolved is not None else None


QUERY = QueryKind()


def _check_config(table: TableDef) -> None:
    """Config that only a custom table may have."""
    if table.config.start_at is not None:
        raise ValidationError("start_at is for custom incremental tables (REFRESH USING)",
                              **_where(table, "start_at"),
                              hint="a query table's copy is set by backfill alone; remove start_at")
    if table.refresh_mode == "custom_incremental":
        raise ValidationError("refresh_mode custom_incremental needs a REFRESH USING statement",
                              **_where(table, "refresh_mode"), hint="use refresh_mode: auto")


def _where(table: TableDef, key: str) -> Where:
    origin = table.config_origin.get(key)
    return {"file": origin.file if origin and origin.file else table.file,
            "line": origin.line if origin else None}


# The cached steps take the table, not its trees: a cached verdict must not unpickle the trees it
# was made of (dtcli.lazy), so they are read only inside the step, on a miss.
def _resolve(table: TableDef, inputs: dict[str, tuple[Column, ...]], dialect: str) -> Resolved | None:
    """The query qualified against its inputs, then rewritten by dt's rules (sql/rules) into the
    forms the change compiler refreshes: subqueries as joins, and so on."""
    resolved = resolve(table.query, inputs, dialect, table.file, table.parsed.text)
    return resolved.normalized() if resolved is not None else None


def _check_output_names(table: TableDef, columns: tuple[Column, ...], renamed: bool) -> None:
    check_output_names(table.query, columns, renamed=renamed, file=table.file, text=table.parsed.text)


def _analyze(table: TableDef, resolved: Resolved | None) -> QueryAnalysis:
    if resolved is None:
        return analyze(table.parsed, table.query)
    return analyze(table.parsed, resolved.query, resolved.rewrites)


def _table_schema(project: Project, snapshot: Snapshot, name: str, digest: str,
                  derived: tuple[Column, ...]) -> tuple[Column, ...]:
    """A DT's columns: as its Delta log has them while its definition is unchanged, else as
    derived from its query (renamed and typed by `columns:` where given)."""
    info = snapshot.tables.get(name)
    if info is not None and info.frontier is not None and info.frontier.definition_hash == digest \
            and info.schema:
        return info.schema
    table = project.tables[name]
    declared = table.config.columns
    if not declared:
        return derived
    where = _where(table, "columns")
    if derived and len(declared) != len(derived):
        raise ValidationError(f"columns lists {len(declared)} columns but the query returns "
                              f"{len(derived)} ({', '.join(c.name for c in derived)})", **where,
                              hint="name every output column of the query, in order")
    out = []
    for k, spec in enumerate(declared):
        kind = spec.get("type")
        if kind and to_sqlglot(kind).is_type("unknown"):
            raise ValidationError(f"column {spec['name']}: unknown type '{kind}'", **where,
                                  hint="use a Spark SQL type such as BIGINT, STRING, DECIMAL(12,2)")
        out.append(Column(spec["name"], kind.upper() if kind else (derived[k].type if derived else None)))
    return tuple(out)
