"""Does one frozen region contain another? When a `frozen_where` predicate is edited, rows the
old one froze must stay frozen (the old predicate must imply the new one at their data
timestamps); dt shows that for comparisons of a column with constants and AND / OR / IN /
BETWEEN of those, and otherwise refuses the edit's shortcut.

Constant sides are evaluated here too (`constant_value`), dates and intervals included.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlglot import exp


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
        col, values = node.this, [constant_value(v) for v in node.expressions]
        if isinstance(col, exp.Column) and all(v is not None for v in values):
            return [[("cmp", col.name.lower(), "=", v)] for v in values]
    if isinstance(node, exp.Between) and not negate and isinstance(node.this, exp.Column):
        low, high = constant_value(node.args["low"]), constant_value(node.args["high"])
        if low is not None and high is not None:
            name = node.this.name.lower()
            return [[("cmp", name, ">=", low), ("cmp", name, "<=", high)]]
    op = _OPS.get(type(node))
    if op is not None:
        for col, other, flip in ((node.this, node.expression, False), (node.expression, node.this, True)):
            value = constant_value(other)
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


def constant_value(node: exp.Expression):
    """A constant side of a comparison as a Python value, or None when it is not one."""
    from datetime import timedelta

    if isinstance(node, exp.Paren):
        return constant_value(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return float(node.this) if "." in node.this or "e" in node.this.lower() else int(node.this)
    if isinstance(node, exp.Neg):
        inner = constant_value(node.this)
        return -inner if isinstance(inner, (int, float)) else None
    if isinstance(node, exp.Mul):
        a, b = constant_value(node.this), constant_value(node.expression)
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
        base, delta = constant_value(node.this), _days(node.expression)
        if isinstance(base, (date, datetime)) and delta is not None:
            step = timedelta(days=delta)
            return base + step if isinstance(node, exp.Add) else base - step
        other = constant_value(node.expression)
        if isinstance(base, (int, float)) and isinstance(other, (int, float)):
            return base + other if isinstance(node, exp.Add) else base - other
        return None
    if isinstance(node, (exp.DateAdd, exp.DateSub, exp.TsOrDsAdd, exp.DatetimeAdd, exp.TimestampAdd)):
        base, amount = constant_value(node.this), constant_value(node.expression)
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
    value = constant_value(node)
    return float(value) if isinstance(value, (int, float)) else None
