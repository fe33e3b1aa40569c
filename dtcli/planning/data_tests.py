"""Data tests and expectations checked against the tables' columns, and compiled for the engine.

Checked once per command with the rest of the project (no Spark): a test on a column the table
does not have, a `relationships` test to a table the project does not know, an expression that
does not parse or names another column are errors at the YAML's line with the fix. Each test
is then compiled to a `Check` in Spark SQL over the table's own columns (dtcli/data_tests.py),
which a refresh evaluates on the rows it is about to commit and `dt test` on the whole table.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dtcli.data_tests import (
    ACCEPTED_VALUES,
    DROP,
    ERROR,
    EXPRESSION_IS_TRUE,
    FAIL,
    KEEP_OUT,
    KEY,
    LINK,
    NOT_NULL,
    QUERY,
    RECORD,
    RELATIONSHIPS,
    ROW,
    SINGULAR,
    STOP,
    UNIQUE,
    UNIQUE_COMBINATION,
    AuditSpec,
    Check,
    DataTest,
    Expectation,
    TableChecks,
)
from dtcli.errors import ValidationError, suggest
from dtcli.model import Column, Project
from dtcli.planning.kinds.registry import kind_of
from dtcli.sql import functions as fn
from dtcli.sql.grouped_keys import grouped_output_columns


def check_tests(project: Project, schemas: dict[str, tuple[Column, ...]], order: list[str],
                only: set[str] | None = None) -> dict[str, TableChecks]:
    """Every table's (DT, source, seed) tests checked against the columns known without Spark;
    a column that cannot be known before Spark runs is left to the refresh."""
    out: dict[str, TableChecks] = {}
    for name in order:
        table = project.tables[name]
        kind = kind_of(table)
        columns = schemas.get(name, ())
        _check_notes(table.config.column_notes, name, columns)
        checks = TableChecks(list(table.config.data_tests), list(table.config.expectations))
        for test in checks.tests:
            _check_test(project, test, columns, schemas)
        for expectation in checks.expectations:
            _expression(expectation.expect, name, columns, project.dialect, expectation.file, expectation.line,
                        f"expectation {expectation.name}")
            kind.check_expectation(table, expectation)
        out[name] = checks
    for name, source in sorted(project.sources.items()):
        if only is not None and name not in only:
            continue
        for test in source.data_tests:
            _check_test(project, test, schemas.get(name, ()), schemas)
        if source.data_tests:
            out[name] = TableChecks(list(source.data_tests))
    position = {n: k for k, n in enumerate(order)}
    for test in project.singular_tests:
        if any(i in project.disabled for i in test.inputs) or \
                (only is not None and not set(test.inputs) <= (only | set(project.sources))):
            continue
        dts = [i for i in test.inputs if i in project.tables]
        owner = max(dts, key=lambda n: position.get(n, -1)) if dts else None
        if owner is not None:
            out.setdefault(owner, TableChecks()).singular.append(test)
    return out


def _check_notes(notes, name: str, columns: tuple[Column, ...]) -> None:
    names = {c.name.lower() for c in columns}
    for note in notes:
        if names and note.name.lower() not in names:
            raise ValidationError(f"columns: '{note.name}' is not an output column of {name}", file=note.file,
                                  line=note.line, hint=suggest(note.name.lower(), names)
                                  or f"its columns are {', '.join(c.name for c in columns)}")


def _check_column(test: DataTest, column: str, columns: tuple[Column, ...], table: str | None = None) -> None:
    names = {c.name.lower() for c in columns}
    if names and column.lower() not in names:
        raise ValidationError(f"{test.name}: column '{column}' is not a column of {table or test.table}",
                              file=test.file, line=test.line,
                              hint=suggest(column.lower(), names) or f"its columns are {', '.join(sorted(names))}")


def _check_test(project: Project, test: DataTest, columns: tuple[Column, ...],
                schemas: dict[str, tuple[Column, ...]]) -> None:
    if test.column:
        _check_column(test, test.column, columns)
    for column in test.args.get("combination_of_columns") or ():
        _check_column(test, column, columns)
    if test.kind == RELATIONSHIPS:
        target = test.args["to"]
        if target not in project.tables and target not in project.sources:
            raise ValidationError(f"{test.name}: relationships to '{target}', which is no table, source or seed "
                                  "of this project", file=test.file, line=test.line,
                                  hint=suggest(target, [*project.tables, *project.sources])
                                  or "to: ref('<table>') names a dynamic table or seed, source('<name>') a source")
        _check_column(test, test.args["field"], schemas.get(target, ()), target)
    if test.kind == EXPRESSION_IS_TRUE:
        text = test.args["expression"] if not test.column else f"{test.column} {test.args['expression']}"
        _expression(text, test.table, columns, project.dialect, test.file, test.line, test.name)
    if test.where:
        _expression(test.where, test.table, columns, project.dialect, test.file, test.line, f"{test.name} where")


def _expression(text: str, table: str, columns: tuple[Column, ...], dialect: str, file: str | None,
                line: int | None, what: str) -> exp.Expression:
    """One SQL expression over the table's own columns, with no subquery or aggregate."""
    try:
        expr = sqlglot.parse_one(text, read=dialect, into=exp.Condition)
    except (ParseError, TokenError, ValueError):
        expr = None
    if expr is None or isinstance(expr, (exp.Query, exp.Command)):
        raise ValidationError(f"{what}: '{text.strip()}' is not one SQL expression", file=file, line=line,
                              hint="write one expression over the table's columns, e.g. amount >= 0")
    names = {c.name.lower(): c.name for c in columns}
    for node in expr.walk():
        if isinstance(node, (exp.Query, exp.Subquery, exp.Exists)):
            raise ValidationError(f"{what}: a subquery is not allowed", file=file, line=line,
                                  hint="a row-level check reads one row; a singular test in tests/<name>.sql "
                                       "can read other tables")
        if fn.is_aggregate(node) or isinstance(node, exp.Window):
            raise ValidationError(f"{what}: {node.sql()} is an aggregate or window function", file=file, line=line,
                                  hint="a row-level check reads one row; a singular test in tests/<name>.sql "
                                       "can aggregate")
        if isinstance(node, exp.Column) and not node.table and names and node.name.lower() not in names \
                and node.name.lower() not in fn.NIL_ARY_TIME_COLUMNS:
            raise ValidationError(f"{what}: column {node.name} is not a column of {table}", file=file, line=line,
                                  hint=suggest(node.name.lower(), names)
                                  or f"its columns are {', '.join(names.values())}")
    return expr


