"""EXISTS and IN read as a value rather than as a WHERE conjunct (subqueries.py turns those into
semi and anti joins): the part of the subquery rule that replaces such a test by a column of a
joined derived table.

* An uncorrelated EXISTS, anywhere, is the one-row flag `COUNT(*) > 0`, CROSS JOINed.
* A correlated EXISTS under OR or in the SELECT list LEFT JOINs the subquery's distinct
  correlated keys (or, when its correlation is not only equalities, a lookup of the outer
  values it holds for): EXISTS is whether one matched.
* `x [NOT] IN (subquery)` there LEFT JOINs the subquery's distinct values ON x = value; NOT IN
  reads the set's emptiness and NULL flags as a WHERE NOT IN does.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.analysis.nodes import first_start
from dtcli.sql.analysis.strategies import OUTER, SINGLE_ROW_JOIN
from dtcli.sql.rules._blocks import (
    and_all,
    as_derived,
    derived,
    has_window,
    is_grouped,
    items,
    nested_queries,
    short,
    sources,
)
from dtcli.sql.rules._correlation import Correlation, grouped_by, not_plain, project
from dtcli.sql.rules._lift import leave_value
from dtcli.sql.rules._notes import Rewrite

RULE = "subqueries"     # the rule these rewrites are notes of (subqueries.py)


def exists_flag(block, node: exp.Exists) -> bool:
    alias = block.fresh.name("__dt_sq")
    query = node.this
    flag = exp.alias_(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)),
                      "__dt_exists")
    plain = isinstance(query, exp.Select) and not (
        is_grouped(query) or query.args.get("distinct") or query.args.get("limit")
        or query.args.get("offset") or query.args.get("qualify") or query.args.get("with_")
        or query.args.get("with") or any(has_window(e) for e in query.expressions))
    if plain:
        body = query.copy()
        for arg in ("order", "sort", "cluster", "distribute"):
            body.set(arg, None)
        body.set("expressions", [flag])
    else:
        body = exp.select(flag).from_(derived(query.copy(), "__dt_s"))
    join = exp.Join(this=derived(body, alias), kind="CROSS")
    block.sel.append("joins", join)
    original = node.copy()
    node.replace(exp.column("__dt_exists", alias))
    negated = isinstance(node.parent, exp.Not)
    block.notes.add(Rewrite(RULE, f"{'NOT ' if negated else ''}EXISTS subquery",
                            first_start(original), SINGLE_ROW_JOIN, (
                                "every row reads whether the subquery has a row: a change of "
                                "that answer recomputes the rows it meets",),
                            f"CROSS JOIN (one row) COUNT(*) > 0 AS {alias}.__dt_exists"), join)
    return True


def exists_mark(block, node: exp.Exists, corr: Correlation) -> bool:
    """A correlated EXISTS outside WHERE's conjuncts (under OR, in the SELECT list): a LEFT
    JOIN of the subquery's distinct correlated keys, EXISTS being whether one matched."""
    why = not_plain(corr.body, exists=True)
    pairs = corr.equalities()
    if not why and pairs is None:
        return _exists_lookup(block, node, corr)
    if why or pairs is None:
        leave_value(node, why or "a correlated EXISTS under OR or in the SELECT list is rewritten when "
                            "its correlation is made of equalities (a join to its distinct keys)")
        return False
    alias = block.fresh.name("__dt_sq")
    body, on = grouped_by(corr, pairs, alias, [])
    join = exp.Join(this=derived(body, alias), side="LEFT", on=on)
    block.sel.append("joins", join)
    original = node.copy()
    found = exp.column(body.expressions[0].alias_or_name, alias)
    node.replace(exp.Paren(this=exp.Not(this=exp.Is(this=found, expression=exp.Null()))))
    negated = isinstance(original.parent, exp.Not)
    block.notes.add(Rewrite(RULE, f"{'NOT ' if negated else ''}EXISTS subquery", first_start(original),
                            OUTER, (), f"LEFT JOIN (its distinct correlated keys) ON {short(on)}"),
                    join)
    return True


