"""The change-query compiler: linear blocks by the delta rule, keyed blocks by recomputing
their affected keys (see the package docstring). What it refuses is refusals.py; a keyed
block's affected keys, affected_keys.py; the block restricted to them, restriction.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql.incremental_rewrite import hub as hubs
from dtcli.sql.incremental_rewrite import own_rows, own_rows_window, shapes
from dtcli.sql.incremental_rewrite.affected_keys import affected_keys
from dtcli.sql.incremental_rewrite.ctes import inline_ctes
from dtcli.sql.incremental_rewrite.pushdown import Narrow, key_set_pushed, pushed_keys
from dtcli.sql.incremental_rewrite.refusals import check_block, check_tables, no_limit
from dtcli.sql.incremental_rewrite.relations import (
    BOTH,
    KEY_PREFIX,
    MINUS,
    NEW,
    OLD,
    PLUS,
    PRIOR,
    WEIGHTED,
    Bindings,
    Keep,
    KeySet,
    Materialize,
    Unsupported,
    block_items,
    is_table_ref,
    parse,
    scope_nodes,
    set_block_item,
    union_all,
)
from dtcli.sql.incremental_rewrite.restriction import restricted
from dtcli.sql.incremental_rewrite.single_row import SingleRows, moves_every_row


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
                 narrow: Narrow | None = None, keep: Keep | None = None,
                 size: Callable[[str], int | None] | None = None, one_row: set[str] | None = None):
        self.b = bindings
        # inputs of one row whose moved value a keyed DT recomputes every key for (single_row.py)
        self.one_row = {name.lower() for name in one_row or ()}
        self.materialize = materialize or self._dry_keys
        self.narrow = narrow
        # a block's hub rows kept once for its terms (hub.py): `keep` computes a query's rows
        # and names the view holding them, `size` gives an input's bytes when it is large
        # enough to be a hub (else None); without both, no hub
        self.keep, self.size = keep, size
        self._hubs: dict[int, hubs.Hub | None] = {}
        self.key_sets: dict[int, KeySet] = {}   # affected keys of each block, by id (affected_keys.py)
        self._dry = 0
        self.single_rows = SingleRows(self)

    def _dry_keys(self, query: exp.Query) -> KeySet:
        query.sql(dialect="spark")   # the query must at least render
        self._dry += 1
        return KeySet(f"{KEY_PREFIX}dry{self._dry}")

    # -- entry ----------------------------------------------------------------------------

    def compile(self, sql: str | exp.Query) -> tuple[exp.Query | None, exp.Query | None]:
        query = unordered(inline_ctes(parse(sql)))
        check_tables(query, self.b)
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
        check_tables(query, self.b)
        self.root = query
        sel = query
        while isinstance(sel, exp.Subquery):
            no_limit(sel)
            sel = sel.this
        if not isinstance(sel, exp.Select):
            return None
        no_limit(sel)
        check_block(self, sel)
        changed = [k for k, item in enumerate(block_items(sel)) if self.changed(item)]
        shape = shapes.shape(sel)
        if not changed or shape is None:
            return None
        if moves_every_row(query, self.one_row, self.b.changed):
            return Keyed(self.version(sel, NEW), [], KeySet(f"{KEY_PREFIX}all", rows=[()]))
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
        keys = affected_keys(self, sel, shape, changed)
        return Keyed(restricted(self, sel, shape, keys, NEW), keys.pick(positions), keys)

    def own_rows(self, sql: str | exp.Query) -> own_rows.AggregateUpkeep | own_rows_window.WindowUpkeep | None:
        """How the DT is maintained from its own rows (see own_rows.py), or None."""
        query = unordered(inline_ctes(parse(sql)))
        check_tables(query, self.b)
        self.root = query
        return own_rows.aggregate_upkeep(self, query) or own_rows_window.window_upkeep(self, query)

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
            no_limit(node)
            return self.delta(node.this, sign)
        if isinstance(node, exp.Union):
            no_limit(node)
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
            no_limit(node)
            return self.select_delta(node, sign)
        raise Unsupported(f"{node.key.upper()} cannot be refreshed incrementally")

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
            # BOTH too goes through delta(): its terms read each changed input's plus and minus
            # rows in one view, so a join of n changed inputs is n terms, not 2n (the same
            # multiset: the other items are at the same versions in a term's plus and minus)
            body = self.delta(item.this, how)
            if body is None:
                body = exp.select("*").from_(exp.Subquery(
                    this=self.version(item.this, NEW),
                    alias=exp.TableAlias(this=exp.to_identifier("__dt_empty")))).where(exp.false())
            alias = item.args.get("alias")
            return exp.Subquery(this=body, alias=alias.copy() if alias is not None else None)
        raise Unsupported(f"FROM item {item.sql(dialect='spark')} cannot be refreshed "
                          "incrementally")

    def term(self, sel: exp.Select, index: int, how: str, *, items_upto: int | None = None,
             keys_only: bool = False) -> exp.Select:
        """The block with item `index` replaced by its change `how`, earlier items new, later
        items old (in the FROM's order, or the hub's, whose kept rows stand for it: hub.py);
        with `items_upto`, only the first items (and their joins) are kept.
        `keys_only`: the term's rows are wanted for their keys only, in a block of inner joins
        (more rows only cost a recompute that finds nothing): a later changed input table is
        read as PRIOR rows, a superset of its old rows read at the new version, so the term
        shares that version's scans and rebuilds no old version's state."""
        out = sel.copy()
        # terms are unioned into a multiset, which an ORDER BY (no LIMIT reaches here) does not
        # change, and a branch of a UNION ALL cannot carry one
        out.set("order", None)
        items = block_items(sel)
        hub = self.hub(sel) if items_upto is None and not keys_only and how in (
            PLUS, MINUS, BOTH, WEIGHTED) else None
        rank = hub.rank if hub is not None else {k: k for k in range(len(items))}
        for k, item in enumerate(items):
            if items_upto is not None and k > items_upto:
                break
            if rank[k] < rank[index]:
                rel = self.new_or_kept(hub, item, k, {index})
            elif k == index:
                rel = self.item_relation(item, how)
            elif keys_only and isinstance(item, exp.Table) and is_table_ref(item) and self.changed(item):
                rel = self.item_relation(item, PRIOR)
            else:
                rel = self.item_relation(item, OLD)
            set_block_item(out, k, rel)
        if items_upto is not None:
            out.set("joins", (out.args.get("joins") or [])[:items_upto] or None)
            out.set("laterals", None)
        elif how in (PLUS, MINUS, BOTH, WEIGHTED) and self.narrow is not None:
            for cond in pushed_keys(sel, index, self.narrow) + self.keys_pushed(sel, index):
                out.where(cond, copy=False)
            self.narrow_to_kept(out, sel, hub, {index})
        return out

    def keys_pushed(self, sel: exp.Select, index: int) -> list[exp.Expression]:
        """For a derived table read as its change, when that change is its rows of a literal
        key set (a keyed block recomputed for its affected keys): the columns the block equates
        with the derived table's key columns, restricted to those keys (pushdown.py)."""
        item = block_items(sel)[index]
        inner = item.this if isinstance(item, exp.Subquery) else None
        keys = self.key_sets.get(id(inner)) if isinstance(inner, exp.Select) else None
        if keys is None or keys.rows is None:
            return []
        shape = shapes.shape(inner)
        if shape is None:
            return []
        exprs = keys.pick(shape.keys if shape.keys is not None else shape.join.key)
        outputs = {}
        for e in inner.expressions:
            outputs.setdefault(e.unalias(), e.alias_or_name)
        return key_set_pushed(sel, index, keys.view, [outputs.get(e) for e in exprs], self.narrow)

    def hub(self, sel: exp.Select) -> hubs.Hub | None:
        """The block's hub (hub.py) with its rows kept, once per block; None without one."""
        if self.keep is None or self.size is None:
            return None
        if id(sel) not in self._hubs:
            changed = {k for k, item in enumerate(block_items(sel)) if self.changed(item)}
            found = hubs.find(sel, changed, self.size, self._skips(sel))
            if found is not None:
                found.view = self.keep(found.rows(sel, lambda i: self.item_relation(i, NEW),
                                                  lambda i: self.item_relation(i, BOTH)))
            self._hubs[id(sel)] = found
        return self._hubs[id(sel)]

    def _skips(self, sel: exp.Select):
        """Whether the change of FROM item k pushed into item h's scan skips files of it (the
        engine's narrowing, pushdown.py), by the equalities `links` between them."""
        items = block_items(sel)

        def skips(h: int, k: int, links) -> bool:
            if self.narrow is None:
                return False
            for hub_col, own_col in links:
                restrict = self.narrow(items[k].name.lower(), own_col.name, items[h].name.lower())
                if restrict is not None and restrict(hub_col.copy()) is not None:
                    return True
            return False
        return skips

    def new_or_kept(self, hub: hubs.Hub | None, item: exp.Expression, k: int,
                    changes: set[int]) -> exp.Expression:
        """Item `k` at its new version: the hub's kept rows when they serve a term reading the
        items `changes` as their change (hub.py)."""
        if hub is not None and k == hub.index and hub.serves(changes):
            return self._view_table(item, hub.view)
        return self.item_relation(item, NEW)

    def narrow_to_kept(self, out: exp.Select, sel: exp.Select, hub: hubs.Hub | None,
                       changes: set[int]) -> None:
        """In `out`, a term of `sel` reading the items `changes` as their change: when it reads
        the hub's kept rows, the items joined to the hub restricted to their join values
        (pushdown.py), by which Delta skips files."""
        if hub is not None and self.narrow is not None and hub.serves(changes):
            for cond in pushed_keys(sel, hub.index, self.narrow, name=hub.view):
                out.where(cond, copy=False)

    # -- blocks -----------------------------------------------------------------------------

    def select_delta(self, sel: exp.Select, sign: str) -> exp.Query | None:
        items = block_items(sel)
        check_block(self, sel)
        changed = [k for k, item in enumerate(items) if self.changed(item)]
        shape = shapes.shape(sel)
        if not changed:
            return None
        if shape is None:
            return union_all([self.term(sel, k, sign) for k in changed])
        keys = affected_keys(self, sel, shape, changed)
        which = {PLUS: NEW, MINUS: OLD}
        if sign == BOTH:
            parts = [restricted(self, sel, shape, keys, NEW), restricted(self, sel, shape, keys, OLD)]
            return union_all(parts)
        return restricted(self, sel, shape, keys, which[sign])

@dataclass
class Keyed:
    query: exp.Select           # the block at the new version, for the affected keys only
    positions: list[int]        # the output column of each key
    keys: KeySet
