"""A checked DT's column lineage (`dtcli.sql.lineage`), from the query the user wrote.

The checked project keeps each query qualified and then rewritten by dt's rules (sql/rules);
a rule records every construct it replaces, so a query without rewrite notes is the query as
written, and is read as it is. One with notes is qualified again as written (milliseconds): a
semi-join the rules made of `IN (SELECT ...)` is a filter to whoever reads lineage.

A custom table (`REFRESH USING`) has lineage when it is an `INSERT INTO SELF SELECT ...`: its
columns by position, each CHANGES() input named as the input it reads, the metadata columns
(`METADATA$ACTION`) and SELF left out (they are no input's columns). A MERGE's columns come from
several clauses, each under its own condition: it has table-level lineage only.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from dtcli.errors import DtError
from dtcli.planning.checked import Checked
from dtcli.sql.custom import ACTION, ISUPDATE, SELF_VIEW, CustomStatement, split_changes_name
from dtcli.sql.lineage import ColumnLineage, Field
from dtcli.sql.lineage import column_lineage as query_lineage
from dtcli.sql.resolve import resolve
from dtcli.sql.types import to_sqlglot

_META = frozenset({ACTION.lower(), ISUPDATE.lower()})


def column_lineage(checked: Checked, name: str) -> ColumnLineage | None:
    """None when dt cannot bind the DT's columns before Spark runs (explain says so), or for a
    custom table that is not a plain INSERT. Input columns are spelt as their inputs spell them."""
    found = _lineage(checked, name)
    if found is None:
        return None
    spelt = {(i, c.name.lower()): c.name for i in checked.project.tables[name].inputs
             for c in checked.schemas.get(i, ())}

    def respell(deps):
        return {Field(f.input, spelt.get((f.input, f.column), f.column)): ts for f, ts in deps.items()}

    return ColumnLineage({c: respell(d) for c, d in found.columns.items()}, respell(found.dataset))


def _lineage(checked: Checked, name: str) -> ColumnLineage | None:
    project = checked.project
    table = project.tables[name]
    names = [c.name for c in checked.schemas.get(name, ())]
    if table.kind == "custom":
        return _custom(checked, name, names)
    if not checked.qualified.bound(name):
        return None
    if not checked.qualified.rewrites(name):
        return query_lineage(checked.qualified[name], names)
    inputs = {i: checked.schemas.get(i, ()) for i in table.inputs}
    try:
        resolved = resolve(table.query, inputs, project.dialect, table.file)
    except DtError:
        return None
    return query_lineage(resolved.query, names) if resolved is not None else None


def _custom(checked: Checked, name: str, names: list[str]) -> ColumnLineage | None:
    project = checked.project
    statement: CustomStatement = project.tables[name].custom
    tree = statement.tree
    if not isinstance(tree, exp.Insert) or not isinstance(tree.expression, exp.Query):
        return None
    own = checked.schemas.get(name, ())
    mapping = {SELF_VIEW: {c.name: to_sqlglot(c.type) for c in own}}
    for source in statement.snapshot_inputs:
        mapping[source] = {c.name: to_sqlglot(c.type or "unknown") for c in checked.schemas.get(source, ())}
    for view, (source, _) in statement.change_views.items():
        mapping[view] = {**{c.name: to_sqlglot(c.type or "unknown") for c in checked.schemas.get(source, ())},
                         ACTION: to_sqlglot("STRING"), ISUPDATE: to_sqlglot("BOOLEAN")}
    target = tree.this
    if isinstance(target, exp.Schema):        # INSERT INTO SELF (a, b) SELECT ...
        names = [c.name for c in target.expressions]
    try:
        schema = MappingSchema(mapping, dialect=project.dialect)
        query = qualify(tree.expression.copy(), dialect=project.dialect, schema=schema,
                        validate_qualify_columns=False, identify=False)
    except (SqlglotError, KeyError, ValueError):
        return None
    lineage = query_lineage(query, names)
    if lineage is None:
        return None

    def input_of(f: Field) -> Field | None:
        if f.column in _META or f.input == SELF_VIEW:
            return None
        changes = split_changes_name(f.input)
        return Field(changes[1].lower(), f.column) if changes else f

    def renamed(deps):
        out = {}
        for f, ts in deps.items():
            g = input_of(f)
            if g is not None:
                out[g] = out.get(g, frozenset()) | ts
        return dict(sorted(out.items()))

    return ColumnLineage({c: renamed(deps) for c, deps in lineage.columns.items()}, renamed(lineage.dataset))
