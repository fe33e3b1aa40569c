"""Seeded random queries over the SQL dt accepts, and random change histories of their sources.

A query is composed from relations (a source, a join of two, a self-join, a subquery in FROM that
is itself generated) and an outermost operator (projection with scalar expressions, CASE and
casts; WHERE with NULL-aware predicates; GROUP BY with SUM / COUNT / COUNT(DISTINCT) / MIN / MAX /
AVG; DISTINCT; UNION ALL; windows with PARTITION BY; a scalar aggregate; a CTE read twice). Every
column is typed (int or str) so expressions stay well typed. `shape` names the operator tree, for
counting distinct shapes. Same seed, same case.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SOURCES = {"a": (("k", "int"), ("g", "str"), ("v", "int")),
           "b": (("k", "int"), ("g", "str"), ("w", "int")),
           "c": (("k", "int"), ("arr", "arr"))}
DDL = {"a": "k INT, g STRING, v INT", "b": "k INT, g STRING, w INT", "c": "k INT, arr ARRAY<INT>"}
JOINABLE = ("a", "b")       # c is read through LATERAL VIEW explode only
# constructs outside the operator table's incremental rows, generated now and then so that the
# refusal count (by the analyzer's reason) is exercised: each must be refused, never run
REFUSED = ["SELECT t1.k AS c0, RANK() OVER (ORDER BY t1.v) AS c1 FROM a AS t1",
           "SELECT t1.k AS c0 FROM a AS t1 WHERE t1.k IN (SELECT t2.k FROM b AS t2)",
           "SELECT t1.k AS c0 FROM a AS t1 WHERE EXISTS (SELECT 1 FROM b AS t2 WHERE t2.k = t1.k)",
           "SELECT t1.k AS c0 FROM a AS t1 ORDER BY t1.k LIMIT 3",
           "SELECT t1.k AS c0 FROM a AS t1 EXCEPT SELECT t2.k AS c0 FROM b AS t2",
           "SELECT t1.k AS c0, rand() AS c1 FROM a AS t1"]


@dataclass
class Rel:
    sql: str                              # a FROM clause (items and joins)
    cols: list[tuple[str, str]]           # (qualified column, type)
    shape: str


@dataclass
class Query:
    sql: str
    shape: str
    names: list[str] = field(default_factory=list)


class Gen:
    def __init__(self, rng: random.Random, max_depth: int = 2, sources=None):
        self.rng, self.max_depth, self.n = rng, max_depth, 0
        # another DT's output as the input (a DT reading a DT), or the sources
        self.sources = sources or SOURCES
        self.joinable = tuple(sources) if sources else JOINABLE

    def alias(self) -> str:
        self.n += 1
        return f"t{self.n}"

    # -- relations ---------------------------------------------------------------------------

    def table(self, name: str | None = None) -> Rel:
        name = name or self.rng.choice(self.joinable)
        t = self.alias()
        return Rel(f"{name} AS {t}", [(f"{t}.{c}", ty) for c, ty in self.sources[name]], name)

    def relation(self, depth: int) -> Rel:
        r = self.rng.random()
        if depth < self.max_depth and r < 0.2:
            return self.subquery(depth + 1)
        if r < 0.5:
            return self.table()
        if r < 0.55 and depth == 0 and "c" in self.sources:   # LATERAL VIEW follows every FROM item
            t, e = self.alias(), self.alias()
            return Rel(f"c AS {t} LATERAL VIEW explode({t}.arr) {e} AS x", [(f"{t}.k", "int"), (f"{e}.x", "int")],
                       "explode(c)")
        if r < 0.65:       # self-join
            name = self.joinable[0]
            return self.join(self.table(name), self.table(name), "INNER", composite=self.rng.random() < 0.3)
        kind = self.rng.choice(["INNER", "INNER", "LEFT", "RIGHT", "FULL OUTER"])
        left = self.table() if depth >= self.max_depth or self.rng.random() < 0.8 else self.subquery(depth + 1)
        return self.join(left, self.table(), kind, composite=self.rng.random() < 0.3)

    def join(self, left: Rel, right: Rel, kind: str, composite: bool) -> Rel:
        def of(rel: Rel, ty: str) -> list[str]:
            return [c for c, t in rel.cols if t == ty]
        common = [t for t in ("int", "str") if of(left, t) and of(right, t)]
        if common:
            on = f"{of(left, common[0])[0]} = {of(right, common[0])[0]}"
        else:       # no column type on both sides: compare as strings
            on = f"CAST({left.cols[0][0]} AS STRING) = CAST({right.cols[0][0]} AS STRING)"
        if composite and len(common) == 2:
            on += f" AND {of(left, 'str')[0]} = {of(right, 'str')[0]}"
        else:
            composite = False
        return Rel(f"{left.sql} {kind} JOIN {right.sql} ON {on}", left.cols + right.cols,
                   f"{kind.split()[0].lower()}_join{'2' if composite else ''}({left.shape},{right.shape})")

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
        def atom() -> str:
            c, ty = self.pick(rel)
            n = self.rng.randint(0, 4)
            if ty in ("int", "float"):
                return self.rng.choice([f"{c} > {n}", f"{c} IS NULL", f"{c} IS NOT NULL",
                                        f"COALESCE({c}, 0) BETWEEN 1 AND {n + 8}", f"NOT ({c} = {n})",
                                        f"{c} IN ({n}, {n + 1})"])
            return self.rng.choice([f"{c} IN ('x', 'y')", f"{c} <> 'z'", f"{c} IS NULL",
                                    f"COALESCE({c}, 'x') = 'x'"])
        p = atom()
        if self.rng.random() < 0.3:
            p = f"({p} {self.rng.choice(['AND', 'OR'])} {atom()})"
        return p

    # -- blocks ------------------------------------------------------------------------------

    def select(self, depth: int = 0, kind: str | None = None):
        """A SELECT with typed outputs c0..cn: returns an object with sql, cols, shape."""
        kinds = ["linear", "linear", "group", "distinct", "window", "scalar"]
        if depth == 0:
            kinds += ["union", "cte_twice"]
            if kind is None and self.sources is SOURCES and self.rng.random() < 0.03:
                return _Sel(self.rng.choice(REFUSED), [("c0", "int")], "refused")
        kind = kind or self.rng.choice(kinds)
        if kind == "union":
            left = self.select(depth + 1, "linear")
            right = self.select(depth + 1, "linear")
            lt, rt = [t for _, t in left.cols], [t for _, t in right.cols]
            # the branches' types as they are where they agree, else both as strings
            types = [a if a == b else "str" for a, b in zip(lt, rt)] + ["str"] * (len(lt) - len(rt))
            types = types[:len(lt)]
            lsql = left.sql if types == lt else self._retype(left, types)
            rsql = right.sql if types == rt[:len(types)] and len(rt) == len(types) else self._retype(right, types)
            return _Sel(f"{lsql} UNION ALL {rsql}", [(f"c{i}", t) for i, t in enumerate(types)],
                        f"union({left.shape},{right.shape})")
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
        where = f" WHERE {self.predicate(rel)}" if self.rng.random() < 0.6 else ""
        if kind == "linear":
            exprs = [self.scalar(rel) for _ in range(self.rng.randint(1, 3))]
            outs = ", ".join(f"{e} AS c{i}" for i, (e, _, _) in enumerate(exprs))
            return _Sel(f"SELECT {outs} FROM {rel.sql}{where}", [(f"c{i}", t) for i, (_, t, _) in enumerate(exprs)],
                        f"project[{','.join(s for _, _, s in exprs)}]({rel.shape}{',where' if where else ''})")
        if kind == "distinct":
            cols = self._distinct_cols(rel)
            outs = ", ".join(f"{c} AS c{i}" for i, (c, _) in enumerate(cols))
            return _Sel(f"SELECT DISTINCT {outs} FROM {rel.sql}{where}",
                        [(f"c{i}", t) for i, (_, t) in enumerate(cols)], f"distinct({rel.shape})")
        if kind in ("group", "scalar"):
            keys = self._distinct_cols(rel) if kind == "group" else []
            aggs = self._aggregates(rel)
            outs = [f"{c} AS c{i}" for i, (c, _) in enumerate(keys)]
            outs += [f"{a} AS c{len(keys) + i}" for i, (a, _, _) in enumerate(aggs)]
            group = f" GROUP BY {', '.join(c for c, _ in keys)}" if keys else ""
            types = [t for _, t in keys] + [t for _, t, _ in aggs]
            return _Sel(f"SELECT {', '.join(outs)} FROM {rel.sql}{where}{group}",
                        [(f"c{i}", t) for i, t in enumerate(types)],
                        f"{kind}[{','.join(s for _, _, s in aggs)}]({rel.shape})")
        # window
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
        outs += [f"{f} OVER (PARTITION BY {part} ORDER BY {order}) AS c{len(base) + i}"
                 for i, (f, _, _) in enumerate(picked)]
        types = [t for _, t in base] + [t for _, t, _ in picked]
        return _Sel(f"SELECT {', '.join(outs)} FROM {rel.sql}{where}", [(f"c{i}", t) for i, t in enumerate(types)],
                    f"window[{','.join(s for _, _, s in picked)}]({rel.shape})")

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
        """`sel` wrapped so that its columns have `types` (for a UNION ALL branch)."""
        outs = []
        for i, t in enumerate(types):
            have = sel.cols[i][1] if i < len(sel.cols) else None
            src = f"u.c{i}" if have is not None else "NULL"
            if have != t:
                src = f"CAST({src} AS STRING)" if have is not None else f"CAST(NULL AS {'STRING' if t == 'str' else 'INT'})"
            outs.append(f"{src} AS c{i}")
        return f"SELECT {', '.join(outs)} FROM ({sel.sql}) AS u"


@dataclass
class _Sel:
    sql: str
    cols: list[tuple[str, str]]
    shape: str


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
