"""A checked DT's column lineage (`dtcli.sql.lineage`), as its kind derives it from what the
user wrote: a query table's from its query (planning/kinds/query.py), a custom table's from its
INSERT INTO SELF (planning/custom_lineage.py); input columns spelt as their inputs spell them.
"""

from __future__ import annotations

from dtcli.planning.checked_project import Checked
from dtcli.planning.kinds.registry import kind_of
from dtcli.sql.lineage import ColumnLineage, Field


def column_lineage(checked: Checked, name: str) -> ColumnLineage | None:
    """None when dt cannot bind the DT's columns before Spark runs (explain says so), or for a
    custom table that is not a plain INSERT. Input columns are spelt as their inputs spell them."""
    table = checked.project.tables[name]
    found = kind_of(table).column_lineage(checked, name, [c.name for c in checked.schemas.get(name, ())])
    if found is None:
        return None
    spelt = {(i, c.name.lower()): c.name for i in table.inputs
             for c in checked.schemas.get(i, ())}

    def respell(deps):
        return {Field(f.input, spelt.get((f.input, f.column), f.column)): ts for f, ts in deps.items()}

    return ColumnLineage({c: respell(d) for c, d in found.columns.items()}, respell(found.dataset))
