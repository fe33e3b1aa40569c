"""The vocabulary of change queries: versions and signs, bound views, key sets, and the small
sqlglot helpers every rule uses to take a SELECT block apart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from dtcli.sql import functions as fn

NEW, OLD = "new", "old"
PLUS, MINUS, BOTH = "plus", "minus", "both"
# the change as consolidated rows with their weight column (+n gained, -n lost): for blocks
# whose change is summed (own_rows.py), one term per changed input instead of two
WEIGHTED = "weighted"
# an input's old version as weighted rows: its new rows (weight 1) and its change negated, since
# old = new - change; read at the new version only, it shares that version's scans (and needs no
# rebuild of the old version's state from the log)
PRIOR = "prior"
KEY_PREFIX = "__dt_k"


def key_column(n: int) -> str:
    return f"__dt_c{n}"


class Unsupported(Exception):
    """The query has a construct this module cannot incrementalize (refresh FULL instead);
    `node`, when one construct is at fault, is it (explain marks that construct's row)."""

    def __init__(self, message: str, node: exp.Expression | None = None):
        super().__init__(message)
        self.node = node


@dataclass
class KeySet:
    """A materialised set of affected keys: a view with columns c0..cn-1, and, when it is
    small, literal lists per column that are added as prunable prefilters."""

    view: str
    literals: list[list[exp.Expression] | None] | None = None
    rows: list[tuple] | None = None     # the key tuples (Python values), when small
    # per key column, a function giving the prunable predicate "expression among this column's
    # keys" (used instead of `literals` when given)
    filters: list[Callable[[exp.Expression], exp.Expression | None] | None] | None = None
    # the positions among the block's key expressions that c0..cn-1 hold, when a subset names
    # the groups (reached_keys.py); None: all of them, in order
    of: tuple[int, ...] | None = None
    types: list | None = None           # the columns' Spark types, as the engine read them

    def pick(self, keys: list) -> list:
        """Of the block's key expressions (or their output positions), those this set holds."""
        return list(keys) if self.of is None else [keys[p] for p in self.of]


# materialize(query selecting c0..cn-1) -> KeySet
Materialize = Callable[[exp.Query], KeySet]
# keep(query) -> the name of a view holding the query's rows (a multiset), computed once
Keep = Callable[[exp.Query], str]


@dataclass
class Bindings:
    """View names per input: its old and new version and its change as plus/minus/both."""

    views: dict[str, dict[str, str]]          # input -> {new, old, plus, minus, both} -> view
    changed: set[str] = field(default_factory=set)

    @classmethod
    def for_inputs(cls, inputs: list[str], changed: set[str]) -> Bindings:
        views = {}
        for k, name in enumerate(inputs):
            views[name] = {v: f"__dt_i{k}_{v}" for v in (NEW, OLD, PLUS, MINUS, BOTH, WEIGHTED, PRIOR)}
        return cls(views, set(changed))


def parse(sql: str | exp.Query) -> exp.Query:
    """The query to compile: a parsed (and qualified) tree as it is, or Spark SQL text; an
    outermost ORDER BY without LIMIT or OFFSET left out."""
    if isinstance(sql, exp.Query):
        return _unordered(sql.copy())
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except (sqlglot.errors.SqlglotError, RecursionError) as err:
        raise Unsupported(f"the query cannot be parsed for incremental refresh: {err}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise Unsupported("a dynamic table is defined by exactly one query")
    return _unordered(statements[0])


def _unordered(query: exp.Query) -> exp.Query:
    """An ORDER BY that limits nothing orders nothing a Delta table keeps; left in, it would end
    up in every branch of a change query (`… ORDER BY c UNION ALL …`), which Spark cannot parse."""
    if query.args.get("order") and not query.args.get("limit") and not query.args.get("offset"):
        query.set("order", None)
    return query



def block_items(sel: exp.Select) -> list[exp.Expression]:
    from_ = sel.args.get("from_") or sel.args.get("from")
    items = [from_.this] if from_ is not None else []
    return items + [j.this for j in sel.args.get("joins") or ()]


def set_block_item(sel: exp.Select, index: int, rel: exp.Expression) -> None:
    if index == 0:
        (sel.args.get("from_") or sel.args.get("from")).set("this", rel)
    else:
        sel.args["joins"][index - 1].set("this", rel)


def alias_of(item: exp.Expression) -> str | None:
    if isinstance(item, (exp.Table, exp.Subquery)):
        return item.alias or (item.name if isinstance(item, exp.Table) else None) or None
    return item.alias or None


def scope_nodes(sel: exp.Select, args=("expressions", "where", "group", "having", "qualify",
                                       "order", "windows", "joins", "laterals")):
    """Expressions of one block; FROM/JOIN items (nested queries) are not entered."""
    for arg in args:
        value = sel.args.get(arg)
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, exp.Join):
                for part in (v.args.get("on"), *(v.args.get("using") or ())):
                    if isinstance(part, exp.Expression):
                        yield from part.walk()
            elif isinstance(v, exp.Expression):
                yield from v.walk()


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The terms of an AND, through parentheses: `(a AND (b AND c))` is a, b, c."""
    if node is None:
        return []
    node = node.unnest()
    if isinstance(node, exp.And):
        return [c for part in (node.this, node.expression) for c in conjuncts(part)]
    return [node]


def is_generator(node: exp.Expression) -> bool:
    if isinstance(node, exp.UDTF):
        return True
    return isinstance(node, exp.Anonymous) and node.name.lower() in fn.GENERATORS


def null_safe_all(pairs: list[tuple[exp.Expression, exp.Expression]]) -> exp.Expression:
    conds = [exp.NullSafeEQ(this=a, expression=b) for a, b in pairs]
    out = conds[0]
    for c in conds[1:]:
        out = exp.And(this=out, expression=c)
    return out


def and_(a: exp.Expression | None, b: exp.Expression) -> exp.Expression:
    if a is None:
        return b
    return exp.And(this=exp.Paren(this=a), expression=exp.Paren(this=b))


def union_all(parts: list[exp.Query]) -> exp.Query | None:
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = exp.Union(this=out, expression=p, distinct=False)
    return out


def is_table_ref(table: exp.Table) -> bool:
    return bool(table.name) and not isinstance(table.this, exp.Func)
