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


# ---- does one frozen region contain another? ----------------------------------------------------

def implies(old: exp.Expression | None, new: exp.Expression | None) -> bool:
    """Whether every row `old` freezes is also frozen by `new` (both already evaluated at their
    moments, see `at_time`): True only when that can be shown for comparisons of one column with
    constants, and AND / OR / IN / BETWEEN of those. No old predicate froze nothing."""
    if old is None:
        return True
    if new is None:
        return False
    if old.sql(comments=False) == new.sql(comments=False):
        return True
    left, right = _dnf(old), _dnf(new)
    if left is None or right is None:
        return False
    return all(any(_conj_implies(d, e) for e in right) for d in left)


# An atom is ("cmp", column, op, value) or ("opaque", sql text).
_OPS = {exp.EQ: "=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_REVERSED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_MAX_TERMS = 64


def _dnf(node: exp.Expression, negate: bool = False) -> list[list[tuple]] | None:
    if isinstance(node, exp.Paren):
        return _dnf(node.this, negate)
    if isinstance(node, exp.Not):
        return _dnf(node.this, not negate)
    if isinstance(node, (exp.And, exp.Or)):
        conj = isinstance(node, exp.And) != negate
        left, right = _dnf(node.this, negate), _dnf(node.expression, negate)
        if left is None or right is None:
            return None
        if not conj:
            out = left + right
        else:
            out = [a + b for a in left for b in right]
        return out if len(out) <= _MAX_TERMS else None
    if isinstance(node, exp.In) and not negate and not node.args.get("query"):
        col, values = node.this, [_value(v) for v in node.expressions]
        if isinstance(col, exp.Column) and all(v is not None for v in values):
            return [[("cmp", col.name.lower(), "=", v)] for v in values]
    if isinstance(node, exp.Between) and not negate and isinstance(node.this, exp.Column):
        low, high = _value(node.args["low"]), _value(node.args["high"])
        if low is not None and high is not None:
            name = node.this.name.lower()
            return [[("cmp", name, ">=", low), ("cmp", name, "<=", high)]]
    op = _OPS.get(type(node))
    if op is not None:
        for col, other, flip in ((node.this, node.expression, False), (node.expression, node.this, True)):
            value = _value(other)
            if isinstance(col, exp.Column) and value is not None:
                op2 = _REVERSED[op] if flip else op
                if negate:
                    if op2 == "=":
                        break
                    op2 = _NEGATED[op2]
                return [[("cmp", col.name.lower(), op2, value)]]
    return [[("opaque", ("NOT " if negate else "") + node.sql(comments=False))]]


def _conj_implies(d: list[tuple], e: list[tuple]) -> bool:
    """Does the conjunction `d` imply every atom of `e`?"""
    opaque = {a[1] for a in d if a[0] == "opaque"}
    for atom in e:
        if atom[0] == "opaque":
            if atom[1] not in opaque:
                return False
            continue
        _, col, op, value = atom
        bounds = [(o, v) for kind, c, *rest in d if kind == "cmp" and c == col for o, v in [rest]]
        if not any(_atom_implies(o, v, op, value) for o, v in bounds) and \
                not _interval_implies(bounds, op, value):
            return False
    return True


def _atom_implies(op1: str, v1, op2: str, v2) -> bool:
    """`col op1 v1` implies `col op2 v2`."""
    try:
        a, b = _comparable(v1, v2)
        if op1 == "=":
            return {"=": a == b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op2]
        if op2 == "=":
            return False
        if op1 in ("<", "<=") and op2 in ("<", "<="):
            return a < b or (a == b and (op2 == "<=" or op1 == "<"))
        if op1 in (">", ">=") and op2 in (">", ">="):
            return a > b or (a == b and (op2 == ">=" or op1 == ">"))
    except TypeError:
        return False
    return False


def _interval_implies(bounds: list[tuple[str, object]], op: str, value) -> bool:
    """A lower and an upper bound together that pin `col` to one value implying `op value`."""
    lows = [v for o, v in bounds if o == ">="]
    highs = [v for o, v in bounds if o == "<="]
    for low in lows:
        for high in highs:
            try:
                a, b = _comparable(low, high)
            except TypeError:
                continue
            if a == b and _atom_implies("=", low, op, value):
                return True
    return False


def _comparable(a, b):
    """Values of one kind: dates become datetimes, ISO strings meet dates and times."""
    if isinstance(a, str) and isinstance(b, (date, datetime)):
        a = _parse_time(a)
    if isinstance(b, str) and isinstance(a, (date, datetime)):
        b = _parse_time(b)
    if isinstance(a, date) and not isinstance(a, datetime):
        a = datetime(a.year, a.month, a.day)
    if isinstance(b, date) and not isinstance(b, datetime):
        b = datetime(b.year, b.month, b.day)
    if isinstance(a, bool) or isinstance(b, bool) or type(a) is not type(b) and not (
            isinstance(a, (int, float)) and isinstance(b, (int, float))):
        raise TypeError("incomparable")
    return a, b


def _parse_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip().replace("T", " "))
    except ValueError:
        raise TypeError("not a time") from None


