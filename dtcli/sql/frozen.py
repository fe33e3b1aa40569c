"""Frozen regions: the `frozen_where` predicate, its rules, and the active region it leaves.

Rows of a DT that match the predicate are frozen: refreshes after the first never rewrite,
delete or duplicate them. Everything else is the active region, `NOT coalesce(predicate, false)`,
which every refresh brings level with the query. Time functions in the predicate are evaluated
once per refresh, at its data timestamp (`at_time`), so a predicate such as
`order_date < CURRENT_DATE - 30` freezes rows as time passes.

The predicate is parsed as one expression and every piece of SQL dt generates from it is
rendered from the parsed tree, never spliced from the user's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dtcli.errors import ValidationError, suggest
from dtcli.model import Column
from dtcli.sql import functions as fn
from dtcli.sql.frozen_implies import constant_value

# Time functions: evaluated once per refresh, so they are the one nondeterminism allowed.
TIME_NODES: tuple[type[exp.Expression], ...] = (
    exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentDatetime, exp.CurrentTimestampLTZ,
    exp.Localtimestamp)
TIME_NAMES = frozenset({"now", "getdate", "sysdate", "systimestamp", "curdate", "current_date",
                        "current_timestamp", "localtimestamp"})
DATE_NODES = (exp.CurrentDate,)
METADATA_PREFIXES = ("metadata$", "_metadata", "_change_type", "_commit_version", "_commit_timestamp")


@dataclass(frozen=True)
class FrozenPredicate:
    text: str                   # as configured
    expr: exp.Expression        # parsed, in the project's dialect
    columns: tuple[str, ...]    # the DT columns it reads, as the DT spells them


def parse_predicate(text: str, dialect: str, *, file: str | None = None, line: int | None = None
                    ) -> exp.Expression:
    """Exactly one SQL boolean expression; anything else (a second statement, a dangling
    clause) is a validation error."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("frozen_where must be a SQL boolean expression", file=file, line=line,
                              hint="e.g. frozen_where: order_date < CURRENT_DATE - 30")
    if "metadata$" in text.lower():
        raise ValidationError("frozen_where: metadata columns are not allowed", file=file, line=line,
                              hint="name only the table's own columns")
    try:
        expr = sqlglot.parse_one(text, read=dialect, into=exp.Condition)
    except (ParseError, TokenError, ValueError):
        raise ValidationError(f"frozen_where is not one SQL boolean expression: {text.strip()}",
                              file=file, line=line,
                              hint="write one expression over the table's columns, with no second "
                                   "statement, e.g. order_date < '2025-01-01'") from None
    if isinstance(expr, (exp.Query, exp.Command)) or expr is None:
        raise ValidationError("frozen_where must be an expression, not a statement", file=file, line=line)
    return expr


def is_time_function(node: exp.Expression) -> bool:
    if isinstance(node, TIME_NODES):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in TIME_NAMES
    return isinstance(node, exp.Column) and not node.table and \
        node.name.lower() in fn.NIL_ARY_TIME_COLUMNS - {"current_time", "current_user"}


def check_predicate(text: str, expr: exp.Expression, table: str, columns: tuple[Column, ...],
                    constraints: list[dict], *, file: str | None = None, line: int | None = None
                    ) -> FrozenPredicate:
    """The predicate rules: no subqueries, no nondeterministic functions but time functions, no
    user-defined functions, no metadata columns, only the DT's own columns, and with RELY
    constraints only columns in every one of them."""
    def fail(message: str, hint: str | None = None) -> ValidationError:
        return ValidationError(f"frozen_where: {message}", file=file, line=line, hint=hint)

    names = {c.name.lower(): c.name for c in columns}
    used: list[str] = []
    for node in expr.walk():
        if isinstance(node, (exp.Query, exp.Subquery, exp.Exists)):
            raise fail("a subquery is not allowed", "name only the table's own columns")
        if is_time_function(node):
            continue
        if isinstance(node, exp.Column):
            name = node.name
            if any(p.name.lower().startswith(METADATA_PREFIXES) for p in node.parts):
                raise fail(f"metadata column {name} is not allowed", "name only the table's own columns")
            if node.table and node.table.lower() != table:
                raise fail(f"{node.sql()} names another table", f"write {name} alone: the predicate "
                           f"is evaluated on {table}'s own rows")
            if columns and name.lower() not in names:
                raise fail(f"column {name} is not a column of {table}",
                           suggest(name.lower(), names) or f"columns: {', '.join(c.name for c in columns)}")
            if names.get(name.lower(), name) not in used:
                used.append(names.get(name.lower(), name))
        elif fn.is_aggregate(node) or isinstance(node, exp.Window):
            raise fail(f"{node.sql()} is an aggregate or window function", "a predicate is about one row")
        elif fn.is_nondeterministic(node):
            raise fail(f"{fn.written_name(node, text)}() is nondeterministic; only time functions "
                       "(CURRENT_TIMESTAMP, CURRENT_DATE, NOW ...) are allowed")
        elif fn.is_user_defined(node):
            raise fail(f"user-defined function {fn.written_name(node, text)}() is not allowed",
                       "use built-in functions")
    rely = [c for c in constraints if c.get("rely")]
    if rely:
        allowed = set.intersection(*[{k.lower() for k in c["columns"]} for c in rely])
        for name in used:
            if name.lower() not in allowed:
                raise ValidationError(f"Immutable where predicate column {name.upper()} is not part "
                                      "of any RELY constraint.", file=file, line=line,
                                      hint="a frozen_where column must be in every RELY primary key "
                                           "and unique constraint")
    return FrozenPredicate(text, expr, tuple(used))


