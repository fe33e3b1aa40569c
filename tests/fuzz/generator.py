"""Seeded random queries over the SQL dt accepts, and random change histories of their sources.

A query is composed from relations (a source, a join of two, a chain of joins with several outer
joins, a comma join mixed with an outer join, a self-join, a subquery in FROM that is itself
generated) and an outermost operator (projection with scalar expressions, CASE and casts and
scalar subqueries; WHERE with NULL-aware predicates and EXISTS / NOT EXISTS / IN / NOT IN /
scalar-subquery predicates, correlated or not, nested; GROUP BY with SUM / COUNT /
COUNT(DISTINCT) / MIN / MAX / AVG, keys not selected, ROLLUP / CUBE / GROUPING SETS; DISTINCT;
UNION ALL, UNION, EXCEPT / INTERSECT [ALL]; windows with and without PARTITION BY; a scalar
aggregate; a CTE read twice), optionally under a top-N (`ORDER BY … LIMIT n`, ties and NULLs in
the sort keys). Every column is typed (int, str, float) so expressions stay well typed. `shape`
names the operator tree, for counting distinct shapes; `features` the constructs of issue 38 a
query uses (tests/fuzz/test_fuzz.py tells which may still be refused). Same seed, same case.

The sources' keys are skewed and NULL-heavy (keys 1..4 and NULL, values with NULLs, duplicate
rows): subqueries see NULLs on both sides of IN / NOT IN, top-N sees ties and NULLs at the n-th
row, outer joins see unmatched rows on both sides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SOURCES = {"a": (("k", "int"), ("g", "str"), ("v", "int")),
           "b": (("k", "int"), ("g", "str"), ("w", "int")),
           "c": (("k", "int"), ("arr", "arr"))}
DDL = {"a": "k INT, g STRING, v INT", "b": "k INT, g STRING, w INT", "c": "k INT, arr ARRAY<INT>"}
JOINABLE = ("a", "b")       # c is read through LATERAL VIEW explode only
# constructs that stay FULL by design (issue 38 item 7: nondeterministic and user-defined
# functions, LATERAL joins, recursive CTEs), generated now and then so that the refusal count
# (by the analyzer's reason) is exercised: each must be refused, never run
REFUSED = ["SELECT t1.k AS c0, rand() AS c1 FROM a AS t1",
           "SELECT t1.k AS c0, uuid() AS c1 FROM a AS t1 WHERE t1.v > 1",
           "SELECT t1.k AS c0, my_udf(t1.v) AS c1 FROM a AS t1",
           "SELECT t1.k AS c0, s.w AS c1 FROM a AS t1, LATERAL (SELECT t2.w FROM b AS t2 WHERE t2.k = t1.k) AS s",
           "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
           "SELECT t1.k AS c0, r.n AS c1 FROM a AS t1 JOIN r ON t1.k = r.n"]
# the reasons those may be refused for (the analyzer's words), each with the class of item 7 the
# fuzzer's summary counts it under. (A subquery expression in a block with a LATERAL VIEW, which
# the generator draws in the WHERE over `c LATERAL VIEW explode(...)`, runs: sql/rules/_laterals.py
# wraps the block's FROM clause first; "LATERAL subquery" is the correlated `, LATERAL (subquery)`
# above.)
REFUSED_BY_DESIGN = {"nondeterministic function": "nondeterministic function",
                     "user-defined function": "user-defined function",
                     "LATERAL subquery": "LATERAL join", "WITH RECURSIVE": "recursive CTE"}

# Constructs of the generator (a query's `features`) whose rule has not landed on main yet: a
# case drawing one may be refused (the fuzzer's summary counts it by reason; explain's agreement
# test lets the change compiler accept what the analyzer refuses there). Everything else must
# run: tests/fuzz/test_fuzz.py fails on a refusal of a case without a pending construct unless
# it is one of REFUSED_BY_DESIGN. Take a construct off when its rule lands; issue 38's acceptance
# is this set empty. Every construct of issue 38 has landed (subqueries and several
# outer joins per SELECT in d5c0be9 … d507cfa; set operations, grouping sets and unselected
# GROUP BY keys in 745d3c1, outer-join ON forms in 4a81ed1, unnamed outputs in 48cb94a; top-N,
# LIMIT alone and windows without PARTITION BY in eb3b41e, 1d1e5d3; a correlated EXISTS
# under OR with an inequality over several FROM items or an outer join: sql/rules/_predicate_values.py).
PENDING: set[str] = set()      # (the last, "exists_inequality_under_or", landed in sq-ds)

# how often each construct is drawn (per block or per predicate; see where each is used)
P_SUBQUERY = 0.3        # a WHERE atom that is a subquery predicate
P_SCALAR_SELECT = 0.12  # a correlated scalar subquery among a projection's outputs
P_TOP_N = 0.15          # the outermost query under ORDER BY … LIMIT n
P_ORDER_ONLY = 0.03     # ORDER BY without LIMIT (no effect on what is stored)
P_GLOBAL_WINDOW = 0.35  # a window without PARTITION BY
P_GROUPING_SETS = 0.25  # ROLLUP / CUBE / GROUPING SETS instead of plain keys
P_HIDDEN_KEY = 0.15     # a GROUP BY key that is not selected
P_UNNAMED = 0.05        # an outermost output without an alias (Spark's CTAS names it)


@dataclass
class Rel:
    sql: str                              # a FROM clause (items and joins)
    cols: list[tuple[str, str]]           # (qualified column, type)
    shape: str
    cond: str | None = None               # a predicate the WHERE must hold (a comma join's)


@dataclass
class _Sel:
    sql: str
    cols: list[tuple[str, str]]
    shape: str
    features: frozenset = frozenset()
    named: bool = True                    # every output has an alias (c0..cn)
    sortable: list[str] = field(default_factory=list)   # expressions not selected a sort key may be
    setop: bool = False                   # a set operation (UNION / EXCEPT / INTERSECT)


class Gen:
    def __init__(self, rng: random.Random, max_depth: int = 2, sources=None):
        self.rng, self.max_depth, self.n = rng, max_depth, 0
        # another DT's output as the input (a DT reading a DT), or the sources
        self.sources = sources or SOURCES
        self.joinable = tuple(sources) if sources else JOINABLE
        self.features: set[str] = set()
        self.sub_depth = 0                 # subquery expressions open around what is generated
        self.inequalities = 0              # correlations with an inequality drawn so far

    def alias(self) -> str:
        self.n += 1
        return f"t{self.n}"

    def uses(self, feature: str) -> None:
        self.features.add(feature)

    # -- relations ---------------------------------------------------------------------------

    def table(self, name: str | None = None) -> Rel:
        name = name or self.rng.choice(self.joinable)
        t = self.alias()
        return Rel(f"{name} AS {t}", [(f"{t}.{c}", ty) for c, ty in self.sources[name]], name)

    def relation(self, depth: int) -> Rel:
        r = self.rng.random()
        if depth < self.max_depth and r < 0.18:
            return self.subquery(depth + 1)
        if r < 0.45:
            return self.table()
        if r < 0.5 and depth == 0 and "c" in self.sources:   # LATERAL VIEW follows every FROM item
            t, e = self.alias(), self.alias()
            return Rel(f"c AS {t} LATERAL VIEW explode({t}.arr) {e} AS x", [(f"{t}.k", "int"), (f"{e}.x", "int")],
                       "explode(c)")
        if r < 0.58:       # self-join
            name = self.joinable[0]
            return self.join(self.table(name), self.table(name), "INNER", composite=self.rng.random() < 0.3)
        if r < 0.7:        # a chain of joins, outer ones among them
            return self.chain()
        if r < 0.75:
            return self.comma_outer()
        kind = self.rng.choice(["INNER", "INNER", "LEFT", "RIGHT", "FULL OUTER"])
        left = self.table() if depth >= self.max_depth or self.rng.random() < 0.8 else self.subquery(depth + 1)
        return self.join(left, self.table(), kind, composite=self.rng.random() < 0.3)

    def join(self, left: Rel, right: Rel, kind: str, composite: bool, unqualified: bool = True) -> Rel:
        """`left` joined with `right` on columns of the same type (any of `left`'s: in a chain,
        the ON may name any source before)."""
        def of(cols, ty: str) -> list[str]:
            return [c for c, t in cols if t == ty]
        lcols = left.cols
        common = [t for t in ("int", "str") if of(lcols, t) and of(right.cols, t)]
        lc = self.rng.choice(of(lcols, common[0])) if common else None
        if common:
            on = f"{lc} = {of(right.cols, common[0])[0]}"
        else:       # no column type on both sides: compare as strings
            on = f"CAST({lcols[0][0]} AS STRING) = CAST({right.cols[0][0]} AS STRING)"
        if composite and len(common) == 2:
            on += f" AND {of(lcols, 'str')[0]} = {of(right.cols, 'str')[0]}"
        else:
            composite = False
        if kind != "INNER" and self.rng.random() < 0.25:        # ON forms users write
            if self.rng.random() < 0.5:
                on = f"({on})"
                self.uses("on_parenthesised")
            elif unqualified:
                on = self._unqualified(on, left.cols + right.cols)
        return Rel(f"{left.sql} {kind} JOIN {right.sql} ON {on}", left.cols + right.cols,
                   f"{kind.split()[0].lower()}_join{'2' if composite else ''}({left.shape},{right.shape})")

    def _unqualified(self, on: str, cols: list[tuple[str, str]]) -> str:
        """`on` with the qualifier dropped from each column whose name no other column of the
        join has (an unqualified column is what users write when it is unambiguous)."""
        names = [c.split(".")[1] for c, _ in cols]
        for c, _ in cols:
            name = c.split(".")[1]
            if names.count(name) == 1 and c in on:
                on = on.replace(c, name)
                self.uses("on_unqualified")
        return on

    def chain(self) -> Rel:
        """Three or four sources joined left to right, at least one join outer: each ON names
        the new source and one before it."""
        rel = self.table()
        outer = 0
        for _ in range(self.rng.randint(2, 3)):
            kind = self.rng.choice(["LEFT", "LEFT", "INNER", "RIGHT", "FULL OUTER"])
            outer += kind != "INNER"
            rel = self.join(rel, self.table(), kind, composite=self.rng.random() < 0.2)
        if outer == 0:       # an inner chain is the old relation: make its last join outer
            head, _, tail = rel.sql.rpartition(" INNER JOIN ")
            rel = Rel(f"{head} LEFT JOIN {tail}", rel.cols, rel.shape.replace("inner_join", "left_join", 1))
            outer = 1
        if outer > 1:
            self.uses("several_outer_joins")
        return Rel(rel.sql, rel.cols, f"chain{outer}({rel.shape})")

    def comma_outer(self) -> Rel:
        """`x, y LEFT JOIN z ON …` with the comma join's equality in WHERE (Spark binds the
        outer join tighter than the comma)."""
        x, y, z = self.table(), self.table(), self.table()
        # no unqualified column in its ON: Spark resolves one against every FROM item (a name
        # `x` has too is ambiguous there, as dt says)
        joined = self.join(y, z, self.rng.choice(["LEFT", "FULL OUTER", "RIGHT"]), composite=False,
                           unqualified=False)
        pairs = [(a, b) for a, ta in x.cols for b, tb in y.cols if ta == tb and ta in ("int", "str")]
        xk, yk = pairs[0] if pairs else (f"CAST({x.cols[0][0]} AS STRING)", f"CAST({y.cols[0][0]} AS STRING)")
        self.uses("comma_outer_join")
        return Rel(f"{x.sql}, {joined.sql}", x.cols + joined.cols, f"comma({x.shape},{joined.shape})",
                   cond=f"{xk} = {yk}")

    def subquery(self, depth: int) -> Rel:
        q = self.select(depth)
        t = self.alias()
        return Rel(f"({q.sql}) AS {t}", [(f"{t}.{n}", ty) for n, ty in q.cols], f"sub({q.shape})")

    # -- expressions -------------------------------------------------------------------------

    def pick(self, rel: Rel, ty: str | None = None) -> tuple[str, str]:
        cols = [c for c in rel.cols if ty is None or c[1] == ty]
        return self.rng.choice(cols or rel.cols)

    def scalar(self, rel: Rel) -> tuple[str, str, str]:
        """(sql, type, shape) of a scalar expression."""
        c, ty = self.pick(rel)
        r = self.rng.random()
        if ty == "float":
            options = [(c, "float", "col"), (f"COALESCE({c}, 0)", "float", "coalesce")]
        elif ty == "int":
            options = [(c, "int", "col"), (f"{c} + {self.rng.randint(1, 3)}", "int", "arith"),
                       (f"COALESCE({c}, 0)", "int", "coalesce"),
                       (f"CASE WHEN {c} > {self.rng.randint(0, 3)} THEN {c} ELSE -1 END", "int", "case"),
                       (f"CAST({c} AS STRING)", "str", "cast")]
        else:
            options = [(c, "str", "col"), (f"UPPER({c})", "str", "upper"),
                       (f"COALESCE({c}, 'n')", "str", "coalesce"),
                       (f"CASE WHEN {c} = 'x' THEN 'X' WHEN {c} IS NULL THEN 'N' ELSE {c} END", "str", "case")]
        return options[0] if r < 0.5 else self.rng.choice(options)

    def predicate(self, rel: Rel) -> str:
        """A WHERE condition: atoms, maybe two under AND / OR. Subquery predicates are drawn only
        here (never under NOT, CASE or in a SELECT list): an IN / NOT IN subquery is TRUE or FALSE
        in Spark outside a WHERE conjunct (its existence join), NULL in DuckDB, the oracle's
        recompute; under AND / OR in a WHERE a NULL and a FALSE keep the same rows, so the two
        agree (FUZZ-FINDINGS, 13:29)."""
        def atom() -> str:
            if self.rng.random() < P_SUBQUERY and self.sub_depth < 2:
                sub = self.subquery_predicate(rel)
                if sub:
                    return sub
            c, ty = self.pick(rel)
            n = self.rng.randint(0, 4)
            if ty in ("int", "float"):
                return self.rng.choice([f"{c} > {n}", f"{c} IS NULL", f"{c} IS NOT NULL",
                                        f"COALESCE({c}, 0) BETWEEN 1 AND {n + 8}", f"NOT ({c} = {n})",
                                        f"{c} IN ({n}, {n + 1})"])
            return self.rng.choice([f"{c} IN ('x', 'y')", f"{c} <> 'z'", f"{c} IS NULL",
                                    f"COALESCE({c}, 'x') = 'x'"])
        drawn = self.inequalities
        p = atom()
        if self.rng.random() < 0.3:
            op = self.rng.choice(['AND', 'OR'])
            p = f"({p} {op} {atom()})"
            if op == "OR" and self.inequalities > drawn:
                self.uses("exists_inequality_under_or")
        return p

    # -- subquery expressions ----------------------------------------------------------------

    def _inner_source(self, ty: str | None = None) -> Rel | None:
        """A source for a subquery expression (with a column of type `ty` when given)."""
        names = [n for n in self.joinable if ty is None or any(t == ty for _, t in self.sources[n])]
        return self.table(self.rng.choice(names)) if names else None

    def _correlation(self, inner: Rel, outer: Rel, equality: bool = True) -> str | None:
        """A predicate tying `inner` to a column of `outer` (an equality on a shared type; or,
        as TPC-H Q21 writes it, an inequality)."""
        pairs = [(i, o) for i, it in inner.cols for o, ot in outer.cols if it == ot and it in ("int", "str")]
        if not pairs:
            return None
        i, o = self.rng.choice(pairs)
        return f"{i} = {o}" if equality else f"{i} <> {o}"

    def _inner_where(self, inner: Rel, outer: Rel, correlated: bool, inequality: bool = False) -> str:
        """The WHERE of a subquery expression: its correlation (and, for EXISTS, sometimes an
        inequality as in TPC-H Q21), a filter, maybe a nested subquery predicate over the
        subquery's own source (`predicate` draws one while fewer than two are open)."""
        parts = []
        if correlated:
            corr = self._correlation(inner, outer)
            if corr:
                parts.append(corr)
                self.uses("correlated")
                second = self._correlation(inner, outer, equality=False) if inequality and self.rng.random() < 0.3 else None
                if second:
                    parts.append(second)
                    self.inequalities += 1
        if self.rng.random() < 0.5:
            parts.append(self.predicate(inner))
        return f" WHERE {' AND '.join(parts)}" if parts else ""

    def subquery_predicate(self, outer: Rel) -> str | None:
        """EXISTS / NOT EXISTS / IN / NOT IN / a comparison with a scalar subquery over one of
        the sources, correlated with `outer` or not; nested when its own WHERE draws one."""
        kind = self.rng.choice(["exists", "not_exists", "in", "not_in", "in", "not_in", "scalar", "scalar"])
        correlated = self.rng.random() < 0.6
        if self.sub_depth > 0:
            self.uses("nested_subquery")
        self.sub_depth += 1
        try:
            if kind in ("exists", "not_exists"):
                inner = self._inner_source()
                where = self._inner_where(inner, outer, correlated, inequality=True)
                self.uses(kind)
                return f"{'NOT ' if kind == 'not_exists' else ''}EXISTS (SELECT 1 FROM {inner.sql}{where})"
            if kind in ("in", "not_in"):
                oc, ty = self.pick(outer)
                if ty not in ("int", "str"):
                    return None
                inner = self._inner_source(ty)
                if inner is None:
                    return None
                self.uses(f"{kind}_subquery")
                ic, _ = self.pick(inner, ty)
                if ty == "int" and self.rng.random() < 0.25:      # IN a set of keys with a HAVING (Q18)
                    key = self.pick(inner, "int")[0]
                    where = self._inner_where(inner, outer, correlated)
                    body = (f"SELECT {key} FROM {inner.sql}{where} GROUP BY {key} "
                            f"HAVING COUNT(*) > {self.rng.randint(1, 2)}")
                else:
                    body = f"SELECT {ic} FROM {inner.sql}{self._inner_where(inner, outer, correlated)}"
                return f"{oc} {'NOT ' if kind == 'not_in' else ''}IN ({body})"
            oc, ty = self.pick(outer, "int")
            if ty not in ("int", "float"):
                return None
            inner = self._inner_source("int")
            if inner is None:
                return None
            agg = self._scalar_aggregate(inner)
            op = self.rng.choice([">", "<", "=", ">="])
            self.uses("scalar_subquery")
            return f"{oc} {op} (SELECT {agg} FROM {inner.sql}{self._inner_where(inner, outer, correlated)})"
        finally:
            self.sub_depth -= 1

    def _scalar_aggregate(self, inner: Rel) -> str:
        c = self.pick(inner, "int")[0]
        return self.rng.choice([f"MAX({c})", f"MIN({c})", f"SUM({c})", f"AVG({c})", "COUNT(*)",
                                f"COUNT({c})", f"2 * AVG({c})"])

    def scalar_select(self, outer: Rel) -> tuple[str, str, str] | None:
        """A scalar subquery among the outputs: correlated (TPC-H Q2, Q17's kind) or not."""
        inner = self._inner_source("int")
        if inner is None:
            return None
        agg = self._scalar_aggregate(inner)
        self.sub_depth += 1
        try:
            where = self._inner_where(inner, outer, self.rng.random() < 0.7)
        finally:
            self.sub_depth -= 1
        self.uses("scalar_subquery")
        ty = "float" if "AVG" in agg else "int"
        return f"(SELECT {agg} FROM {inner.sql}{where})", ty, "scalar_subquery"

    # -- blocks ------------------------------------------------------------------------------

    def select(self, depth: int = 0, kind: str | None = None) -> _Sel:
        """A query with typed outputs c0..cn: returns an object with sql, cols, shape; at depth
        0 maybe under a top-N."""
        if depth == 0 and kind is None and self.sources is SOURCES and self.rng.random() < 0.03:
            return _Sel(self.rng.choice(REFUSED), [("c0", "int")], "refused")
        sel = self._block(depth, kind)
        if depth == 0:
            sel = self._top_n(sel)
            sel.features = frozenset(self.features)
        return sel

    def _block(self, depth: int, kind: str | None) -> _Sel:
        kinds = ["linear", "linear", "group", "distinct", "window", "scalar"]
        if depth == 0:
            kinds += ["union", "setop", "cte_twice"]
        kind = kind or self.rng.choice(kinds)
        if kind in ("union", "setop"):
            return self._set_operation(depth, kind)
        if kind == "cte_twice":
            inner = self.select(depth + 1, self.rng.choice(["linear", "group", "distinct"]))
            key = next((n for n, t in inner.cols if t == "int"), inner.cols[0][0])
            other = next((n for n, t in inner.cols if n != key), key)
            outs = [f"x1.{key} AS c0", f"x1.{other} AS c1", f"x2.{other} AS c2"]
            types = [dict(inner.cols)[key], dict(inner.cols)[other], dict(inner.cols)[other]]
            sql = (f"WITH w AS ({inner.sql}) SELECT {', '.join(outs)} FROM w AS x1 JOIN w AS x2 "
                   f"ON x1.{key} = x2.{key}")
            return _Sel(sql, [(f"c{i}", t) for i, t in enumerate(types)], f"cte2({inner.shape})")
        rel = self.relation(depth)
        conds = [rel.cond] if rel.cond else []
        if self.rng.random() < 0.6:
            conds.append(self.predicate(rel))
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        if kind == "linear":
            exprs = [self.scalar(rel) for _ in range(self.rng.randint(1, 3))]
            if self.rng.random() < P_SCALAR_SELECT:
                sub = self.scalar_select(rel)
                if sub:
                    exprs.insert(self.rng.randint(0, len(exprs)), sub)
            names = self._names(depth, len(exprs), [e for e, _, _ in exprs])
            outs = ", ".join(f"{e}{n}" for (e, _, _), n in zip(exprs, names))
            return _Sel(f"SELECT {outs} FROM {rel.sql}{where}", [(f"c{i}", t) for i, (_, t, _) in enumerate(exprs)],
                        f"project[{','.join(s for _, _, s in exprs)}]({rel.shape}{',where' if where else ''})",
                        named=all(names), sortable=[c for c, _ in rel.cols])
        if kind == "distinct":
            cols = self._distinct_cols(rel)
            outs = ", ".join(f"{c} AS c{i}" for i, (c, _) in enumerate(cols))
            return _Sel(f"SELECT DISTINCT {outs} FROM {rel.sql}{where}",
                        [(f"c{i}", t) for i, (_, t) in enumerate(cols)], f"distinct({rel.shape})")
        if kind in ("group", "scalar"):
            return self._aggregate(depth, kind, rel, where)
        return self._window(rel, where)

    def _names(self, depth: int, count: int, exprs: list[str]) -> list[str]:
        """` AS c<i>` per output; at depth 0, now and then one output without an alias (an
        aggregate or expression, named by Spark's CTAS rule; never one whose name repeats
        another output's: a plain column, or a CAST of one, which Spark names after the column,
        and Spark's CTAS refuses two columns of one name, as dt does)."""
        names = [f" AS c{i}" for i in range(count)]
        if depth == 0 and self.rng.random() < P_UNNAMED:
            # not GROUPING(k): dt does not derive its Spark name yet (FUZZ-FINDINGS 16:40, seed 4046)
            candidates = [i for i, e in enumerate(exprs) if "(" in e and not e.startswith(("(SELECT", "GROUPING("))
                          and (_spark_name(e) or "").lower() not in {f"c{j}" for j in range(count) if j != i}]
            if candidates:
                names[self.rng.choice(candidates)] = ""
                self.uses("unnamed_column")
        return names

    def _aggregate(self, depth: int, kind: str, rel: Rel, where: str) -> _Sel:
        keys = self._distinct_cols(rel) if kind == "group" else []
        aggs = self._aggregates(rel)
        hidden: list[str] = []
        if keys and self.rng.random() < P_HIDDEN_KEY:          # a key grouped by, not selected
            spare = [c for c, _ in rel.cols if c not in [k for k, _ in keys]]
            if spare:
                hidden.append(self.rng.choice(spare))
                self.uses("unselected_group_key")
        group_sql = ", ".join([c for c, _ in keys] + hidden)
        shape = kind
        if keys and self.rng.random() < P_GROUPING_SETS:
            all_keys = [c for c, _ in keys] + hidden
            style = self.rng.choice(["rollup", "cube", "grouping_sets"])
            if style == "grouping_sets":
                # every selected key is in some set (Spark refuses a key no set holds); the
                # full set first or not
                sets = [f"({', '.join(all_keys)})"] + self.rng.sample([f"({all_keys[-1]})", "()"], self.rng.randint(1, 2))
                self.rng.shuffle(sets)
                group_sql = f"GROUPING SETS ({', '.join(sets)})"
            else:
                group_sql = f"{style.upper()} ({', '.join(all_keys)})"
            self.uses(style)
            shape = f"{kind}_{style}"
            if self.rng.random() < 0.3:
                aggs.append((f"GROUPING({keys[0][0]})", "int", "grouping"))
        exprs = [c for c, _ in keys] + [a for a, _, _ in aggs]
        names = self._names(depth, len(exprs), exprs)
        outs = [f"{e}{n}" for e, n in zip(exprs, names)]
        group = f" GROUP BY {group_sql}" if keys else ""
        types = [t for _, t in keys] + [t for _, t, _ in aggs]
        int_col = self.pick(rel, "int")[0]
        return _Sel(f"SELECT {', '.join(outs)} FROM {rel.sql}{where}{group}",
                    [(f"c{i}", t) for i, t in enumerate(types)],
                    f"{shape}[{','.join(s for _, _, s in aggs)}]{'+hidden' if hidden else ''}({rel.shape})",
                    named=all(names), sortable=["COUNT(*)", f"MAX({int_col})"] + [c for c, _ in keys])

    def _window(self, rel: Rel, where: str) -> _Sel:
        part, _ = self.pick(rel)
        order, _ = self.pick(rel, "int")
        val, vt = self.pick(rel, "int")
        fns = [("RANK()", "int", "rank"), ("DENSE_RANK()", "int", "dense_rank"),
               (f"COUNT({val})", "int", "running_count"), (f"MAX({val})", vt, "running_max")]
        if vt == "int":
            fns.append((f"SUM({val})", "int", "running_sum"))
        picked = self.rng.sample(fns, self.rng.randint(1, 2))
        base = [(c, t) for c, t in rel.cols][: self.rng.randint(1, 3)]
        outs = [f"{c} AS c{i}" for i, (c, _) in enumerate(base)]
        glob = self.rng.random() < P_GLOBAL_WINDOW
        over = f"ORDER BY {order}" if glob else f"PARTITION BY {part} ORDER BY {order}"
        if glob:
            self.uses("global_window")
        outs += [f"{f} OVER ({over}) AS c{len(base) + i}" for i, (f, _, _) in enumerate(picked)]
        types = [t for _, t in base] + [t for _, t, _ in picked]
        return _Sel(f"SELECT {', '.join(outs)} FROM {rel.sql}{where}", [(f"c{i}", t) for i, t in enumerate(types)],
                    f"{'global_' if glob else ''}window[{','.join(s for _, _, s in picked)}]({rel.shape})")

    def _set_operation(self, depth: int, kind: str) -> _Sel:
        """UNION ALL (kind "union"), or UNION / EXCEPT / INTERSECT [ALL] ("setop"), of two
        blocks with outputs of the same types."""
        op = "UNION ALL"
        if kind == "setop":
            op = self.rng.choice(["UNION", "EXCEPT", "EXCEPT ALL", "INTERSECT", "INTERSECT ALL"])
            self.uses({"UNION": "union_distinct"}.get(op, op.lower().replace(" ", "_")))
        branch = ["linear"] if kind == "union" else ["linear", "linear", "group", "distinct"]
        left = self.select(depth + 1, self.rng.choice(branch))
        right = self.select(depth + 1, self.rng.choice(branch))
        lt, rt = [t for _, t in left.cols], [t for _, t in right.cols]
        # the branches' types as they are where they agree, else both as strings
        types = [a if a == b else "str" for a, b in zip(lt, rt)] + ["str"] * (len(lt) - len(rt))
        types = types[:len(lt)]
        lsql = left.sql if types == lt else self._retype(left, types)
        rsql = right.sql if types == rt[:len(types)] and len(rt) == len(types) else self._retype(right, types)
        name = {"UNION ALL": "union"}.get(op, op.lower().replace(" ", "_"))
        return _Sel(f"{lsql} {op} {rsql}", [(f"c{i}", t) for i, t in enumerate(types)],
                    f"{name}({left.shape},{right.shape})", setop=True)

    def _top_n(self, sel: _Sel) -> _Sel:
        """`sel` under ORDER BY … LIMIT n (or, rarely, ORDER BY alone, or LIMIT alone): keys by
        alias, by ordinal, an expression over the outputs, or (on a projection or aggregate)
        an expression not selected; ASC / DESC, NULL ordering explicit or Spark's default; n
        small, so that ties straddle the n-th row."""
        r = self.rng.random()
        if r >= P_TOP_N + P_ORDER_ONLY or sel.shape == "refused" or not sel.named:
            return sel
        keys = []
        for i in self.rng.sample(range(len(sel.cols)), self.rng.randint(1, min(2, len(sel.cols)))):
            form = self.rng.random()
            ty = sel.cols[i][1]
            if form < 0.65:
                key = f"c{i}"
            elif form < 0.75:
                key = str(i + 1)
            elif form < 0.88 or not sel.sortable:       # over the outputs (TPC-DS q47's kind)
                key = {"int": f"c{i} + 1", "float": f"-c{i}", "str": f"COALESCE(c{i}, 'm')"}.get(
                    ty, f"CASE WHEN c{i} IS NULL THEN 0 ELSE 1 END")
                self.uses("top_n_expression")
                if sel.setop:
                    self.uses("top_n_setop_expression")
            else:                                         # not selected (TPC-DS q84's, q92's kind)
                key = self.rng.choice(sel.sortable)
                self.uses("top_n_unselected")
            key += self.rng.choice(["", "", " ASC", " DESC", " DESC"])
            key += self.rng.choice(["", "", "", " NULLS FIRST", " NULLS LAST"])
            keys.append(key)
        order = f" ORDER BY {', '.join(keys)}"
        if r >= P_TOP_N:
            self.uses("order_by_only")
            return _Sel(sel.sql + order, sel.cols, f"order({sel.shape})", named=sel.named)
        self.uses("top_n")
        n = self.rng.choice([1, 2, 3, 3, 5, 8])
        if self.rng.random() < 0.08:                     # any n rows (TPC-DS q28's kind)
            self.uses("limit_only")
            return _Sel(f"{sel.sql} LIMIT {n}", sel.cols, f"limit({sel.shape})", named=sel.named)
        return _Sel(f"{sel.sql}{order} LIMIT {n}", sel.cols, f"top_n({sel.shape})", named=sel.named)

    def _distinct_cols(self, rel: Rel) -> list[tuple[str, str]]:
        n = min(len(rel.cols), self.rng.randint(1, 2))
        return self.rng.sample(rel.cols, n)

    def _aggregates(self, rel: Rel) -> list[tuple[str, str, str]]:
        c, ty = self.pick(rel, "int")
        any_c, any_t = self.pick(rel)
        options = [("COUNT(*)", "int", "count_star"), (f"COUNT({c})", "int", "count"),
                   (f"MIN({any_c})", any_t, "min"), (f"MAX({any_c})", any_t, "max"),
                   (f"COUNT(DISTINCT {any_c})", "int", "count_distinct")]
        if ty == "int":       # sums of numbers only
            options += [(f"SUM({c})", "int", "sum"), (f"AVG({c})", "float", "avg")]
        return self.rng.sample(options, self.rng.randint(1, 3))

    @staticmethod
    def _retype(sel, types: list[str]) -> str:
        """`sel` wrapped so that its columns have `types` (for a set operation's branch)."""
        outs = []
        for i, t in enumerate(types):
            have = sel.cols[i][1] if i < len(sel.cols) else None
            src = f"u.c{i}" if have is not None else "NULL"
            if have != t:
                src = f"CAST({src} AS STRING)" if have is not None else f"CAST(NULL AS {'STRING' if t == 'str' else 'INT'})"
            outs.append(f"{src} AS c{i}")
        return f"SELECT {', '.join(outs)} FROM ({sel.sql}) AS u"


