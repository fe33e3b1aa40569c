"""Checking a custom incremental table (REFRESH USING) before Spark runs.

Its columns are declared (`columns:`, required: a statement has no output to derive them from);
its statement may only write the declared columns; `frozen_where` does not combine with it;
`backfill` and `start_at` are creation-only. Its refresh mode is CUSTOM_INCREMENTAL: `auto`
resolves to it, `incremental` / `full` / `adaptive` are errors. Its table's history cannot be
recomputed, so a changed statement keeps the data and continues from the frontier, a nullable
column added at the end of `columns` is added to the table, and any other change of the columns
is an error that says how to recreate the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from dtcli.artifacts.explain import ChangeInput, CustomSection
from dtcli.errors import ValidationError, Where
from dtcli.model import Column, CustomSpec, Project, TableDef
from dtcli.model.strategy_specs import ChangeInputSpec
from dtcli.sql.analysis.result import OperatorInfo, QueryAnalysis
from dtcli.sql.custom import ACTION, ISUPDATE, SELF_VIEW, CustomStatement
from dtcli.sql.parse import line_of
from dtcli.sql.types import to_sqlglot
from dtcli.state.delta_log import TableInfo

MODES_ALLOWED = ("auto", "custom_incremental")
META_COLUMNS = (Column(ACTION, "STRING"), Column(ISUPDATE, "BOOLEAN"))


@dataclass
class CustomCheck:
    columns: tuple[Column, ...]
    spark_sql: str                          # the statement as Spark SQL, target SELF
    add_columns: list[Column] = field(default_factory=list)   # to add to the table before refreshing
    start_versions: dict[str, int] | None = None   # with backfill, at creation: where CHANGES() begin
    warnings: list[str] = field(default_factory=list)


def _where(table: TableDef, key: str) -> Where:
    origin = table.config_origin.get(key)
    return {"file": origin.file if origin and origin.file else table.file,
            "line": origin.line if origin else None}


def check_config(table: TableDef) -> None:
    """What a custom table's config may not hold (a query table's: planning/kinds/query.py)."""
    origin = table.config_origin.get("refresh_mode")
    # a project-wide default (defaults:, folders:) is meant for query tables: only the table's own
    # setting can contradict its REFRESH USING statement
    inherited = origin is None or (origin.file or "").endswith("dt_project.yml")
    if table.refresh_mode not in MODES_ALLOWED and not inherited:
        raise ValidationError(f"refresh_mode is {table.refresh_mode}, but {table.name} is a custom incremental "
                              "table (REFRESH USING): its statement applies the changes",
                              **_where(table, "refresh_mode"),
                              hint="use refresh_mode: auto (it resolves to CUSTOM_INCREMENTAL), or remove it")
    if table.config.frozen_where is not None:
        raise ValidationError("frozen_where cannot be combined with REFRESH USING", **_where(table, "frozen_where"),
                              hint="remove frozen_where; the statement decides which rows change")
    if table.config.start_at is not None and table.config.backfill is None:
        raise ValidationError("start_at needs backfill: without it the first refresh reads every row of the "
                              "sources", **_where(table, "start_at"),
                              hint="add backfill: {from: TABLE}, or remove start_at")


def declared_columns(table: TableDef) -> tuple[Column, ...]:
    declared = table.config.columns
    if not declared:
        raise ValidationError(f"{table.name} is a custom incremental table and needs columns: its statement "
                              "has no output to derive them from", file=table.file, line=1,
                              hint=f"list them in tables/{table.name}.yml, e.g. columns: [{{name: id, type: BIGINT}}]")
    out = []
    for spec in declared:
        kind = spec.get("type")
        if not kind or to_sqlglot(kind).is_type("unknown"):
            raise ValidationError(f"column {spec['name']} of {table.name} needs a Spark SQL type"
                                  + (f" ('{kind}' is unknown)" if kind else ""), **_where(table, "columns"),
                                  hint="e.g. {name: id, type: BIGINT}; a custom table is created with them")
        out.append(Column(spec["name"], kind.upper()))
    return tuple(out)


def check_table(project: Project, table: TableDef, schemas: dict[str, tuple[Column, ...]],
                snapshot) -> CustomCheck:
    check_config(table)
    info = snapshot.tables.get(table.name)
    columns = declared_columns(table)
    statement: CustomStatement = table.custom
    _check_targets(table, statement, columns)
    add = _evolution(table, columns, info)
    if info is not None and info.frontier is not None and table.config.start_at != info.frontier.start_at:
        raise ValidationError(f"start_at is set at creation only, and was changed on {table.name}, which exists",
                              **_where(table, "start_at"),
                              hint=f"to recreate it, run `dt drop {table.name} --yes` and then `dt run`; "
                                   "or undo the change")
    sql = _spark_sql(project, table, statement, columns, schemas)
    starts = _start_versions(project, table, snapshot) if table.config.backfill and info is None else None
    return CustomCheck(columns, sql, add, start_versions=starts)


def _start_versions(project: Project, table: TableDef, snapshot) -> dict[str, int]:
    """Where a backfilled table's CHANGES() begin: at creation (the pinned versions), or at
    `start_at` (a version, or the last commit at or before a moment)."""
    from datetime import datetime, timedelta

    from dtcli.state.delta_log import open_table

    start = table.config.start_at
    where = _where(table, "start_at")
    out: dict[str, int] = {}
    for name in change_inputs(table):
        info = snapshot.sources.get(name) or snapshot.tables.get(name)
        if info is None:
            raise ValidationError(f"{name} has no table yet, so {table.name} cannot be backfilled with its changes "
                                  "read from now", file=table.file, line=table.input_lines.get(name),
                                  hint=f"create {name} first (dt run --select {name})")
        if start is None:
            out[name] = info.version
        elif "version" in start:
            if start["version"] > info.version:
                raise ValidationError(f"start_at version {start['version']} is after {name}'s latest version "
                                      f"{info.version}", **where)
            out[name] = start["version"]
        else:
            moment = (datetime.fromisoformat(start["timestamp"]) if "timestamp" in start
                      else snapshot.taken_at + timedelta(seconds=start["offset"]))
            commits = open_table(project.input_path(name)).history()
            eligible = [c["version"] for c in commits if c["timestamp"] <= moment.timestamp() * 1000]
            if not eligible:
                raise ValidationError(f"{name} has no version at or before {moment.isoformat()} "
                                      "(its first commit is later)", **where)
            out[name] = max(eligible)
    return out


def _check_targets(table: TableDef, statement: CustomStatement, columns: tuple[Column, ...]) -> None:
    names = {c.name.lower() for c in columns}
    tree = statement.tree
    written: list[exp.Expression] = []
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema):
        written += tree.this.expressions
    for when in tree.find_all(exp.When):
        then = when.args.get("then")
        if isinstance(then, exp.Update):
            written += [e.this for e in then.expressions if isinstance(e, exp.EQ)]
        elif isinstance(then, exp.Insert) and isinstance(then.this, exp.Tuple):
            written += then.this.expressions
    for node in written:
        name = node.name if isinstance(node, (exp.Column, exp.Identifier)) else node.sql()
        if name.lower() not in names:
            from dtcli.errors import suggest

            raise ValidationError(f"{statement.kind} writes column {name}, which is not in {table.name}'s columns",
                                  file=table.file, line=line_of(node) or line_of(tree),
                                  hint=suggest(name.lower(), names) or
                                  f"columns are: {', '.join(c.name for c in columns)}")
    select = tree.expression if isinstance(tree, exp.Insert) and not isinstance(tree.this, exp.Schema) else None
    if isinstance(select, exp.Select) and not any(_is_star(e) for e in select.expressions) \
            and len(select.expressions) != len(columns):
        raise ValidationError(f"INSERT INTO SELF gives {len(select.expressions)} values but {table.name} has "
                              f"{len(columns)} columns", file=table.file, line=line_of(tree),
                              hint="select one value per column, in the order of columns:, "
                                   "or name them: INSERT INTO SELF (a, b) SELECT ...")


def _is_star(node: exp.Expression) -> bool:
    return isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star))


def _evolution(table: TableDef, columns: tuple[Column, ...], info: TableInfo | None) -> list[Column]:
    """Columns to add to an existing table; an error for any other change of its columns."""
    if info is None or not info.schema:
        return []
    have = [(c.name.lower(), _spelt(c.type)) for c in info.schema]
    want = [(c.name.lower(), _spelt(c.type)) for c in columns]
    if want[:len(have)] == have:
        return list(columns[len(have):])
    raise ValidationError(f"the columns of {table.name} changed from ({_list(info.schema)}) to ({_list(columns)}); "
                          "a custom incremental table can only gain nullable columns at the end",
                          **_where(table, "columns"),
                          hint=f"its history cannot be recomputed: to recreate it, run `dt drop {table.name} --yes` "
                               "and then `dt run` (it is filled again from its sources), or undo the change")


def _spelt(kind: str | None) -> str:
    return (kind or "").replace(" ", "").upper()


def _list(columns) -> str:
    return ", ".join(f"{c.name} {c.type}" for c in columns)


def _spark_sql(project: Project, table: TableDef, statement: CustomStatement, columns: tuple[Column, ...],
               schemas: dict[str, tuple[Column, ...]]) -> str:
    """The statement in Spark SQL. Stars (`* EXCLUDE (...)`) are expanded against the inputs'
    columns, as Spark has no EXCLUDE."""
    tree = statement.tree.copy()
    if any(True for _ in tree.find_all(exp.Star)):
        mapping: dict[str, dict[str, exp.DataType]] = {SELF_VIEW: {c.name: to_sqlglot(c.type) for c in columns}}
        for name in statement.snapshot_inputs:
            mapping[name] = {c.name: to_sqlglot(c.type or "unknown") for c in schemas.get(name, ())}
        for view, (name, _) in statement.change_views.items():
            mapping[view] = {c.name: to_sqlglot(c.type or "unknown")
                             for c in (*schemas.get(name, ()), *META_COLUMNS)}
        if all(mapping.values()):
            schema = MappingSchema(mapping, dialect=project.dialect)
            selects = [tree.expression] if isinstance(tree, exp.Insert) else [tree.args["using"].this]
            for select in selects:
                if isinstance(select, exp.Query):
                    try:
                        select.replace(qualify(select.copy(), dialect=project.dialect, schema=schema,
                                               validate_qualify_columns=False, identify=False))
                    except (SqlglotError, KeyError, ValueError):
                        # sqlglot cannot qualify it (an ambiguous or unknown column, a construct
                        # it does not resolve; as column_lineage meets them): left to Spark,
                        # which names what it cannot resolve
                        pass
    return tree.sql(dialect="spark", pretty=True)


def analysis(table: TableDef) -> QueryAnalysis:
    """explain's operator table for a custom table: the statement, each CHANGES() input, SELF."""
    statement: CustomStatement = table.custom
    ops = [OperatorInfo(f"{statement.kind} INTO SELF", "custom: the statement runs once per refresh over the "
                        "changes since the last one, in one commit with the frontier", (),
                        line_of(statement.tree), True)]
    for name, mode, line in statement.change_inputs:
        what = ("inserted rows only" if mode == "APPEND_ONLY" else
                "inserted, deleted and updated rows (an update is a DELETE + INSERT pair)")
        ops.append(OperatorInfo(f"{name} CHANGES(INFORMATION => {mode})",
                                f"the change data feed since the last refresh: {what}", (), line, True))
    for line in statement.self_lines:
        ops.append(OperatorInfo("SELF", "read as it is before this refresh", (), line, True))
    for name in statement.snapshot_inputs:
        ops.append(OperatorInfo(f"FROM {name}", "read whole at the run's snapshot (not incrementally)", (),
                                table.input_lines.get(name), True))
    return QueryAnalysis(True, None, tuple(ops), ())