# ---- constants, as Python values ----------------------------------------------------------------

_UNITS = {"day": 1, "days": 1, "d": 1, "week": 7, "weeks": 7, "hour": 1 / 24, "hours": 1 / 24,
          "minute": 1 / 1440, "minutes": 1 / 1440, "second": 1 / 86400, "seconds": 1 / 86400}


def _value(node: exp.Expression):
    """A constant side of a comparison as a Python value, or None when it is not one."""
    from datetime import timedelta

    if isinstance(node, exp.Paren):
        return _value(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return float(node.this) if "." in node.this or "e" in node.this.lower() else int(node.this)
    if isinstance(node, exp.Neg):
        inner = _value(node.this)
        return -inner if isinstance(inner, (int, float)) else None
    if isinstance(node, exp.Mul):
        a, b = _value(node.this), _value(node.expression)
        return a * b if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal) and node.this.is_string:
        text = node.this.this
        if node.to.is_type(exp.DataType.Type.DATE):
            try:
                return date.fromisoformat(text.strip()[:10])
            except ValueError:
                return None
        if node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
            try:
                return _parse_time(text)
            except TypeError:
                return None
        return text
    if isinstance(node, (exp.Add, exp.Sub)):
        base, delta = _value(node.this), _days(node.expression)
        if isinstance(base, (date, datetime)) and delta is not None:
            step = timedelta(days=delta)
            return base + step if isinstance(node, exp.Add) else base - step
        other = _value(node.expression)
        if isinstance(base, (int, float)) and isinstance(other, (int, float)):
            return base + other if isinstance(node, exp.Add) else base - other
        return None
    if isinstance(node, (exp.DateAdd, exp.DateSub, exp.TsOrDsAdd, exp.DatetimeAdd, exp.TimestampAdd)):
        base, amount = _value(node.this), _value(node.expression)
        unit = (node.unit.name if node.unit else "day").lower()
        if isinstance(base, (date, datetime)) and isinstance(amount, (int, float)) and unit in _UNITS:
            step = timedelta(days=amount * _UNITS[unit])
            return base - step if isinstance(node, exp.DateSub) else base + step
    return None


def _days(node: exp.Expression) -> float | None:
    """An interval (or Spark's plain number of days added to a date) in days."""
    if isinstance(node, exp.Interval):
        amount, unit = node.this, node.unit
        text = amount.this if isinstance(amount, exp.Literal) else None
        if text is None:
            return None
        parts = str(text).split()
        if unit is None and len(parts) == 2:
            parts, unit_name = parts[:1], parts[1]
        else:
            unit_name = unit.name if unit is not None else "day"
        try:
            n = float(parts[0])
        except (ValueError, IndexError):
            return None
        factor = _UNITS.get(unit_name.lower())
        return n * factor if factor is not None else None
    value = _value(node)
    return float(value) if isinstance(value, (int, float)) else None


def folded(expr: exp.Expression) -> exp.Expression:
    """The predicate with every constant side of a comparison computed (`CURRENT_DATE - 30`,
    already evaluated by `at_time`, becomes a date literal): engines other than Spark then
    read it without Spark's date arithmetic."""
    def fold(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Column, exp.Literal)) or any(isinstance(n, exp.Column) for n in node.walk()):
            return node
        value = _value(node)
        if isinstance(value, datetime):
            return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.Type.TIMESTAMP)
        if isinstance(value, date):
            return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
        return node

    return expr.copy().transform(fold)
