"""Reading a DT's rows without a JVM (`dt show rows`), with each row's frozen flag.

deltalake's query engine (DataFusion) reads Delta tables, deletion vectors included. The
frozen predicate is evaluated as of the DT's last refresh (its time functions at that refresh's
data timestamp) and written in PostgreSQL's spelling, which DataFusion reads; column names are
matched to the table's own spelling, since DataFusion's names are case-sensitive.
"""

from __future__ import annotations

from datetime import datetime

from sqlglot import exp

from dtcli.errors import UsageError, ValidationError
from dtcli.sql.frozen import at_time, folded, parse_predicate
from dtcli.state.delta_log import Row, TableInfo, as_arrow, open_table

ENGINE_DIALECT = "postgres"


def render(expr: exp.Expression, columns: list[str]) -> str:
    """`expr` for DataFusion, its columns spelt as the table spells them."""
    spelt = {c.lower(): c for c in columns}

    def respell(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            return exp.column(spelt.get(node.name.lower(), node.name), quoted=True)
        return node

    return expr.copy().transform(respell).sql(dialect=ENGINE_DIALECT, identify=True, comments=False)


def _query(path: str, sql: str) -> list[Row]:
    from deltalake import QueryBuilder

    table = open_table(path)
    if table is None:
        raise UsageError(f"{path} holds no table yet", hint="run `dt run` to create it")
    try:
        return as_arrow(QueryBuilder().register("t", table).execute(sql).read_all()).to_pylist()
    except Exception as err:    # broad: deltalake raises a bare Exception for an error met reading rows (1/0)
        raise UsageError(f"cannot read the rows: {str(err).splitlines()[0]}",
                         hint="check --where; it is evaluated without Spark") from None


def rows(path: str, columns: list[str], frozen: exp.Expression | None, where: exp.Expression | None,
         limit: int) -> list[Row]:
    flag = f"coalesce(({render(frozen, columns)}), false)" if frozen is not None else "false"
    filter_ = f" WHERE {render(where, columns)}" if where is not None else ""
    return _query(path, f"SELECT *, {flag} AS is_frozen FROM t{filter_} LIMIT {int(limit)}")


def counts(path: str, columns: list[str], frozen: exp.Expression | None,
           where: exp.Expression | None = None) -> dict[str, int]:
    flag = f"coalesce(({render(frozen, columns)}), false)" if frozen is not None else "false"
    filter_ = f" WHERE {render(where, columns)}" if where is not None else ""
    found = _query(path, f"SELECT SUM(CASE WHEN {flag} THEN 1 ELSE 0 END) AS frozen_rows, "
                         f"SUM(CASE WHEN {flag} THEN 0 ELSE 1 END) AS active_rows FROM t{filter_}")
    row = found[0] if found else {}
    return {"frozen_rows": int(row.get("frozen_rows") or 0), "active_rows": int(row.get("active_rows") or 0)}


def frozen_as_refreshed(info: TableInfo, dialect: str):
    """The frozen region a DT's last refresh froze rows with: its recorded predicate at its
    data timestamp (None: nothing is frozen)."""
    frontier = info.frontier
    if frontier is None or not frontier.frozen_where or not frontier.data_timestamp:
        return None
    try:
        expr = parse_predicate(frontier.frozen_where, dialect)
    except ValidationError:
        return None
    return folded(at_time(expr, datetime.fromisoformat(frontier.data_timestamp)))