def _exists_lookup(block, node: exp.Exists, corr: Correlation) -> bool:
    """A correlated EXISTS outside WHERE's conjuncts whose correlation is not only equalities
    (TPC-H Q21's `<>` beside an equality): its answer is a function of the outer columns it
    reads, so it is looked up per distinct value of those columns: the values for which it
    holds, found by a semi join of the rows they come from with the subquery's rows, LEFT JOINed
    null-safely on them; EXISTS is whether one matched. The lookup holds each value once, so no
    row is repeated. The rows the values come from: the one FROM item they belong to when the
    block has no outer join; else the block's FROM clause as it stands (its items and joins, so
    that a row an outer join pads with NULLs has its values in the lookup too, and a condition
    such as `COALESCE(outer, 0) <> inner` is asked of them as the subquery would be)."""
    outer_cols = [c for cond in corr.correlated for c in cond.find_all(exp.Column)
                  if c.table.lower() not in corr.inner]
    tables = {c.table.lower() for c in outer_cols}
    sel = block.sel
    found_item = [i for i in items(sel) if isinstance(i, (exp.Table, exp.Subquery))
                  and (i.alias_or_name or "").lower() in tables]
    padded = any(j.side and (j.args.get("kind") or "").upper() not in ("SEMI", "ANTI")
                 for j in sel.args.get("joins") or ())
    if len(tables) == 1 and len(found_item) == 1 and not padded:
        item = found_item[0]
        rows: exp.Select = exp.select().from_(item.copy())
        name = item.alias_or_name
    else:
        rows = _from_clause(sel, tables)
        if rows is None:
            leave_value(node, "a correlated EXISTS under OR or in the SELECT list is rewritten when its "
                              "correlation is made of equalities, or when the FROM clause of its block "
                              "reads only its own items")
            return False
        name = "the FROM clause"
    columns: list[exp.Column] = []
    for c in outer_cols:
        if not any(c.name.lower() == k.name.lower() and c.table.lower() == k.table.lower() for k in columns):
            columns.append(c)
    sub_alias, look = block.fresh.name("__dt_sq"), block.fresh.name("__dt_sq")
    body, ons, _ = project(corr, sub_alias)
    if not body.expressions:
        body.set("expressions", [exp.alias_(exp.Literal.number(1), "__dt_one")])
    lookup = rows.select(*[exp.alias_(exp.column(c.name, c.table), f"__dt_k{k}") for k, c in enumerate(columns)],
                         exp.alias_(exp.true(), "__dt_m"), copy=False).distinct()
    lookup.append("joins", exp.Join(this=derived(body, sub_alias), side="LEFT", kind="SEMI",
                                    on=and_all(ons)))
    on = and_all([exp.NullSafeEQ(this=exp.column(c.name, c.table), expression=exp.column(f"__dt_k{k}", look))
                  for k, c in enumerate(columns)])
    join = exp.Join(this=derived(lookup, look), side="LEFT", on=on)
    sel.append("joins", join)
    original = node.copy()
    node.replace(exp.Paren(this=exp.Not(this=exp.Is(this=exp.column("__dt_m", look),
                                                      expression=exp.Null()))))
    negated = isinstance(original.parent, exp.Not)
    block.notes.add(Rewrite(RULE, f"{'NOT ' if negated else ''}EXISTS subquery", first_start(original),
                            OUTER, ("its answer is looked up per distinct value of the outer "
                                    "columns it reads: a change of either side recomputes the "
                                    "rows of the values it touches",),
                            f"LEFT JOIN (the values of {name} it holds for) ON {short(on)}"), join)
    return True


