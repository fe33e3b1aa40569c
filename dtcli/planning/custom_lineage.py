"""A custom table's column lineage (REFRESH USING), when it is an `INSERT INTO SELF SELECT
...`: its columns by position, each CHANGES() input named as the input it reads, the metadata
columns (`METADATA$ACTION`) and SELF left out (they are no input's columns). A MERGE's columns
come from several clauses, each under its own condition: it has table-level lineage only.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from dtcli.planning.checked_project import Checked
from dtcli.sql.custom import ACTION, ISUPDATE, SELF_VIEW, CustomStatement, split_changes_name
from dtcli.sql.lineage import ColumnLineage, Field
from dtcli.sql.lineage import column_lineage as query_lineage
from dtcli.sql.types import to_sqlglot

_META = frozenset({ACTION.lower(), ISUPDATE.lower()})


def statement_lineage(checked: Checked, name: str, names: list[str]) -> ColumnLineage | None:
    """`names`: the table's columns (an INSERT naming its target columns names them itself)."""
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
