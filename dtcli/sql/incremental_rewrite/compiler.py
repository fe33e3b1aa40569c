"""The change-query compiler: linear blocks by the delta rule, keyed blocks by recomputing
their affected keys (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite import own_rows, shapes
from dtcli.sql.incremental_rewrite.ctes import inline_ctes
from dtcli.sql.incremental_rewrite.pushdown import Narrow, pushed_keys
from dtcli.sql.incremental_rewrite.relations import (
    BOTH,
    KEY_PREFIX,
    MINUS,
    NEW,
    OLD,
    PLUS,
    WEIGHTED,
    Bindings,
    KeySet,
    Materialize,
    Unsupported,
    alias_of,
    and_,
    block_items,
    conjuncts,
    is_table_ref,
    key_column,
    null_safe_all,
    parse,
    scope_nodes,
    set_block_item,
    union_all,
)
from dtcli.sql.incremental_rewrite.shapes import OuterJoin, Shape
from dtcli.sql.incremental_rewrite.single_row import SingleRows


def unordered(query: exp.Expression) -> exp.Expression:
    """`query` without the ORDER BY (SORT / CLUSTER / DISTRIBUTE BY) of blocks that have no
    LIMIT or OFFSET: a table keeps no row order, so they change no stored row, and copied into
    the terms of a change query they would put an ORDER BY inside a UNION ALL branch, which
    Spark does not parse. Window specifications keep theirs."""
    for node in query.find_all(exp.Query):
        if not node.args.get("limit") and not node.args.get("offset"):
            for arg in ("order", "sort", "cluster", "distribute"):
                if node.args.get(arg) is not None:
                    node.set(arg, None)
    return query


class DeltaCompiler:
    """Compile a query into (plus, minus) queries over bound views; see the module docstring."""

    def __init__(self, bindings: Bindings, materialize: Materialize | None = None,
                 narrow: Narrow | None = None):
        self.b = bindings
        self.materialize = materialize or self._dry_keys
        self.narrow = narrow
        self._keys: dict[int, KeySet] = {}
        self._dry = 0
        self.single_rows = SingleRows(self)

    def _dry_keys(self, query: exp.Query) -> KeySet:
        query.sql(dialect="spark")   # the query must at least render
        self._dry += 1
        return KeySet(f"{KEY_PREFIX}dry{self._dry}")

    # -- entry ----------------------------------------------------------------------------

    def compile(self, sql: str | exp.Query) -> tuple[exp.Query | None, exp.Query | None]:
        query = unordered(inline_ctes(parse(sql)))
        self._check_tables(query)
        self.root = query
        plus = self.delta(query, PLUS)
        minus = self.delta(query, MINUS)
        return plus, minus

    def keyed(self, sql: str | exp.Query) -> Keyed | None:
        """When the query's outermost block is keyed by some of its own output columns (GROUP
        BY keys, window partitions, DISTINCT rows, an outer join's key, all selected as they
        are), its change is "the rows of the affected keys, recomputed": no old-version
        recompute and no row-by-row matching is needed. Windows without PARTITION BY make the
        block one key, recomputed whole: positions [], the one key (). None otherwise."""
        query = unordered(inline_ctes(parse(sql)))
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
        changed = [k for k, item in enumerate(block_items(sel)) if self.changed(item)]
        shape = shapes.shape(sel)
        if not changed or shape is None:
            return None
        if shape.keys == [] and any(isinstance(n, exp.Window) for n in scope_nodes(sel, ("expressions",))):
            # windows without PARTITION BY: one partition, recomputed whole at the new version
            # (a scalar aggregate's one row is netted against its old value instead)
            return Keyed(self.version(sel, NEW), [], KeySet(f"{KEY_PREFIX}all", rows=[()]))
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

    def own_rows(self, sql: str | exp.Query) -> own_rows.AggregateUpkeep | own_rows.WindowUpkeep | None:
        """How the DT is maintained from its own rows (see own_rows.py), or None."""
        query = unordered(inline_ctes(parse(sql)))
        self._check_tables(query)
        self.root = query
        return own_rows.aggregate_upkeep(self, query) or own_rows.window_upkeep(self, query)

    def _check_tables(self, query: exp.Expression) -> None:
        self._check_subqueries(query)
        for table in query.find_all(exp.Table):
            if not is_table_ref(table):
                continue
            if table.db or table.name.lower() not in self.b.views:
                raise Unsupported(f"the query reads {table.sql(dialect='spark')}, which is not "
                                  "one of its inputs")

    @staticmethod
    def _check_subqueries(query: exp.Expression) -> None:
        """A subquery expression the rules (sql/rules/subqueries.py) left as written, in any block
        of the query: refused whether or not a term would visit its block (a block recomputed
        whole, e.g. under a global aggregate, never does), as the analyzer refuses it, so that
        explain and the refresh agree. The rules turn every one they can make exact into a join."""
        for sel in query.find_all(exp.Select):
            for node in scope_nodes(sel):
                if isinstance(node, (exp.Query, exp.Subquery)):
                    raise Unsupported("a subquery outside FROM cannot be refreshed incrementally")

    # -- versions ---------------------------------------------------------------------------

    def version(self, node: exp.Expression, which: str) -> exp.Expression:
        """A copy of `node` reading every input at its `which` version (new or old)."""
        node = node.copy()

        def swap(n: exp.Expression):
            if isinstance(n, exp.Table) and is_table_ref(n) and not n.db:
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
        """Whether `node` reads a changed input; a one-row FROM item whose row the change left
        as it was counts as unchanged (single_row.py)."""
        if isinstance(node, exp.Subquery) and self.single_rows.change(node) is None:
            return False
        return self.changed_inputs(node)

    def changed_inputs(self, node: exp.Expression) -> bool:
        return any(is_table_ref(t) and t.name.lower() in self.b.changed
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
        if isinstance(item, exp.Table) and is_table_ref(item):
            return self._view_table(item, self.b.views[item.name.lower()][how])
        if isinstance(item, exp.Subquery):
            rows = self.single_rows.change(item) if how in (PLUS, MINUS, BOTH) else False
            if rows:
                return self.single_rows.relation(item, rows, how)
            if how == BOTH:
                plus, minus = self.delta(item.this, PLUS), self.delta(item.this, MINUS)
                body = union_all([q for q in (plus, minus) if q is not None])
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
            if item.args.get("sample") or item.args.get("pivots"):
                raise Unsupported("TABLESAMPLE / PIVOT cannot be refreshed incrementally")
            if is_table_ref(item):
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
        # terms are unioned into a multiset, which an ORDER BY (no LIMIT reaches here) does not
        # change, and a branch of a UNION ALL cannot carry one
        out.set("order", None)
        items = block_items(sel)
        for k, item in enumerate(items):
            if items_upto is not None and k > items_upto:
                break
            if k < index:
                rel = self.item_relation(item, NEW)
            elif k == index:
                rel = self.item_relation(item, how)
            else:
                rel = self.item_relation(item, OLD)
            set_block_item(out, k, rel)
        if items_upto is not None:
            out.set("joins", (out.args.get("joins") or [])[:items_upto] or None)
            out.set("laterals", None)
        elif how in (PLUS, MINUS, BOTH, WEIGHTED) and self.narrow is not None:
            for cond in pushed_keys(sel, index, self.narrow):
                out.where(cond, copy=False)
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
        for item in block_items(sel):
            self._check_item(item)
        for node in scope_nodes(sel):
            if isinstance(node, (exp.Query, exp.Subquery)):
                raise Unsupported("a subquery outside FROM cannot be refreshed incrementally")
            if fn.is_nondeterministic(node) or fn.is_user_defined(node):
                raise Unsupported("a nondeterministic or user-defined function cannot be "
                                  "refreshed incrementally")
        for lat in sel.args.get("laterals") or ():
            if not isinstance(lat.this, exp.Func):
                raise Unsupported("a LATERAL subquery cannot be refreshed incrementally")

    def select_delta(self, sel: exp.Select, sign: str) -> exp.Query | None:
        items = block_items(sel)
        self._check_block(sel)
        changed = [k for k, item in enumerate(items) if self.changed(item)]
        shape = shapes.shape(sel)
        if not changed:
            return None
        if shape is None:
            return union_all([self.term(sel, k, sign) for k in changed])
        keys = self.affected_keys(sel, shape, changed)
        which = {PLUS: NEW, MINUS: OLD}
        if sign == BOTH:
            parts = [self.restricted(sel, shape, keys, NEW), self.restricted(sel, shape, keys, OLD)]
            return union_all(parts)
        return self.restricted(sel, shape, keys, which[sign])

    # -- affected keys ----------------------------------------------------------------------

    def affected_keys(self, sel: exp.Select, shape: Shape, changed: list[int]) -> KeySet | None:
        """The keys of every row of the block's input that changed (None: scalar aggregate)."""
        memo = self._keys.get(id(sel))
        if memo is not None:
            return memo
        if shape.keys is not None and not shape.keys:
            return None
        if shape.join is None:
            parts = [self.item_keys(sel, k, shape.keys) or
                     self.strip(self.term(sel, k, BOTH), shape.keys) for k in changed]
            keys = self.materialize(union_all(parts))
        else:
            join_keys = self.outer_join_keys(sel, shape.join, changed)
            if shape.keys is None:
                keys = join_keys
            else:
                parts = []
                for which in (NEW, OLD):
                    rows = self.version(sel, which)
                    rows.set("where", exp.Where(this=and_(
                        rows.args["where"].this if rows.args.get("where") else None,
                        self.restriction(shape.join.key, join_keys))))
                    parts.append(self.strip(rows, shape.keys))
                keys = self.materialize(union_all(parts))
        self._keys[id(sel)] = keys
        return keys

    def item_keys(self, sel: exp.Select, index: int, exprs: list[exp.Expression]
                  ) -> exp.Select | None:
        """The keys of item `index`'s changed rows read from its change alone, when every key
        column belongs to that item: a superset of the affected keys (rows the joins would drop
        only cost a recompute that finds nothing) that needs no scan of the other items."""
        items = block_items(sel)
        if len(items) < 2 or sel.args.get("laterals"):
            return None
        alias = (alias_of(items[index]) or "").lower()
        if not alias or sum((alias_of(i) or "").lower() == alias for i in items) != 1:
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

    def outer_join_keys(self, sel: exp.Select, join: OuterJoin, changed: list[int]) -> KeySet:
        if not join.pairs:
            return self.materialize(union_all(self._theta_join_keys(sel, join, changed)))
        parts: list[exp.Query] = []
        right = join.index + 1
        for k in changed:
            if k < right:       # the left side, which is linear up to the outer join
                parts.append(self.strip(self.left_term(sel, k, join),
                                        [left for left, _ in join.pairs]))
            elif k == right:
                item = block_items(sel)[right]
                q = exp.select(*[exp.alias_(r.copy(), key_column(n)) for n, (_, r)
                                 in enumerate(join.pairs)]).from_(self.item_relation(item, BOTH))
                parts.append(q)
            else:               # inner joins after the outer join are linear in their items
                parts.append(self.strip(self.term(sel, k, BOTH), join.key))
        return self.materialize(union_all(parts))

    def _theta_join_keys(self, sel: exp.Select, join: OuterJoin, changed: list[int]) -> list[exp.Query]:
        """The preserved side's keys a change touches, for an outer join without equalities
        (shapes._theta_join): a changed preserved row's own; for a changed row of the other side,
        those of the preserved rows it satisfies the ON with (the two sides inner-joined on it,
        the preserved side new: a preserved row not there changed itself)."""
        parts: list[exp.Query] = []
        right = join.index + 1
        preserved_left = join.kind != "RIGHT"
        for k in changed:
            if k > right:       # inner joins after the outer join are linear in their items
                parts.append(self.strip(self.term(sel, k, BOTH), join.key))
            elif (k < right) == preserved_left:
                if k < right:
                    rows = self.term(sel, k, BOTH, items_upto=join.index)
                else:
                    rows = exp.select("*").from_(self.item_relation(block_items(sel)[right], BOTH))
                parts.append(self.strip(rows, join.key, keep_where=False))
            else:
                rows = self.term(sel, k, BOTH, items_upto=right)
                matched = rows.args["joins"][join.index]
                matched.set("side", None)
                matched.set("kind", None)
                parts.append(self.strip(rows, join.key, keep_where=False))
        return parts

    def left_term(self, sel: exp.Select, index: int, join: OuterJoin) -> exp.Select:
        """The change of the rows left of a keyed join that item `index`'s change makes: the
        items up to the join, with the block's WHERE conjuncts on those items alone when the
        join keeps or drops left rows as they are (LEFT, SEMI, ANTI: a left row failing them
        yields no output row at either version, so its key needs no recompute); a RIGHT or FULL
        join's unmatched right rows depend on every left row, so there WHERE is not applied."""
        out = self.term(sel, index, BOTH, items_upto=join.index)
        left = {(alias_of(i) or "").lower() for i in block_items(sel)[:join.index + 1]}
        kept: list[exp.Expression] = []
        where = sel.args.get("where")
        if where is not None and join.kind in ("LEFT", "SEMI", "ANTI"):
            kept = [c for c in conjuncts(where.this)
                    if {col.table.lower() for col in c.find_all(exp.Column)} <= left
                    and not any(isinstance(n, (exp.Query, exp.Subquery)) for n in c.walk())]
        out.set("where", exp.Where(this=_and_all(kept)) if kept else None)
        if self.narrow is not None and kept:
            prefix = sel.copy()
            prefix.set("joins", (prefix.args.get("joins") or [])[:join.index] or None)
            prefix.set("laterals", None)
            prefix.set("where", exp.Where(this=_and_all([c.copy() for c in kept])))
            for cond in pushed_keys(prefix, index, self.narrow):
                out.where(cond, copy=False)
        return out

    def restriction(self, exprs: list[exp.Expression], keys: KeySet) -> exp.Expression:
        """Rows whose key expressions are null-safely among the affected keys."""
        k = exp.to_identifier("__dt_key")
        pairs = [(exp.column(key_column(n), k), e.copy()) for n, e in enumerate(exprs)]
        cond: exp.Expression = exp.Exists(this=exp.select(exp.Literal.number(1))
                                           .from_(exp.Table(this=exp.to_identifier(keys.view),
                                                            alias=exp.TableAlias(this=k)))
                                           .where(null_safe_all(pairs)))
        for pre in self.prefilters(exprs, keys):
            cond = exp.And(this=exp.Paren(this=pre), expression=cond)
        return cond

    @staticmethod
    def prefilters(exprs: list[exp.Expression], keys: KeySet) -> list[exp.Expression]:
        """Per key expression, a prunable predicate "among this column's keys" (NULL included
        when it is one), when the key set is small enough to be written out."""
        out: list[exp.Expression] = []
        if keys.filters is not None:
            for e, make in zip(exprs, keys.filters):
                pre = make(e.copy()) if make is not None else None
                if pre is not None:
                    out.append(pre)
            return out
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
            out.append(pre if pre is not None else exp.false())
        return out

    def restricted(self, sel: exp.Select, shape: Shape, keys: KeySet | None, which: str
                   ) -> exp.Select:
        out = self.version(sel, which)
        out.set("order", None)      # as in term(): a union branch, and no LIMIT reaches here
        if keys is None:
            return out
        exprs = shape.keys if shape.keys is not None else shape.join.key
        where = out.args.get("where")
        out.set("where", exp.Where(this=and_(where.this if where else None,
                                             self.restriction(exprs, keys))))
        join = shape.join
        if join is not None and shape.keys is None and join.kind in ("LEFT", "SEMI", "ANTI"):
            # only right rows of the affected keys can match a left row of them: said in the
            # join's ON as well, so that the right side's scan is pruned by the keys too (the
            # condition holds for every pair the ON's equalities match)
            on = out.args["joins"][join.index]
            for pre in self.prefilters([right for _, right in join.pairs], keys):
                on.set("on", and_(on.args.get("on"), pre))
        return out


def _and_all(conds: list[exp.Expression]) -> exp.Expression:
    out: exp.Expression | None = None
    for c in conds:
        c = exp.Paren(this=c.copy()) if isinstance(c, (exp.Or, exp.Xor)) else c.copy()
        out = c if out is None else exp.And(this=out, expression=c)
    return out


@dataclass
class Keyed:
    query: exp.Select           # the block at the new version, for the affected keys only
    positions: list[int]        # the output column of each key
    keys: KeySet