def query(seed: int, max_depth: int = 2) -> _Sel:
    return Gen(random.Random(seed), max_depth).select(0)


def downstream(seed: int, upstream: list[tuple[str, str]]) -> _Sel:
    """A query over another DT `d` (whose columns are `upstream`'s outputs)."""
    rng = random.Random(seed * 7919 + 1)
    return Gen(rng, 1, {"d": tuple(upstream)}).select(0, rng.choice(["linear", "group", "distinct", "window"]))


# -- data and change histories -------------------------------------------------------------

def _row(rng: random.Random, name: str) -> tuple:
    k = rng.choice([None, 1, 1, 1, 2, 2, 3, 4])        # skewed, with NULLs
    if name == "c":
        return (k, rng.choice([None, (), (1,), (1, 2), (2, 2, None)]))
    g = rng.choice([None, "x", "x", "y", "z"])
    v = rng.choice([None, 0, 1, 2, 3, 5])
    return (k, g, v)


def initial_rows(rng: random.Random, name: str) -> list[tuple]:
    rows = [_row(rng, name) for _ in range(rng.randint(0, 8))]
    return rows + rng.sample(rows, min(len(rows), rng.randint(0, 2)))     # duplicates


def commit(rng: random.Random, name: str, rows: list[tuple]) -> tuple[list[tuple], list[tuple[tuple, str]], str]:
    """One commit on a source: its rows after it, its change feed (row, _change_type) with the
    kinds Delta writes (insert, delete, update_preimage / update_postimage, and an overwrite that
    deletes every row and inserts every row again, unchanged ones included), and the same commit
    as Spark SQL on `{name}` (for the Spark replay)."""
    kind = rng.choice(["insert", "insert", "delete", "update", "update", "overwrite"])
    cols = [c for c, _ in SOURCES[name]]
    if kind == "insert" or not rows:
        new = [_row(rng, name) for _ in range(rng.randint(1, 3))]
        new += new[:rng.randint(0, 1)]
        return rows + new, [(r, "insert") for r in new], f"INSERT INTO {{{name}}} VALUES {_values(new)}"
    k = rng.choice(rows)[0]
    where = f"k <=> {_lit(k)}"
    if kind == "delete":
        gone = [r for r in rows if r[0] == k]
        return [r for r in rows if r[0] != k], [(r, "delete") for r in gone], f"DELETE FROM {{{name}}} WHERE {where}"
    if kind == "update":
        column = rng.choice(range(len(rows[0])))
        value = _row(rng, name)[column]
        out, feed = [], []
        for r in rows:
            if r[0] == k:
                after = tuple(value if i == column else x for i, x in enumerate(r))
                feed += [(r, "update_preimage"), (after, "update_postimage")]
                out.append(after)
            else:
                out.append(r)
        return out, feed, f"UPDATE {{{name}}} SET {cols[column]} = {_lit(value)} WHERE {where}"
    keep = [r for r in rows if rng.random() < 0.7] + [_row(rng, name) for _ in range(rng.randint(0, 2))]
    statement = (f"INSERT OVERWRITE {{{name}}} VALUES {_values(keep)}" if keep
                 else f"DELETE FROM {{{name}}} WHERE true")
    return keep, [(r, "delete") for r in rows] + [(r, "insert") for r in keep], statement


def _lit(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, tuple):
        return "array(" + ", ".join(_lit(x) for x in v) + ")" if v else "CAST(array() AS ARRAY<INT>)"
    if isinstance(v, int):
        return str(v)
    return "'" + v + "'"


def _values(rows: list[tuple]) -> str:
    return ", ".join("(" + ", ".join(_lit(x) for x in r) + ")" for r in rows)


def _spark_name(expr: str) -> str | None:
    """The name Spark's CTAS gives the output `expr` (dt's own rule, sql/spark_names.py; None:
    a form it does not know)."""
    import sqlglot

    from dtcli.sql.spark_names import output_name

    return output_name(sqlglot.parse_one(expr, read="spark"), expr)
