"""The grouping sets of a GROUP BY with ROLLUP / CUBE / GROUPING SETS, expanded as Spark does.

grouping_sets.py writes one GROUP BY per set; this is how the sets are found: `ROLLUP(a, b)` is
(a, b), (a), (); `CUBE(a, b)` every subset, in Spark's order; `GROUPING SETS (...)` as listed;
several items in one GROUP BY multiply; a parenthesised list inside ROLLUP / CUBE is one element;
an ordinal names an output.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql import functions as fn


class Refused(Exception):
    """The block is left as written (the analyzer then refreshes it FULL)."""


def expand(group: exp.Group, outputs: list[exp.Expression]) -> list[list[exp.Expression]]:
    """The grouping sets of a GROUP BY, in Spark's order, each a list of expressions.

    >>> import sqlglot
    >>> def sets(sql):
    ...     sel = sqlglot.parse_one(sql, read="spark")
    ...     return [[e.sql() for e in s] for s in expand(sel.args["group"], sel.expressions)]
    >>> sets("SELECT a FROM t GROUP BY a, ROLLUP(b, c)")
    [['a', 'b', 'c'], ['a', 'b'], ['a']]
    >>> sets("SELECT a FROM t GROUP BY CUBE(a, b)")
    [['a', 'b'], ['a'], ['b'], []]
    >>> sets("SELECT a FROM t GROUP BY GROUPING SETS ((a, b), a, (), ROLLUP(b))")
    [['a', 'b'], ['a'], [], ['b'], []]
    >>> sets("SELECT a, b FROM t GROUP BY a, b WITH ROLLUP")
    [['a', 'b'], ['a'], []]
    >>> sets("SELECT a, b FROM t GROUP BY ROLLUP((a, b), 2)")
    [['a', 'b'], ['a', 'b'], []]
    """
    factors: list[list[list[exp.Expression]]] = []
    plain: list[exp.Expression] = []
    for item in group.expressions:
        if isinstance(item, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            factors.append(_item_sets(item, outputs))
        else:
            key = _key(item, outputs)
            plain.append(key)
            factors.append([[key]])
    with_ = group.args.get("rollup") or group.args.get("cube")
    if with_ and len(plain) != len(group.expressions) or group.args.get("grouping_sets"):
        raise Refused
    if group.args.get("rollup"):          # GROUP BY a, b WITH ROLLUP
        factors = [_rollup([[k] for k in plain])]
    elif group.args.get("cube"):
        factors = [_cube([[k] for k in plain])]
    out: list[list[exp.Expression]] = [[]]
    for factor in factors:
        out = [a + b for a in out for b in factor]
    return [_distinct(s) for s in out]


def _item_sets(item: exp.Expression, outputs) -> list[list[exp.Expression]]:
    if isinstance(item, exp.GroupingSets):
        out = []
        for e in item.expressions:
            if isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                out += _item_sets(e, outputs)
            else:
                out.append(_element(e, outputs))
        return out
    elements = [_element(e, outputs) for e in item.expressions]
    return _rollup(elements) if isinstance(item, exp.Rollup) else _cube(elements)


def _element(e: exp.Expression, outputs) -> list[exp.Expression]:
    """A set's (or a ROLLUP / CUBE element's) expressions: `(a, b)` is two, `()` none."""
    if isinstance(e, exp.Tuple):
        return [_key(x, outputs) for x in e.expressions]
    if isinstance(e, exp.Paren):
        return _element(e.this, outputs)
    return [_key(e, outputs)]


def _key(e: exp.Expression, outputs) -> exp.Expression:
    if isinstance(e, exp.Literal) and e.is_int:       # GROUP BY ROLLUP(1): an output's position
        n = int(e.name)
        if not 0 < n <= len(outputs):
            raise Refused
        e = outputs[n - 1]
    if any(fn.is_aggregate(n) for n in e.walk()):
        raise Refused
    return e


def _rollup(elements: list[list[exp.Expression]]) -> list[list[exp.Expression]]:
    return [[e for part in elements[:n] for e in part] for n in range(len(elements), -1, -1)]


def _cube(elements: list[list[exp.Expression]]) -> list[list[exp.Expression]]:
    """Every subset, in Spark's order (bit i of the counter set: element i left out)."""
    n = len(elements)
    return [[e for i, part in enumerate(elements) if not mask >> (n - 1 - i) & 1 for e in part]
            for mask in range(2 ** n)]


def _distinct(exprs: list[exp.Expression]) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    for e in exprs:
        if e not in out:
            out.append(e)
    return out
