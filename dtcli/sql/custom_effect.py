"""What a custom table's statement is about to write, as queries: for auditing before the commit.

`INSERT INTO SELF ... query` writes the query's rows (by position, or into the listed columns,
the others NULL) and keeps every old row. `MERGE INTO SELF` writes, for each target row a
source row matches, the first WHEN MATCHED clause whose condition holds: an UPDATE writes the
row with its SET applied (a DELETE writes nothing); for each source row nothing matches, the
first WHEN NOT MATCHED clause's INSERT; for each target row no source row matches, the first
WHEN NOT MATCHED BY SOURCE clause. A target row some clause applied to is replaced; the rest
stay. The queries here compute those rows and the rows that stay, in the table's column order,
reading the table as it was before the refresh (a view), so that the data tests can check them
before the statement runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp


@dataclass(frozen=True)
class Effect:
    written: str          # Spark SQL: the rows the statement writes, the table's columns in order
    kept: str             # Spark SQL: the old rows that stay


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def statement_effect(sql: str, columns: list[dict], self_view: str) -> Effect:
    """`sql`: the statement in Spark SQL (target SELF); `columns`: the table's {name, type}."""
    tree = sqlglot.parse_one(sql, read="spark")
    if isinstance(tree, exp.Merge):
        return _merge(tree, columns, self_view)
    return _insert(tree, columns, self_view)


def _null(column: dict) -> str:
    return f"CAST(NULL AS {column['type']})"


def _insert(tree: exp.Insert, columns: list[dict], self_view: str) -> Effect:
    target = tree.this
    listed = [c.name.lower() for c in target.expressions] if isinstance(target, exp.Schema) else None
    query = tree.expression
    names = listed or [c["name"].lower() for c in columns]
    aliases = ", ".join(_q(f"__dt_c{k}") for k in range(len(names)))
    select = []
    for column in columns:
        name = column["name"].lower()
        select.append(f"{_q(f'__dt_c{names.index(name)}')} AS {_q(column['name'])}" if name in names
                      else f"{_null(column)} AS {_q(column['name'])}")
    written = f"SELECT {', '.join(select)} FROM ({query.sql(dialect='spark')}) AS __dt_q({aliases})"
    return Effect(written, f"SELECT * FROM {self_view}")


def _cond(when: exp.When) -> str:
    condition = when.args.get("condition")
    return f"coalesce(({condition.sql(dialect='spark')}), false)" if condition is not None else "true"


def _index(whens: list[exp.When]) -> str:
    """The number (from 1) of the first clause whose condition holds, 0 for none."""
    cases = " ".join(f"WHEN {_cond(w)} THEN {k + 1}" for k, w in enumerate(whens))
    return f"CASE {cases} ELSE 0 END"


def _assigned(then: exp.Expression, columns: list[dict], target: str, source: str) -> dict[str, str]:
    """Column name -> the expression an UPDATE or INSERT clause gives it."""
    names = [c["name"].lower() for c in columns]
    if isinstance(then, exp.Update):
        if any(isinstance(e, exp.Star) for e in then.expressions):
            return {n: f"{source}.{_q(n)}" for n in names}
        return {e.this.name.lower(): e.expression.sql(dialect="spark") for e in then.expressions}
    if isinstance(then.this, exp.Star):
        return {n: f"{source}.{_q(n)}" for n in names}
    listed = [c.name.lower() for c in then.this.expressions]
    values = [v.sql(dialect="spark") for v in then.expression.expressions]
    return dict(zip(listed, values))


def _rows(whens: list[exp.When], kinds: tuple, columns: list[dict], target: str, source: str,
          default_from_target: bool) -> list[str] | None:
    """Per column, the CASE over the clauses of `kinds` giving its written value."""
    chosen = [(k, w) for k, w in enumerate(whens) if isinstance(w.args.get("then"), kinds)]
    if not chosen:
        return None
    out = []
    for column in columns:
        name = column["name"].lower()
        branches = []
        for k, when in chosen:
            value = _assigned(when.args["then"], columns, target, source).get(name)
            if value is None:
                value = f"{target}.{_q(column['name'])}" if default_from_target else _null(column)
            branches.append(f"WHEN {k + 1} THEN {value}")
        out.append(f"CASE __dt_clause {' '.join(branches)} END AS {_q(column['name'])}")
    return out


def _merge(tree: exp.Merge, columns: list[dict], self_view: str) -> Effect:
    target = tree.this.alias or "self"
    using = tree.args["using"]
    source = using.alias or (using.name if isinstance(using, exp.Table) else "")
    on = tree.args["on"].sql(dialect="spark")
    whens = list(tree.args["whens"].expressions)
    matched = [w for w in whens if w.args.get("matched")]
    unmatched = [w for w in whens if not w.args.get("matched") and not w.args.get("source")]
    by_source = [w for w in whens if not w.args.get("matched") and w.args.get("source")]
    table = f"{self_view} AS {target}"
    src = using.sql(dialect="spark")
    parts = []
    written = _rows(matched, (exp.Update,), columns, target, source, True)
    if written:
        update = [k + 1 for k, w in enumerate(matched) if isinstance(w.args.get("then"), exp.Update)]
        parts.append(f"SELECT {', '.join(written)} FROM (SELECT {target}.*, {_index(matched)} AS __dt_clause, "
                     f"{_struct(source)} FROM {table} JOIN {src} ON {on}) AS {target} "
                     f"WHERE __dt_clause IN ({', '.join(map(str, update))})")
    inserted = _rows(unmatched, (exp.Insert,), columns, target, source, False)
    if inserted:
        insert = [k + 1 for k, w in enumerate(unmatched) if isinstance(w.args.get("then"), exp.Insert)]
        parts.append(f"SELECT {', '.join(inserted)} FROM (SELECT {source}.*, {_index(unmatched)} AS __dt_clause "
                     f"FROM {src} LEFT ANTI JOIN {table} ON {on}) AS {source} "
                     f"WHERE __dt_clause IN ({', '.join(map(str, insert))})")
    updated = _rows(by_source, (exp.Update,), columns, target, source, True)
    if updated:
        update = [k + 1 for k, w in enumerate(by_source) if isinstance(w.args.get("then"), exp.Update)]
        parts.append(f"SELECT {', '.join(updated)} FROM (SELECT {target}.*, {_index(by_source)} AS __dt_clause "
                     f"FROM {table} LEFT ANTI JOIN {src} ON {on}) AS {target} "
                     f"WHERE __dt_clause IN ({', '.join(map(str, update))})")
    if not parts:
        empty = ", ".join(f"{_null(c)} AS {_q(c['name'])}" for c in columns)
        parts.append(f"SELECT {empty} WHERE false")
    kept = f"SELECT {target}.* FROM {table}"
    if matched:
        applies = " OR ".join(_cond(w) for w in matched)
        kept += f" LEFT ANTI JOIN {src} ON ({on}) AND ({applies})"
    if by_source:
        applies = " OR ".join(_cond(w) for w in by_source)
        kept = (f"SELECT {target}.* FROM ({kept}) AS {target} LEFT SEMI JOIN {src} ON {on} UNION ALL "
                f"SELECT {target}.* FROM ({kept}) AS {target} LEFT ANTI JOIN {src} ON {on} "
                f"WHERE NOT ({applies})")
    return Effect(" UNION ALL ".join(parts), kept)


def _struct(source: str) -> str:
    """The matched source row, kept as one struct named like the source alias, so that the
    SET expressions (`s.col`) read it after the join's columns were narrowed to the target's."""
    return f"struct({source}.*) AS {source}"