def change_inputs(table: TableDef) -> list[str]:
    return [name for name, _, _ in table.custom.change_inputs]


def action(check: CustomCheck, changed: list[str], full_refresh: bool) -> tuple[str, str | None]:
    """INCREMENTAL when a CHANGES() input moved (or a column is to be added), else NO_DATA."""
    from dtcli.model import INCREMENTAL, NO_DATA

    note = ("; --full-refresh does not apply: a custom incremental table's history cannot be recomputed"
            if full_refresh else "")
    if check.add_columns:
        return INCREMENTAL, f"columns added: {', '.join(c.name for c in check.add_columns)}{note}"
    if changed:
        return INCREMENTAL, f"CHANGES() of {', '.join(changed)}{note}"
    return NO_DATA, note[2:] or None     # the user asked for a rebuild: say why there is none


def source_key(project: Project, name: str) -> list[str] | None:
    """The RELY primary key of an input, if it has one: its changes are then compacted per key."""
    if name in project.sources:
        source = project.sources[name]
        return list(source.primary_key) if source.primary_key and source.rely else None
    table = project.tables.get(name)
    for constraint in table.config.constraints if table else ():
        if constraint["kind"] == "primary_key" and constraint.get("rely"):
            return list(constraint["columns"])
    return None


def step_options(checked, name: str) -> CustomSpec:
    """What the engine needs to run the statement (it travels in the plan)."""
    project = checked.project
    table = project.tables[name]
    statement: CustomStatement = table.custom
    check: CustomCheck = checked.customs[name]
    tree = statement.tree
    on = tree.args.get("on")
    return CustomSpec(
        kind=statement.kind,
        columns=[c.to_dict() for c in check.columns],
        add_columns=[c.to_dict() for c in check.add_columns],
        target_alias=statement.target_alias,
        on=on.sql(dialect=project.dialect) if on is not None else None,
        changes=[ChangeInputSpec(name=n, mode=m, path=project.input_path(n), key=source_key(project, n))
                 for n, m, _ in statement.change_inputs],
        start_versions=checked.customs[name].start_versions,
        start_at=table.config.start_at,
    )