# ---- evaluation at a refresh's data timestamp ---------------------------------------------------

def at_time(expr: exp.Expression, when: datetime) -> exp.Expression:
    """The predicate with its time functions replaced by the moment `when` (UTC)."""
    moment = when.astimezone(timezone.utc)

    def swap(node: exp.Expression) -> exp.Expression:
        if not is_time_function(node):
            return node
        if isinstance(node, DATE_NODES) or node.name.lower() in ("curdate", "current_date"):
            return exp.cast(exp.Literal.string(moment.date().isoformat()), exp.DataType.Type.DATE)
        return exp.cast(exp.Literal.string(moment.replace(tzinfo=None).isoformat(sep=" ")),
                        exp.DataType.Type.TIMESTAMP)

    return expr.copy().transform(swap)


def has_time(expr: exp.Expression) -> bool:
    return any(is_time_function(n) for n in expr.walk())


def frozen_sql(expr: exp.Expression) -> str:
    """`coalesce(predicate, false)`: the frozen region, as Spark SQL."""
    return exp.func("coalesce", exp.Paren(this=expr.copy()), exp.false()).sql(dialect="spark", comments=False)


def active_sql(expr: exp.Expression) -> str:
    """The active region, `NOT coalesce(predicate, false)`, as Spark SQL that Delta's file
    skipping can use: the negation is pushed down to the comparisons (`a < x` becomes
    `a >= x OR a IS NULL`), which min/max and null-count statistics prune on."""
    return _not_true(expr).sql(dialect="spark", comments=False)


_FLIP = {exp.LT: exp.GTE, exp.LTE: exp.GT, exp.GT: exp.LTE, exp.GTE: exp.LT, exp.EQ: exp.NEQ,
         exp.NEQ: exp.EQ}


def _not_true(node: exp.Expression) -> exp.Expression:
    """An expression that is TRUE exactly where `node` is not TRUE (FALSE or NULL)."""
    if isinstance(node, exp.Paren):
        return _not_true(node.this)
    if isinstance(node, exp.And):
        return exp.Or(this=exp.Paren(this=_not_true(node.this)),
                      expression=exp.Paren(this=_not_true(node.expression)))
    if isinstance(node, exp.Or):
        return exp.And(this=exp.Paren(this=_not_true(node.this)),
                       expression=exp.Paren(this=_not_true(node.expression)))
    flipped = _FLIP.get(type(node))
    if flipped is not None:
        col = node.this if isinstance(node.this, exp.Column) else node.expression \
            if isinstance(node.expression, exp.Column) else None
        other = node.expression if col is node.this else node.this
        if col is not None and _constant(other):
            return exp.Or(this=flipped(this=node.this.copy(), expression=node.expression.copy()),
                          expression=exp.Is(this=col.copy(), expression=exp.Null()))
    return exp.Not(this=exp.func("coalesce", exp.Paren(this=node.copy()), exp.false()))


def _constant(node: exp.Expression) -> bool:
    return not any(isinstance(n, exp.Column) for n in node.walk())


def folded(expr: exp.Expression) -> exp.Expression:
    """The predicate with every constant side of a comparison computed (`CURRENT_DATE - 30`,
    already evaluated by `at_time`, becomes a date literal): engines other than Spark then
    read it without Spark's date arithmetic."""
    def fold(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Column, exp.Literal)) or any(isinstance(n, exp.Column) for n in node.walk()):
            return node
        value = constant_value(node)
        if isinstance(value, datetime):
            return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.Type.TIMESTAMP)
        if isinstance(value, date):
            return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
        return node

    return expr.copy().transform(fold)
