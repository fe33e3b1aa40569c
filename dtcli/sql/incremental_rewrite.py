"""Turning a DT's query into queries for its changes (pure sqlglot; Spark only runs the output).

A change is a pair of multisets: rows that appear (plus) and rows that disappear (minus), so
the change of any relation is computed by two ordinary queries over the same columns as the
relation itself and no weight column ever has to travel through the user's SQL.

* A block of FROM items, inner/cross joins, WHERE, projections and LATERAL VIEW generators is
  linear in each FROM item, so its change is the sum over changed items i of the block with
  items before i at their new version, item i replaced by its change and items after i at their
  old version (the delta rule; self-joins work because every occurrence is replaced on its own).
* UNION ALL adds its branches' changes. CTEs are inlined first so that every reference counts
  as an occurrence of its own.
* A block whose rows are not independent of each other (GROUP BY, DISTINCT, windows with
  PARTITION BY, one outer join, a scalar aggregate) is recomputed for the affected keys only:
  the keys of its input's changes are materialised (a callback), the block is evaluated at the
  new version restricted to them (plus) and at the old version restricted to them (minus).
  Those are ordinary relations again, so such blocks nest anywhere.

Anything not recognised raises `Unsupported`: a FULL refresh is slower but always right.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import sqlglot
from sqlglot import exp

from dtcli.sql import functions as fn

NEW, OLD = "new", "old"
PLUS, MINUS, BOTH = "plus", "minus", "both"
KEY_PREFIX = "__dt_k"


def key_column(n: int) -> str:
    return f"__dt_c{n}"


class Unsupported(Exception):
    """The query has a construct this module cannot incrementalize (refresh FULL instead)."""


@dataclass
class KeySet:
    """A materialised set of affected keys: a view with columns c0..cn-1, and, when it is
    small, literal lists per column that are added as prunable prefilters."""

    view: str
    literals: list[list[exp.Expression] | None] | None = None
    rows: list[tuple[exp.Expression, ...]] | None = None     # the key tuples, when small


# materialize(query selecting c0..cn-1) -> KeySet
Materialize = Callable[[exp.Query], KeySet]


@dataclass
class Bindings:
    """View names per input: its old and new version and its change as plus/minus/both."""

    views: dict[str, dict[str, str]]          # input -> {new, old, plus, minus, both} -> view
    changed: set[str] = field(default_factory=set)

    @classmethod
    def for_inputs(cls, inputs: list[str], changed: set[str]) -> "Bindings":
        views = {}
        for k, name in enumerate(inputs):
            views[name] = {v: f"__dt_i{k}_{v}" for v in (NEW, OLD, PLUS, MINUS, BOTH)}
        return cls(views, set(changed))


def parse(sql: str | exp.Query) -> exp.Query:
    """The query to compile: a parsed (and qualified) tree as it is, or Spark SQL text."""
    if isinstance(sql, exp.Query):
        return sql.copy()
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except Exception as err:  # noqa: BLE001 - sqlglot raises many kinds
        raise Unsupported(f"the query cannot be parsed for incremental refresh: {err}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise Unsupported("a dynamic table is defined by exactly one query")
    return statements[0]


# ---- CTE inlining ---------------------------------------------------------------------------

def inline_ctes(query: exp.Expression) -> exp.Expression:
    """Replace every CTE reference by the CTE's body, so each reference is its own occurrence."""
    return _inline(query.copy(), {})


def _inline(node: exp.Expression, env: dict[str, tuple[exp.Expression, exp.TableAlias | None]]):
    with_ = node.args.get("with_") or node.args.get("with")
    if with_ is not None:
        if with_.args.get("recursive"):
            raise Unsupported("WITH RECURSIVE cannot be refreshed incrementally")
        env = dict(env)
        for cte in with_.expressions:
            body = _inline(cte.this.copy(), env)
            env[cte.alias_or_name.lower()] = (body, cte.args.get("alias"))
        node.set("with_" if "with_" in node.args else "with", None)
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            new = _inline_child(value, env)
            if new is not value:
                node.set(key, new)
        elif isinstance(value, list):
            node.set(key, [_inline_child(v, env) if isinstance(v, exp.Expression) else v
                           for v in value])
    return node