def explain(checked, name: str) -> tuple[CustomSection, list[str]]:
    """explain's section for a custom table, and the warnings a user can act on."""
    project = checked.project
    table = project.tables[name]
    statement: CustomStatement = table.custom
    warnings: list[str] = []
    changes = []
    for inp, mode, line in statement.change_inputs:
        key = source_key(project, inp)
        changes.append(ChangeInput(name=inp, information=mode, line=line,
                                   rely_primary_key=key,
                                   compacted_per_key=key is not None))
        info = checked.snapshot.sources.get(inp)
        if info is not None and not info.change_data_feed:
            from dtcli.state.delta_log import enable_cdf_sql

            warnings.append(f"source {inp} has no change data feed, so reading CHANGES() of it fails; "
                            f"enable it with: {enable_cdf_sql(project.input_path(inp))}")
        if mode == "APPEND_ONLY":
            rewrites = _rewrites(project.input_path(inp))
            if rewrites:
                warnings.append(f"{inp} is read with CHANGES(INFORMATION => APPEND_ONLY) but its history has "
                                f"{', '.join(rewrites)} commits: their deleted and updated rows are not seen "
                                "(use INFORMATION => DEFAULT to handle them)")
    if statement.kind == "MERGE":
        warning = _merge_uniqueness(statement)
        if warning:
            warnings.append(warning)
    downstream = sorted(checked.graph.downstream.get(name, ()))
    if downstream and source_key(project, name) is None:
        warnings.append(f"{', '.join(downstream)} read{'s' if len(downstream) == 1 else ''} {name}, which has no "
                        "RELY primary key: its changes reach them as Delta records them; declare one with "
                        "constraints: [{primary_key: [...], rely: true}] so that CHANGES() of it compact per key")
    first = ("copied from the backfill source; CHANGES() read from "
             + ("start_at" if table.config.start_at else "creation")) if table.config.backfill \
        else "the statement over every existing source row as an INSERT"
    out = CustomSection(statement=f"{statement.kind} INTO SELF", changes=changes,
                        self_reads=list(statement.self_lines), snapshot_tables=list(statement.snapshot_inputs),
                        initial_population=first)
    return out, warnings


