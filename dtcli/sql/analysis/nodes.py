"""Small questions about sqlglot nodes the analyzer asks: where a node starts, whether it is
constant, what a join's keys and a block's outputs are."""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql import functions as fn


def at_line(line: int | None) -> str:
    return f" at line {line}" if line else ""


def first_start(node: exp.Expression) -> int | None:
    starts = [n._meta["start"] for n in node.walk() if n._meta and "start" in n._meta]
    return min(starts) if starts else None


def level_nodes(node: exp.Expression):
    """Nodes of one query level in source order; nested queries are yielded, not entered."""
    yield node
    if isinstance(node, (exp.Query, exp.Subquery)):
        return
    for child in node.iter_expressions():
        yield from level_nodes(child)


def text_of(node: exp.Expression) -> str:
    return node.sql(dialect="spark", normalize_functions="lower")


def is_const(node: exp.Expression) -> bool:
    if isinstance(node, (exp.Cast, exp.TryCast, exp.Neg, exp.Paren)):
        return is_const(node.this)
    return isinstance(node, (exp.Literal, exp.Boolean))


def column_vs_const(cmp: exp.Expression) -> exp.Column | None:
    left, right = cmp.this, cmp.expression
    if isinstance(left, exp.Column) and is_const(right):
        return left
    if isinstance(right, exp.Column) and is_const(left):
        return right
    return None


def selective(cond: exp.Expression) -> str | None:
    """An equality on a literal, or a literal range, that probably keeps few rows."""
    conjuncts = list(cond.flatten()) if isinstance(cond, exp.And) else [cond.unnest()]
    lower: dict[str, exp.Expression] = {}
    upper: dict[str, exp.Expression] = {}
    for c in conjuncts:
        if isinstance(c, (exp.EQ, exp.NullSafeEQ)) and column_vs_const(c):
            return text_of(c)
        if isinstance(c, exp.Between) and isinstance(c.this, exp.Column) \
                and is_const(c.args["low"]) and is_const(c.args["high"]):
            return text_of(c)
        if isinstance(c, exp.In) and not c.args.get("query") and isinstance(c.this, exp.Column) \
                and c.expressions and all(is_const(e) for e in c.expressions):
            return text_of(c)
        col = column_vs_const(c) if isinstance(c, (exp.GT, exp.GTE, exp.LT, exp.LTE)) else None
        if col is not None:
            above = isinstance(c, (exp.GT, exp.GTE)) == (c.this is col)
            (lower if above else upper)[text_of(col)] = c
            if text_of(col) in lower and text_of(col) in upper:
                return f"{text_of(lower[text_of(col)])} AND {text_of(upper[text_of(col)])}"
    return None


def join_keys(join: exp.Join) -> list[str]:
    if join.args.get("using"):
        return [text_of(i) for i in join.args["using"]]
    keys: list[str] = []
    on = join.args.get("on")
    for eq in (on.find_all(exp.EQ, exp.NullSafeEQ) if on else ()):
        if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Column):
            for col in (eq.this, eq.expression):
                if col.name not in keys:
                    keys.append(col.name)
    return keys


def where_keys(join: exp.Join, rel: exp.Expression) -> list[str]:
    """The columns a comma join (`FROM a, b WHERE a.k = b.k`) is joined on in its SELECT's WHERE:
    those of each top-level equality between a column of `rel` (qualified by its name) and one
    of another item. Without the tables' columns, an equality of two unqualified columns cannot
    be placed: it is taken as `rel`'s when the query never qualifies a column by `rel`'s name
    (as TPC-H and TPC-DS write their joins), so that an item the query always qualifies is not
    given another item's keys.

    >>> from sqlglot import parse_one
    >>> q = parse_one("SELECT 1 FROM a, b, c AS z WHERE a.k = b.k AND z.v > 1 AND x = y")
    >>> [where_keys(j, j.this) for j in q.args["joins"]]
    [['k'], []]
    >>> q = parse_one("SELECT 1 FROM a, b WHERE x = y")
    >>> where_keys(q.args["joins"][0], q.args["joins"][0].this)
    ['x', 'y']
    """
    select, name = join.parent, (rel.alias_or_name or "").lower()
    where = select.args.get("where") if isinstance(select, exp.Select) else None
    if where is None:
        return []
    qualified = any(c.table.lower() == name for c in select.find_all(exp.Column))
    keys: list[str] = []
    for eq in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        if not (isinstance(eq, (exp.EQ, exp.NullSafeEQ)) and isinstance(eq.this, exp.Column)
                and isinstance(eq.expression, exp.Column)):
            continue
        tables = {eq.this.table.lower(), eq.expression.table.lower()}
        if (tables == {""} and not qualified) or (name in tables and len(tables) == 2 and "" not in tables):
            for col in (eq.this, eq.expression):
                if col.name not in keys:
                    keys.append(col.name)
    return keys


def named_outputs(select: exp.Select) -> list[tuple[str, exp.Expression]]:
    return [(e.alias_or_name.lower(), e.unalias()) for e in select.expressions]


def has_star(select: exp.Select) -> bool:
    return any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
               for e in select.expressions)


def group_keys(group: exp.Group, sel: exp.Select) -> list[exp.Expression]:
    """Every grouping expression, with ROLLUP / CUBE / GROUPING SETS flattened."""
    if group.args.get("all"):
        return [e for _, e in named_outputs(sel) if not any(fn.is_aggregate(n) for n in level_nodes(e))]
    keys: list[exp.Expression] = []

    def collect(e: exp.Expression) -> None:
        if isinstance(e, (exp.GroupingSets, exp.Rollup, exp.Cube, exp.Tuple)):
            for inner in e.expressions:
                collect(inner)
        elif isinstance(e, exp.Paren):
            collect(e.this)
        elif e not in keys:
            keys.append(e)

    for e in group.expressions:
        collect(e)
    for arg in ("grouping_sets", "rollup", "cube"):
        for e in group.args.get(arg) or ():
            collect(e)
    return keys