def _inline_child(child: exp.Expression, env):
    if isinstance(child, exp.Table) and _is_table_ref(child) and not child.db \
            and child.name.lower() in env:
        body, cte_alias = env[child.name.lower()]
        alias_name = child.alias or child.name
        columns = [c.copy() for c in (cte_alias.columns if cte_alias else [])]
        ref_alias = child.args.get("alias")
        if ref_alias is not None and ref_alias.columns:
            columns = [c.copy() for c in ref_alias.columns]
        alias = exp.TableAlias(this=exp.to_identifier(alias_name), columns=columns or None)
        return exp.Subquery(this=body.copy(), alias=alias)
    return _inline(child, env)


def _is_table_ref(table: exp.Table) -> bool:
    return bool(table.name) and not isinstance(table.this, exp.Func)


# ---- the compiler ---------------------------------------------------------------------------

def _items(sel: exp.Select) -> list[exp.Expression]:
    from_ = sel.args.get("from_") or sel.args.get("from")
    items = [from_.this] if from_ is not None else []
    return items + [j.this for j in sel.args.get("joins") or ()]


def _set_item(sel: exp.Select, index: int, rel: exp.Expression) -> None:
    if index == 0:
        (sel.args.get("from_") or sel.args.get("from")).set("this", rel)
    else:
        sel.args["joins"][index - 1].set("this", rel)


def _alias_of(item: exp.Expression) -> str | None:
    if isinstance(item, (exp.Table, exp.Subquery)):
        return item.alias or (item.name if isinstance(item, exp.Table) else None) or None
    return item.alias or None


def _windowed(node: exp.Expression) -> bool:
    child, parent = node, node.parent
    while isinstance(parent, (exp.IgnoreNulls, exp.RespectNulls)):
        child, parent = parent, parent.parent
    return isinstance(parent, exp.Window) and parent.this is child