def _rewrites(path: str) -> list[str]:
    """Operations in a table's (recent) history that delete or update rows."""
    from dtcli.state.delta_log import open_table

    table = open_table(path)
    if table is None:
        return []
    found = []
    for commit in table.history(100):
        op = str(commit.get("operation", "")).upper()
        mode = str((commit.get("operationParameters") or {}).get("mode", "")).lower()
        metrics = commit.get("operationMetrics") or {}
        removed = metrics.get("numRemovedFiles", metrics.get("num_removed_files"))
        # an overwrite that removed no file created the table (dt seed writes version 0 so)
        created = commit.get("version") == 0 or str(removed) == "0"
        if op in ("DELETE", "UPDATE", "MERGE") or (op in ("WRITE", "CREATE OR REPLACE TABLE AS SELECT")
                                                   and mode == "overwrite" and not created):
            found.append(op)
    return sorted(set(found))


def _merge_uniqueness(statement: CustomStatement) -> str | None:
    """A warning when the USING query is not provably unique on the ON keys (then several source
    rows may match one target row, and the refresh fails)."""
    tree = statement.tree
    using, on = tree.args.get("using"), tree.args.get("on")
    if on is None or not isinstance(using, exp.Subquery):
        return None
    alias = using.alias
    keys = set()
    for eq in on.find_all(exp.EQ, exp.NullSafeEQ):
        for side in (eq.this, eq.expression):
            if isinstance(side, exp.Column) and side.table == alias:
                keys.add(side.name.lower())
    select = using.this if isinstance(using.this, exp.Select) else exp.Select()
    group = select.args.get("group")
    if group is not None and group.expressions and \
            {e.name.lower() for e in group.expressions if isinstance(e, exp.Column)} <= keys and \
            all(isinstance(e, exp.Column) for e in group.expressions):
        return None
    qualify_ = select.args.get("qualify")
    if qualify_ is not None:
        for window in qualify_.find_all(exp.Window):
            parts = window.args.get("partition_by") or []
            if isinstance(window.this, exp.RowNumber) and parts and \
                    all(isinstance(p, exp.Column) for p in parts) and {p.name.lower() for p in parts} <= keys:
                return None
    return (f"the MERGE source {alias} is not provably unique on the ON keys ({', '.join(sorted(keys)) or on.sql()}): "
            "if several of its rows match one row of the table the refresh fails; deduplicate it with "
            "QUALIFY ROW_NUMBER() OVER (PARTITION BY <keys> ORDER BY ...) = 1 or GROUP BY the keys")