def _from_clause(sel: exp.Select, tables: set[str]) -> exp.Select | None:
    """`SELECT FROM <the block's FROM item and joins, copied>`: every row of the block before
    its WHERE, so every value its columns take; None when a join's condition reads a column
    of no item of the clause (a correlation of the block itself) or a named column's table is
    not among the items."""
    from_ = sel.args.get("from_") or sel.args.get("from")
    names = sources(sel)
    if from_ is None or names is None or not tables <= names:
        return None
    joins = [j.copy() for j in sel.args.get("joins") or ()]
    for j in joins:
        for c in j.find_all(exp.Column):
            if c.table and c.table.lower() not in names and c.find_ancestor(exp.Subquery) is None:
                return None
    rows = exp.select().from_(from_.this.copy())
    for j in joins:
        rows.append("joins", j)
    return rows


def in_value(block, node: exp.In, query: exp.Query, corr: Correlation) -> bool:
    """`x IN (subquery)` outside WHERE's conjuncts (under OR, in the SELECT list): a LEFT JOIN
    of the subquery's distinct values (with its correlated keys) ON x = value. Spark evaluates
    such a test as a join too (RewritePredicateSubquery's existence join), so its answer is
    never NULL: IN is whether some value matched; NOT IN (the NOT right around it) whether none
    matched null-awarely — no value equals x, x is not NULL and the set holds no NULL, or the
    set is empty — for which the set's emptiness and NULL flags are joined as for a WHERE NOT IN.
    Both are TRUE exactly where SQL's answer is TRUE."""
    x = node.this
    if isinstance(x, exp.Tuple) or len(query.selects) != 1:
        leave_value(node, "an IN subquery over several columns is rewritten only as a conjunct "
                          "of WHERE")
        return False
    if nested_queries(x):
        leave_value(node, "the value it is compared with holds a subquery")
        return False
    alias = block.fresh.name("__dt_sq")
    if corr.is_correlated:
        why = not_plain(corr.body, exists=False)
        pairs = corr.equalities()
        if why or pairs is None:
            leave_value(node, why or "a correlated IN under OR or in the SELECT list is rewritten "
                                     "when its correlation is made of equalities")
            return False
        body, on = grouped_by(corr, pairs + [(corr.body.selects[0].unalias(), x)], alias, [])
        found = exp.column(body.expressions[len(pairs)].alias_or_name, alias)
    else:
        item, values = as_derived(query, "__dt_s")
        body = exp.select(exp.alias_(values[0], "__dt_v")).from_(item).group_by(values[0].copy())
        found = exp.column("__dt_v", alias)
        on = exp.EQ(this=x.copy(), expression=found.copy())
    join = exp.Join(this=derived(body, alias), side="LEFT", on=on)
    block.sel.append("joins", join)
    matched: exp.Expression = exp.Not(this=exp.Is(this=found, expression=exp.Null()))
    created: list[exp.Expression] = [join]
    above = node.parent
    while isinstance(above, exp.Paren):
        above = above.parent
    negated = isinstance(above, exp.Not)
    if negated:
        flags = block.set_flags(corr, query)
        if flags is None:       # left with the reason (subqueries._Block.set_flags)
            block.sel.args["joins"].remove(join)
            return False
        flag_join, empty, nulls = flags
        block.sel.append("joins", flag_join)
        created.append(flag_join)
        matched = exp.or_(matched, exp.and_(
            exp.Not(this=empty), exp.paren(exp.or_(exp.Is(this=x.copy(), expression=exp.Null()),
                                                  nulls, copy=False), copy=False), copy=False), copy=False)
    original = node.copy()
    node.replace(exp.Paren(this=matched))
    block.notes.add(Rewrite(RULE, f"{'NOT ' if negated else ''}IN subquery", first_start(original),
                            OUTER, () if not negated else (
                                "NOT IN's answer also reads whether the set is empty or holds a "
                                "NULL: a change of those recomputes the rows they meet",),
                            f"LEFT JOIN (its distinct values) ON {short(on)}"), *created)
    return True