def _scope_nodes(sel: exp.Select, args=("expressions", "where", "group", "having", "qualify",
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


def _is_generator(node: exp.Expression) -> bool:
    if isinstance(node, exp.UDTF):
        return True
    return isinstance(node, exp.Anonymous) and node.name.lower() in fn.GENERATORS


def _null_safe_all(pairs: list[tuple[exp.Expression, exp.Expression]]) -> exp.Expression:
    conds = [exp.NullSafeEQ(this=a, expression=b) for a, b in pairs]
    out = conds[0]
    for c in conds[1:]:
        out = exp.And(this=out, expression=c)
    return out


def _and(a: exp.Expression | None, b: exp.Expression) -> exp.Expression:
    if a is None:
        return b
    return exp.And(this=exp.Paren(this=a), expression=exp.Paren(this=b))


def _union_all(parts: list[exp.Query]) -> exp.Query | None:
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = exp.Union(this=out, expression=p, distinct=False)
    return out


class DeltaCompiler:
    """Compile a query into (plus, minus) queries over bound views; see the module docstring."""

    def __init__(self, bindings: Bindings, materialize: Materialize | None = None):
        self.b = bindings
        self.materialize = materialize or self._dry_keys
        self._keys: dict[int, KeySet] = {}
        self._dry = 0

    def _dry_keys(self, query: exp.Query) -> KeySet:
        query.sql(dialect="spark")   # the query must at least render
        self._dry += 1
        return KeySet(f"{KEY_PREFIX}dry{self._dry}")

    # -- entry ----------------------------------------------------------------------------

    def compile(self, sql: str | exp.Query) -> tuple[exp.Query | None, exp.Query | None]:
        query = inline_ctes(parse(sql))
        self._check_tables(query)
        self.root = query
        plus = self.delta(query, PLUS)
        minus = self.delta(query, MINUS)
        return plus, minus

    def keyed(self, sql: str | exp.Query) -> "Keyed | None":
        """When the query's outermost block is keyed by some of its own output columns (GROUP
        BY keys, window partitions, DISTINCT rows, an outer join's key, all selected as they
        are), its change is "the rows of the affected keys, recomputed": no old-version
        recompute and no row-by-row matching is needed. None otherwise."""
        query = inline_ctes(parse(sql))
        self._check_tables(query)
        self.root = query
        sel = query
        while isinstance(sel, exp.Subquery):
            self._no_limit(sel)
            sel = sel.this
        if not isinstance(sel, exp.Select):
            return None
        self._no_limit(sel)
        self._check_block(sel)
        changed = [k for k, item in enumerate(_items(sel)) if self.changed(item)]
        shape = self.shape(sel)
        if not changed or shape is None:
            return None
        exprs = shape.keys if shape.keys is not None else shape.join.key
        outputs = [e.unalias() for e in sel.expressions]
        if not exprs or any(isinstance(o, exp.Star) or (isinstance(o, exp.Column) and o.is_star)
                            for o in outputs):
            return None
        positions = []
        for e in exprs:
            found = [j for j, o in enumerate(outputs) if o == e]
            if not found:
                return None
            positions.append(found[0])
        keys = self.affected_keys(sel, shape, changed)
        return Keyed(self.restricted(sel, shape, keys, NEW), positions, keys)

    def _check_tables(self, query: exp.Expression) -> None:
        for table in query.find_all(exp.Table):
            if not _is_table_ref(table):
                continue
            if table.db or table.name.lower() not in self.b.views:
                raise Unsupported(f"the query reads {table.sql(dialect='spark')}, which is not "
                                  "one of its inputs")

    # -- versions ---------------------------------------------------------------------------

    def version(self, node: exp.Expression, which: str) -> exp.Expression:
        """A copy of `node` reading every input at its `which` version (new or old)."""
        node = node.copy()

        def swap(n: exp.Expression):
            if isinstance(n, exp.Table) and _is_table_ref(n) and not n.db:
                return self._view_table(n, self.b.views[n.name.lower()][which])
            return n
        return node.transform(swap, copy=False)

    @staticmethod
    def _view_table(table: exp.Table, view: str) -> exp.Table:
        alias = table.args.get("alias")
        alias = alias.copy() if alias is not None else exp.TableAlias(
            this=exp.to_identifier(table.name))
        if alias.this is None or not alias.name:
            alias.set("this", exp.to_identifier(table.name))
        return exp.Table(this=exp.to_identifier(view), alias=alias)

    def changed(self, node: exp.Expression) -> bool:
        return any(_is_table_ref(t) and t.name.lower() in self.b.changed
                   for t in node.find_all(exp.Table))

    # -- deltas -----------------------------------------------------------------------------

    def delta(self, node: exp.Expression, sign: str) -> exp.Query | None:
        """A query for the plus / minus / both (plus ∪ minus) change of `node`, None if empty."""
        if isinstance(node, exp.Subquery):
            self._no_limit(node)
            return self.delta(node.this, sign)
        if isinstance(node, exp.Union):
            self._no_limit(node)
            if node.args.get("distinct") is not False:
                raise Unsupported("UNION (distinct) is refreshed FULL; UNION ALL is incremental")
            left, right = self.delta(node.this, sign), self.delta(node.expression, sign)
            if left is None and right is None:
                return None
            if left is None:
                # keep the first branch's column names: an empty query shaped like it
                left = exp.select("*").from_(exp.Subquery(
                    this=self.version(node.this, NEW), alias=exp.TableAlias(
                        this=exp.to_identifier("__dt_empty")))).where(exp.false())
            return left if right is None else exp.Union(this=left, expression=right,
                                                          distinct=False)
        if isinstance(node, exp.Select):
            self._no_limit(node)
            return self.select_delta(node, sign)
        raise Unsupported(f"{node.key.upper()} cannot be refreshed incrementally")

    @staticmethod
    def _no_limit(node: exp.Expression) -> None:
        for arg in ("limit", "offset"):
            if node.args.get(arg):
                raise Unsupported(f"{arg.upper()} cannot be refreshed incrementally")

    def item_relation(self, item: exp.Expression, how: str) -> exp.Expression:
        """FROM item `item` as a relation: at version new/old, or its change plus/minus/both."""
        if how in (NEW, OLD):
            return self.version(item, how)
        if isinstance(item, exp.Table) and _is_table_ref(item):
            return self._view_table(item, self.b.views[item.name.lower()][how])
        if isinstance(item, exp.Subquery):
            if how == BOTH:
                plus, minus = self.delta(item.this, PLUS), self.delta(item.this, MINUS)
                body = _union_all([q for q in (plus, minus) if q is not None])
            else:
                body = self.delta(item.this, how)
            if body is None:
                body = exp.select("*").from_(exp.Subquery(
                    this=self.version(item.this, NEW),
                    alias=exp.TableAlias(this=exp.to_identifier("__dt_empty")))).where(exp.false())
            alias = item.args.get("alias")
            return exp.Subquery(this=body, alias=alias.copy() if alias is not None else None)
        raise Unsupported(f"FROM item {item.sql(dialect='spark')} cannot be refreshed "
                          "incrementally")

    def _check_item(self, item: exp.Expression) -> None:
        if isinstance(item, exp.Table):
            if _is_table_ref(item):
                return
            func = item.this
            if self.changed(func) or any(isinstance(n, exp.Query) for n in func.walk()):
                raise Unsupported("a table function over a subquery is refreshed FULL")
            return      # range(), explode(t.col) as a lateral item: no input of its own
        if isinstance(item, exp.Subquery):
            if item.args.get("sample") or item.args.get("pivots"):
                raise Unsupported("TABLESAMPLE / PIVOT cannot be refreshed incrementally")
            return
        if isinstance(item, exp.Values):
            return
        raise Unsupported(f"FROM item {item.key.upper()} cannot be refreshed incrementally")

    def term(self, sel: exp.Select, index: int, how: str, *, items_upto: int | None = None
             ) -> exp.Select:
        """The block with item `index` replaced by its change `how`, earlier items new, later
        items old; with `items_upto`, only the first items (and their joins) are kept."""
        out = sel.copy()
        items = _items(sel)
        for k, item in enumerate(items):
            if items_upto is not None and k > items_upto:
                break
            if k < index:
                rel = self.item_relation(item, NEW)
            elif k == index:
                rel = self.item_relation(item, how)
            else:
                rel = self.item_relation(item, OLD)
            _set_item(out, k, rel)
        if items_upto is not None:
            out.set("joins", (out.args.get("joins") or [])[:items_upto] or None)
            out.set("laterals", None)
        return out

    @staticmethod
    def strip(sel: exp.Select, exprs: list[exp.Expression], *, keep_where: bool = True
              ) -> exp.Select:
        """The rows of a block before aggregation, projected onto key expressions c0..cn."""
        for arg in ("group", "having", "qualify", "windows", "distinct", "order", "limit",
                    "sort", "cluster", "distribute"):
            sel.set(arg, None)
        if not keep_where:
            sel.set("where", None)
        sel.set("expressions", [exp.alias_(e.copy(), key_column(k)) for k, e in enumerate(exprs)])
        return sel

    # -- blocks -----------------------------------------------------------------------------

    def _check_block(self, sel: exp.Select) -> None:
        for item in _items(sel):
            self._check_item(item)
        for node in _scope_nodes(sel):
            if isinstance(node, (exp.Query, exp.Subquery)):
                raise Unsupported("a subquery outside FROM cannot be refreshed incrementally")
            if fn.is_nondeterministic(node) or fn.is_user_defined(node):
                raise Unsupported("a nondeterministic or user-defined function cannot be "
                                  "refreshed incrementally")
        for lat in sel.args.get("laterals") or ():
            if not isinstance(lat.this, exp.Func):
                raise Unsupported("a LATERAL subquery cannot be refreshed incrementally")

    def select_delta(self, sel: exp.Select, sign: str) -> exp.Query | None:
        items = _items(sel)
        self._check_block(sel)
        changed = [k for k, item in enumerate(items) if self.changed(item)]
        shape = self.shape(sel)
        if not changed:
            return None
        if shape is None:
            return _union_all([self.term(sel, k, sign) for k in changed])
        keys = self.affected_keys(sel, shape, changed)
        which = {PLUS: NEW, MINUS: OLD}
        if sign == BOTH:
            parts = [self.restricted(sel, shape, keys, NEW), self.restricted(sel, shape, keys, OLD)]
            return _union_all(parts)
        return self.restricted(sel, shape, keys, which[sign])

    def shape(self, sel: exp.Select) -> "Shape | None":
        """How a non-linear block is keyed, or None for a linear block."""
        joins = sel.args.get("joins") or []
        outer = [k for k, j in enumerate(joins) if j.side]
        for j in joins:
            kind = (j.args.get("kind") or "").upper()
            if kind in ("SEMI", "ANTI") or j.args.get("method"):
                raise Unsupported(f"{kind or j.args.get('method')} JOIN is refreshed FULL")
        if len(outer) > 1:
            raise Unsupported("more than one outer join in one SELECT is refreshed FULL; "
                              "split it into dynamic tables of one outer join each")
        join = self.outer_join(sel, outer[0]) if outer else None
        group = sel.args.get("group")
        aggs = [n for n in _scope_nodes(sel, ("expressions", "having", "order", "qualify"))
                if fn.is_aggregate(n) and not _windowed(n)]
        windows = [n for n in _scope_nodes(sel, ("expressions", "qualify", "order"))
                   if isinstance(n, exp.Window)]
        distinct = sel.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            raise Unsupported("DISTINCT ON is refreshed FULL")
        if sel.args.get("qualify") and not windows:
            raise Unsupported("QUALIFY without a window is refreshed FULL")
        keys: list[exp.Expression] | None
        if group is not None or aggs or windows or distinct is not None:
            if any(_is_generator(n) for e in sel.expressions for n in e.walk()):
                raise Unsupported("a generator in the SELECT list of an aggregation, window or "
                                  "DISTINCT is refreshed FULL")
        if group is not None or aggs:
            if distinct is not None:
                raise Unsupported("DISTINCT over an aggregation is refreshed FULL")
            gkeys = self.group_keys(sel, group) if group is not None else []
            if windows:
                if not gkeys:
                    raise Unsupported("a window over a scalar aggregate is refreshed FULL")
                parts = self.window_partitions(sel, windows)
                if not parts or not all(any(p == g for g in gkeys) for p in parts):
                    raise Unsupported("a window whose PARTITION BY is not made of the GROUP BY "
                                      "keys is refreshed FULL")
                keys = parts
            else:
                keys = gkeys
        elif windows:
            if distinct is not None:
                raise Unsupported("DISTINCT over window functions is refreshed FULL")
            keys = self.window_partitions(sel, windows)
            if not keys:
                raise Unsupported("windows without a common PARTITION BY key are refreshed FULL")
        elif distinct is not None:
            if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
                   for e in sel.expressions):
                raise Unsupported("SELECT DISTINCT * is refreshed FULL; name the columns")
            keys = [e.unalias() for e in sel.expressions]
        elif join is not None:
            keys = None     # the outer join's own key
        else:
            return None
        return Shape(join=join, keys=keys)

    def group_keys(self, sel: exp.Select, group: exp.Group) -> list[exp.Expression]:
        if group.args.get("grouping_sets") or group.args.get("rollup") or group.args.get("cube") \
                or group.args.get("totals"):
            raise Unsupported("GROUPING SETS / ROLLUP / CUBE are refreshed FULL")
        outputs = [e.unalias() for e in sel.expressions]
        if group.args.get("all"):
            return [e for e in outputs if not any(fn.is_aggregate(n) for n in e.walk())]
        keys = []
        for key in group.expressions:
            if isinstance(key, (exp.GroupingSets, exp.Rollup, exp.Cube)):
                raise Unsupported("GROUPING SETS / ROLLUP / CUBE are refreshed FULL")
            if isinstance(key, exp.Literal) and key.is_int:
                n = int(key.name)
                if not 0 < n <= len(outputs):
                    raise Unsupported(f"GROUP BY {n} does not name an output column")
                key = outputs[n - 1]
            if any(fn.is_aggregate(n) for n in key.walk()):
                raise Unsupported("an aggregate in GROUP BY cannot be refreshed incrementally")
            keys.append(key)
        return keys

    @staticmethod
    def window_partitions(sel: exp.Select, windows: list[exp.Window]) -> list[exp.Expression]:
        named = {w.name.lower(): w for w in sel.args.get("windows") or ()}
        common: list[exp.Expression] | None = None
        for win in windows:
            spec = win
            parts = spec.args.get("partition_by") or []
            alias = win.args.get("alias")
            if not parts and alias is not None and alias.name.lower() in named:
                parts = named[alias.name.lower()].args.get("partition_by") or []
            if not parts:
                raise Unsupported("a window without PARTITION BY is refreshed FULL")
            common = list(parts) if common is None else [p for p in common
                                                         if any(p == q for q in parts)]
        return [p.copy() for p in common or []]

    def outer_join(self, sel: exp.Select, index: int) -> "OuterJoin":
        joins = sel.args["joins"]
        join = joins[index]
        side = join.side.upper()
        if join.args.get("kind") and join.args["kind"].upper() == "NATURAL":
            raise Unsupported("NATURAL JOIN is refreshed FULL")
        items = _items(sel)
        left_aliases = {(_alias_of(i) or "").lower() for i in items[:index + 1]}
        right = items[index + 1]
        right_alias = (_alias_of(right) or "").lower()
        if "" in left_aliases or not right_alias:
            raise Unsupported("an outer join between FROM items without names is refreshed FULL")
        pairs: list[tuple[exp.Expression, exp.Expression]] = []
        using = join.args.get("using")
        if using:
            if index != 0:
                raise Unsupported("an outer join with USING after other joins is refreshed FULL; "
                                  "write ON with qualified columns")
            left_alias = _alias_of(items[0])
            for ident in using:
                name = ident.name
                pairs.append((exp.column(name, left_alias), exp.column(name, _alias_of(right))))
        else:
            on = join.args.get("on")
            conjuncts = list(on.flatten()) if isinstance(on, exp.And) else ([on] if on else [])
            for c in conjuncts:
                c = c.unnest()
                if not isinstance(c, (exp.EQ, exp.NullSafeEQ)) or isinstance(c, exp.NullSafeEQ):
                    continue

                def side_of(e):
                    tabs = {col.table.lower() for col in e.find_all(exp.Column)}
                    cols = list(e.find_all(exp.Column))
                    if not cols or any(not col.table for col in cols):
                        return None
                    if tabs <= left_aliases:
                        return "L"
                    if tabs == {right_alias}:
                        return "R"
                    return None
                a, b = side_of(c.this), side_of(c.expression)
                if (a, b) == ("L", "R"):
                    pairs.append((c.this.copy(), c.expression.copy()))
                elif (a, b) == ("R", "L"):
                    pairs.append((c.expression.copy(), c.this.copy()))
        if not pairs:
            raise Unsupported(f"{side} OUTER JOIN without an equality between qualified columns "
                              "of both sides is refreshed FULL")
        if side == "LEFT":
            key = [l for l, _ in pairs]
        elif side == "RIGHT":
            key = [r for _, r in pairs]
        else:
            key = [exp.Coalesce(this=l.copy(), expressions=[r.copy()]) for l, r in pairs]
        return OuterJoin(index=index, pairs=pairs, key=key)

    # -- affected keys ----------------------------------------------------------------------

    def affected_keys(self, sel: exp.Select, shape: "Shape", changed: list[int]) -> KeySet | None:
        """The keys of every row of the block's input that changed (None: scalar aggregate)."""
        memo = self._keys.get(id(sel))
        if memo is not None:
            return memo
        if shape.keys is not None and not shape.keys:
            return None
        if shape.join is None:
            parts = [self.item_keys(sel, k, shape.keys) or
                     self.strip(self.term(sel, k, BOTH), shape.keys) for k in changed]
            keys = self.materialize(_union_all(parts))
        else:
            join_keys = self.outer_join_keys(sel, shape.join, changed)
            if shape.keys is None:
                keys = join_keys
            else:
                parts = []
                for which in (NEW, OLD):
                    rows = self.version(sel, which)
                    rows.set("where", exp.Where(this=_and(
                        rows.args["where"].this if rows.args.get("where") else None,
                        self.restriction(shape.join.key, join_keys))))
                    parts.append(self.strip(rows, shape.keys))
                keys = self.materialize(_union_all(parts))
        self._keys[id(sel)] = keys
        return keys

    def item_keys(self, sel: exp.Select, index: int, exprs: list[exp.Expression]
                  ) -> exp.Select | None:
        """The keys of item `index`'s changed rows read from its change alone, when every key
        column belongs to that item: a superset of the affected keys (rows the joins would drop
        only cost a recompute that finds nothing) that needs no scan of the other items."""
        items = _items(sel)
        if len(items) < 2 or sel.args.get("laterals"):
            return None
        alias = (_alias_of(items[index]) or "").lower()
        if not alias or sum((_alias_of(i) or "").lower() == alias for i in items) != 1:
            return None

        def own(e: exp.Expression) -> bool:
            cols = list(e.find_all(exp.Column))
            return bool(cols) and all(c.table.lower() == alias for c in cols) and not any(
                isinstance(n, (exp.Query, exp.Subquery)) or fn.is_nondeterministic(n)
                or fn.is_user_defined(n) for n in e.walk())
        if not all(own(e) for e in exprs):
            return None
        out = exp.select(*[exp.alias_(e.copy(), key_column(n)) for n, e in enumerate(exprs)]) \
            .from_(self.item_relation(items[index], BOTH))
        where = sel.args.get("where")
        conjuncts = list(where.this.flatten()) if where is not None and isinstance(
            where.this, exp.And) else ([where.this] if where is not None else [])
        mine = [c.copy() for c in conjuncts if own(c)]
        if mine:
            cond = mine[0]
            for c in mine[1:]:
                cond = exp.And(this=cond, expression=c)
            out = out.where(cond)
        return out

    def outer_join_keys(self, sel: exp.Select, join: "OuterJoin", changed: list[int]) -> KeySet:
        parts: list[exp.Query] = []
        right = join.index + 1
        for k in changed:
            if k < right:       # the left side, which is linear up to the outer join
                parts.append(self.strip(self.term(sel, k, BOTH, items_upto=join.index),
                                        [l for l, _ in join.pairs], keep_where=False))
            elif k == right:
                item = _items(sel)[right]
                q = exp.select(*[exp.alias_(r.copy(), key_column(n)) for n, (_, r)
                                 in enumerate(join.pairs)]).from_(self.item_relation(item, BOTH))
                parts.append(q)
            else:               # inner joins after the outer join are linear in their items
                parts.append(self.strip(self.term(sel, k, BOTH), join.key))
        return self.materialize(_union_all(parts))

    def restriction(self, exprs: list[exp.Expression], keys: KeySet) -> exp.Expression:
        """Rows whose key expressions are null-safely among the affected keys."""
        k = exp.to_identifier("__dt_key")
        pairs = [(exp.column(key_column(n), k), e.copy()) for n, e in enumerate(exprs)]
        exists = exp.Exists(this=exp.select(exp.Literal.number(1))
                            .from_(exp.Table(this=exp.to_identifier(keys.view),
                                             alias=exp.TableAlias(this=k)))
                            .where(_null_safe_all(pairs)))
        cond: exp.Expression = exists
        for e, lits in zip(exprs, keys.literals or [None] * len(exprs)):
            if lits is None:
                continue
            values = [v for v in lits if not isinstance(v, exp.Null)]
            pre: exp.Expression | None = None
            if values:
                pre = exp.In(this=e.copy(), expressions=[v.copy() for v in values])
            if len(values) != len(lits):
                isnull = exp.Is(this=e.copy(), expression=exp.Null())
                pre = isnull if pre is None else exp.Or(this=pre, expression=isnull)
            if pre is None:
                pre = exp.false()
            cond = exp.And(this=exp.Paren(this=pre), expression=cond)
        return cond

    def restricted(self, sel: exp.Select, shape: "Shape", keys: KeySet | None, which: str
                   ) -> exp.Select:
        out = self.version(sel, which)
        if keys is None:
            return out
        exprs = shape.keys if shape.keys is not None else shape.join.key
        where = out.args.get("where")
        out.set("where", exp.Where(this=_and(where.this if where else None,
                                             self.restriction(exprs, keys))))
        return out


@dataclass
class Keyed:
    query: exp.Select           # the block at the new version, for the affected keys only
    positions: list[int]        # the output column of each key
    keys: KeySet


@dataclass
class OuterJoin:
    index: int                                           # position in the block's joins
    pairs: list[tuple[exp.Expression, exp.Expression]]   # (left expr, right expr) equalities
    key: list[exp.Expression]                            # key of each output row


@dataclass
class Shape:
    join: OuterJoin | None
    keys: list[exp.Expression] | None   # None: the outer join's key; []: the single row


def unsupported_reason(sql: str | exp.Query, inputs: list[str]) -> str | None:
    """Why the query cannot be compiled into change queries (None: it can); no Spark needed."""
    try:
        DeltaCompiler(Bindings.for_inputs(inputs, set(inputs))).compile(sql)
    except Unsupported as err:
        return str(err)
    return None