# -- compiling ----------------------------------------------------------------------------------

def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _spark(text: str, dialect: str) -> str:
    return sqlglot.parse_one(text, read=dialect, into=exp.Condition).sql(dialect="spark")


def _literal(value, quote: bool) -> str:
    if not quote:
        return str(value)
    if isinstance(value, bool):
        value = str(value).lower()
    return exp.Literal.string(str(value)).sql(dialect="spark")


def compile_checks(project: Project, name: str, checks: TableChecks, *, columns: list[str],
                   query=None, frozen: bool = False) -> AuditSpec:
    """The table's checks in Spark SQL (`columns`: its output columns; `query`: its qualified
    query, which may prove a `unique` test; `frozen`: it has a frozen region, which proves
    nothing)."""
    grouped = None if frozen or query is None else grouped_output_columns(query, columns)
    out = [_test_check(project, t, grouped) for t in checks.tests]
    out += [_expectation_check(project, name, e) for e in checks.expectations]
    out += [_singular_check(project, name, t) for t in checks.singular]
    return AuditSpec(out)


def _test_check(project: Project, test: DataTest, grouped: list[str] | None) -> Check:
    dialect = project.dialect
    action = STOP if test.severity == ERROR else RECORD
    where = _spark(test.where, dialect) if test.where else None
    base = dict(name=test.name, unique_id=test.unique_id(project.name), kind="test", test=test.kind,
                action=action, where=where, column=test.column, severity=test.severity, file=test.file,
                line=test.line)
    col = _q(test.column) if test.column else None
    if test.kind == NOT_NULL:
        return Check(**base, shape=ROW, violation=f"{col} IS NULL")
    if test.kind == ACCEPTED_VALUES:
        values = ", ".join(_literal(v, test.args.get("quote", True)) for v in test.args["values"])
        return Check(**base, shape=ROW, violation=f"{col} NOT IN ({values})")
    if test.kind == EXPRESSION_IS_TRUE:
        text = test.args["expression"] if not test.column else f"{test.column} {test.args['expression']}"
        return Check(**base, shape=ROW, violation=f"NOT ({_spark(text, dialect)})")
    if test.kind in (UNIQUE, UNIQUE_COMBINATION):
        key = [test.column] if test.kind == UNIQUE else list(test.args["combination_of_columns"])
        if test.kind == UNIQUE:     # as dbt's: NULL is no value, so it is never a duplicate
            base["where"] = f"{col} IS NOT NULL" + (f" AND ({where})" if where else "")
        proven = None
        if grouped and {c.lower() for c in grouped} <= {c.lower() for c in key}:
            proven = f"the query groups by {', '.join(grouped)}: one row per key"
        return Check(**base, shape=KEY, columns=key, proven=proven)
    if test.kind == RELATIONSHIPS:
        target = test.args["to"]
        return Check(**base, shape=LINK, to={"name": target, "path": project.input_path(target),
                                             "field": test.args["field"]})
    raise ValueError(f"no check for data test {test.kind}")


def _expectation_check(project: Project, name: str, expectation: Expectation) -> Check:
    action = {FAIL: STOP, DROP: KEEP_OUT}.get(expectation.on_violation, RECORD)
    return Check(name=expectation.name, unique_id=expectation.unique_id(project.name, name),
                 kind="expectation", test="expectation", action=action, shape=ROW,
                 violation=f"NOT ({_spark(expectation.expect, project.dialect)})",
                 severity=ERROR if action == STOP else "warn", file=expectation.file, line=expectation.line)


def _singular_check(project: Project, name: str, test: DataTest) -> Check:
    reads = {i: ("" if i == name else project.input_path(i)) for i in test.inputs}
    return Check(name=test.name, unique_id=test.unique_id(project.name), kind="test", test=SINGULAR,
                 action=STOP if test.severity == ERROR else RECORD, shape=QUERY, sql=test.sql, reads=reads,
                 severity=test.severity, file=test.file, line=test.line)


def drop_predicates(checks: TableChecks, dialect: str) -> list[str]:
    """The `drop` expectations' predicates in Spark SQL: what the DT holds depends on them, so
    they are part of its definition (dtcli/planning/definition.py)."""
    return sorted(_spark(e.expect, dialect) for e in checks.expectations if e.on_violation == DROP)

