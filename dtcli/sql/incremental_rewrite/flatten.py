"""A block that only projects (and filters) the rows of one derived table, read as one block.

TPC-H Q7, Q8 and Q9 aggregate a derived table that joins six inputs: `SELECT … SUM(p.amount)
FROM (SELECT … FROM part, supplier, lineitem, … WHERE …) AS p GROUP BY …`. The block under the
GROUP BY reads one FROM item, a subquery, so its change is the subquery's plus rows less its
minus rows, each a delta-rule term per changed input with the inputs after it read at their old
version (Delta rebuilds each old version's state and scans it). Merged into one block of the
six inputs, its change is taken over the inputs' new versions and changes only (own_rows.py's
weighted terms), the join's hub read once (hub.py). The merge replaces each column of the
derived table by its expression, as SQL defines the derived table's rows; it is done only when
that is all the derived table is: no aggregate, window, DISTINCT, LIMIT or GROUP BY in it.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT p.n AS n, p.a * 2 AS x FROM (SELECT t.g AS n, t.v - u.w AS a "
...                       "FROM t AS t, u AS u WHERE t.k = u.k) AS p WHERE p.a > 0", read="spark")
>>> flattened(q).sql(dialect="spark")
'SELECT t.g AS n, (t.v - u.w) * 2 AS x FROM t AS t CROSS JOIN u AS u WHERE t.k = u.k AND (t.v - u.w) > 0'
>>> q = sqlglot.parse_one("SELECT p.g, p.h FROM (SELECT t.h AS g, t.g AS h FROM t AS t) AS p", read="spark")
>>> flattened(q).sql(dialect="spark")
'SELECT t.h AS g, t.g AS h FROM t AS t'
>>> q = sqlglot.parse_one("SELECT p.n AS n FROM (SELECT DISTINCT t.g AS n FROM t AS t) AS p", read="spark")
>>> flattened(q) is q
True
>>> q = sqlglot.parse_one("SELECT p.x AS a, p.x + 1 AS b FROM (SELECT explode(t.arr) AS x FROM t AS t) AS p",
...                       read="spark")
>>> flattened(q) is q
True
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.incremental_rewrite.relations import block_items, is_generator

# what makes a derived table more than its inputs' rows, projected and filtered
_SHAPING = ("group", "having", "qualify", "distinct", "limit", "offset", "windows", "laterals",
            "order", "sort", "cluster", "distribute", "with", "into")


def flattened(block: exp.Select) -> exp.Select:
    """`block` with the one derived table it reads merged into it; `block` itself when it reads
    something else or the derived table is more than projected rows (see the module docstring)."""
    items = block_items(block)
    if len(items) != 1 or not isinstance(items[0], exp.Subquery) or block.args.get("laterals"):
        return block
    if any(block.args.get(a) for a in _SHAPING):
        return block
    inner, alias = items[0].this, (items[0].alias or "").lower()
    if not isinstance(inner, exp.Select) or not alias or any(inner.args.get(a) for a in _SHAPING):
        return block
    outputs: dict[str, exp.Expression] = {}
    for e in inner.expressions:
        value = e.unalias()
        # an aggregate or a window is no row-by-row value; a generator (explode) makes rows,
        # and each copy of its expression would make them again
        if isinstance(value, exp.Star) or (isinstance(value, exp.Column) and value.is_star) or \
                any(isinstance(n, (exp.AggFunc, exp.Window)) or is_generator(n) for n in value.walk()):
            return block
        outputs.setdefault(e.alias_or_name.lower(), value)
    parts = [*block.expressions, *([block.args["where"].this] if block.args.get("where") else [])]
    for part in parts:
        for node in part.walk():
            if isinstance(node, (exp.Subquery, exp.Query)) or (isinstance(node, exp.Column) and (
                    node.table.lower() != alias or node.name.lower() not in outputs)):
                return block

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            value = outputs[node.name.lower()].copy()
            return value if isinstance(value, (exp.Column, exp.Literal)) else exp.Paren(this=value)
        return node

    out = inner.copy()
    out.set("expressions", [e.copy().transform(swap) if isinstance(e, exp.Alias) else
                            exp.alias_(e.copy().transform(swap), e.alias_or_name) for e in block.expressions])
    if block.args.get("where") is not None:
        out.where(block.args["where"].this.copy().transform(swap), copy=False)
    return out
