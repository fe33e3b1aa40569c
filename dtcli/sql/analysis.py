"""Can a dynamic table's query refresh INCREMENTAL, and how does each of its constructs refresh?

A static look at the query (sqlglot only, no Spark) so that `dt validate`, `dt explain` and the
planner answer in milliseconds. It resolves `refresh_mode: auto` (INCREMENTAL unless some
construct blocks it) and yields the per-operator table that `dt explain` prints, with advice.
Anything this module does not recognise is reported as a blocker: a FULL refresh is slower but
always right, a wrong INCREMENTAL one is not.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType as T

from dtcli.errors import ValidationError
from dtcli.sql import functions as fn
from dtcli.sql.parse import ParsedSQL


@dataclass(frozen=True)
class OperatorInfo:
    operator: str
    strategy: str
    considerations: tuple[str, ...]
    line: int | None
    incremental: bool


@dataclass(frozen=True)
class QueryAnalysis:
    incremental: bool
    reason: str | None
    operators: tuple[OperatorInfo, ...]
    blockers: tuple[str, ...]

    def to_dict(self) -> dict:
        return {
            "incremental": self.incremental,
            "reason": self.reason,
            "operators": [dict(asdict(op), considerations=list(op.considerations))
                          for op in self.operators],
            "blockers": list(self.blockers),
        }


ROWS = "apply to changed rows only"
ROWWISE = "apply to changed rows"
UNION_ALL = "union of each side's changes"
UNION_DISTINCT = "union the changes, then recompute the distinct rows that changed"
CTE = "compute the CTE's changes once, feed them to every reference"
FROM_CTE = "the changes computed for the CTE"
DERIVED = "the subquery's changes feed the outer query"
CONSTANT = "constant input: never changes"
INNER = "ΔA ⋈ B_new + A_old ⋈ ΔB over pinned versions"
OUTER = "recompute the join keys touched by either side's changes"
GROUPS = "recompute the groups whose keys changed"
DISTINCT_ROWS = "recompute the distinct rows whose values changed"
PARTITIONS = "recompute the partitions that changed"
SINGLE_ROW = "recompute the single row"
FILTER_GROUPS = "filter the recomputed groups"
FILTER_PARTITIONS = "filter the recomputed partitions"
NO_ORDER = "ignored: a table keeps no row order"
FULL = "not incremental: forces FULL"

# Tokens that belong to the previous construct: a backwards keyword search stops there.
_HARD = {T.R_PAREN, T.COMMA, T.VAR, T.IDENTIFIER, T.NUMBER, T.STRING, T.STAR, T.FROM, T.WHERE,
         T.GROUP_BY, T.HAVING, T.JOIN, T.ON, T.ORDER_BY, T.LIMIT, T.OFFSET, T.UNION, T.EXCEPT,
         T.INTERSECT, T.QUALIFY, T.SEMICOLON}

_ADVICE = {
    "LIMIT": "the rows a LIMIT keeps depend on the whole input: limit when reading the table, "
             "or keep the top N per key with row_number() OVER (PARTITION BY ...) <= N",
    "OFFSET": "the rows an OFFSET skips depend on the whole input: apply it when reading",
    "TABLESAMPLE": "a sample differs on every evaluation: for a stable one, filter on a hash "
                   "of a key, e.g. xxhash64(id) % 100 < 5",
    "EXCEPT": "rewrite as a LEFT OUTER JOIN on every column with null-safe <=> matching that "
              "keeps the rows without a match, then DISTINCT",
    "INTERSECT": "rewrite as an INNER JOIN on every column with null-safe <=> matching, "
                 "then DISTINCT",
    "EXISTS": "rewrite as a join on the correlated key: an INNER JOIN to the DISTINCT keys for "
              "EXISTS / IN, a LEFT OUTER JOIN keeping unmatched rows for NOT EXISTS / NOT IN "
              "(mind NULLs with NOT IN)",
    "scalar": "compute the value in a dynamic table of its own and join it (CROSS JOIN for a "
              "single value, or on the correlated key)",
    "LATERAL": "rewrite as a join on the correlated columns, grouping the subquery by them if "
               "it aggregates",
    "SEMI": "write a SEMI JOIN as an INNER JOIN to the DISTINCT keys of the other side, and "
            "an ANTI JOIN as a LEFT OUTER JOIN keeping the rows without a match",
    "PIVOT": "write it as a GROUP BY with one conditional aggregate per value, "
             "e.g. sum(CASE WHEN k = 'a' THEN v END)",
    "UNPIVOT": "write it as LATERAL VIEW stack(...), which refreshes row by row",
    "RECURSIVE": "its depth depends on the data; unroll it into a fixed chain of joins if the "
                 "depth is bounded",
    "udf": "Spark cannot tell whether a user-defined function is deterministic; use built-in "
           "functions where you can",
    "table function": "read the data from a table instead",
}


def analyze(parsed: ParsedSQL, query: exp.Query) -> QueryAnalysis:
    """Analyse a table's query from its one parse; `query` is that parse's query or a rewritten
    (renamed, qualified) copy of it, whose nodes keep their places in the file."""
    analyzer = _Analyzer(parsed.text, parsed.tokens, query)
    analyzer.query(query)
    return analyzer.result()


def _at(line: int | None) -> str:
    return f" at line {line}" if line else ""


def _first_start(node: exp.Expression) -> int | None:
    starts = [n._meta["start"] for n in node.walk() if n._meta and "start" in n._meta]
    return min(starts) if starts else None


def _scope(node: exp.Expression):
    """Nodes of one query level in source order; nested queries are yielded, not entered."""
    yield node
    if isinstance(node, (exp.Query, exp.Subquery)):
        return
    for child in node.iter_expressions():
        yield from _scope(child)


def _text(node: exp.Expression) -> str:
    return node.sql(dialect="spark", normalize_functions="lower")


def _const(node: exp.Expression) -> bool:
    if isinstance(node, (exp.Cast, exp.TryCast, exp.Neg, exp.Paren)):
        return _const(node.this)
    return isinstance(node, (exp.Literal, exp.Boolean))


def _column_vs_const(cmp: exp.Expression) -> exp.Column | None:
    left, right = cmp.this, cmp.expression
    if isinstance(left, exp.Column) and _const(right):
        return left
    if isinstance(right, exp.Column) and _const(left):
        return right
    return None


def _selective(cond: exp.Expression) -> str | None:
    """An equality on a literal, or a literal range, that probably keeps few rows."""
    conjuncts = list(cond.flatten()) if isinstance(cond, exp.And) else [cond.unnest()]
    lower: dict[str, exp.Expression] = {}
    upper: dict[str, exp.Expression] = {}
    for c in conjuncts:
        if isinstance(c, (exp.EQ, exp.NullSafeEQ)) and _column_vs_const(c):
            return _text(c)
        if isinstance(c, exp.Between) and isinstance(c.this, exp.Column) \
                and _const(c.args["low"]) and _const(c.args["high"]):
            return _text(c)
        if isinstance(c, exp.In) and not c.args.get("query") and isinstance(c.this, exp.Column) \
                and c.expressions and all(_const(e) for e in c.expressions):
            return _text(c)
        col = _column_vs_const(c) if isinstance(c, (exp.GT, exp.GTE, exp.LT, exp.LTE)) else None
        if col is not None:
            above = isinstance(c, (exp.GT, exp.GTE)) == (c.this is col)
            (lower if above else upper)[_text(col)] = c
            if _text(col) in lower and _text(col) in upper:
                return f"{_text(lower[_text(col)])} AND {_text(upper[_text(col)])}"
    return None


def _join_keys(join: exp.Join) -> list[str]:
    if join.args.get("using"):
        return [_text(i) for i in join.args["using"]]
    keys: list[str] = []
    on = join.args.get("on")
    for eq in (on.find_all(exp.EQ, exp.NullSafeEQ) if on else ()):
        if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Column):
            for col in (eq.this, eq.expression):
                if col.name not in keys:
                    keys.append(col.name)
    return keys


def _outputs(select: exp.Select) -> list[tuple[str, exp.Expression]]:
    return [(e.alias_or_name.lower(), e.unalias()) for e in select.expressions]


def _has_star(select: exp.Select) -> bool:
    return any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
               for e in select.expressions)


def _group_keys(group: exp.Group, sel: exp.Select) -> list[exp.Expression]:
    """Every grouping expression, with ROLLUP / CUBE / GROUPING SETS flattened."""
    if group.args.get("all"):
        return [e for _, e in _outputs(sel) if not any(fn.is_aggregate(n) for n in _scope(e))]
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


def _windowed(node: exp.Expression) -> bool:
    """An aggregate used as a window function (sum(x) OVER ...), not a grouping aggregate."""
    child, parent = node, node.parent
    while isinstance(parent, (exp.IgnoreNulls, exp.RespectNulls)):
        child, parent = parent, parent.parent
    return isinstance(parent, exp.Window) and parent.this is child


class _Analyzer:
    def __init__(self, sql: str, tokens: list[Token], root: exp.Expression):
        self.sql, self.tokens, self.root = sql, tokens, root
        self.index = {tok.start: i for i, tok in enumerate(tokens)}
        self.ops: list[OperatorInfo] = []
        self.blockers: list[tuple[int, int, str]] = []
        self.ctes: dict[str, exp.Expression] = {}

    def result(self) -> QueryAnalysis:
        # The reason names the construct that comes first in the text, not in reading order.
        blockers = tuple(reason for _, _, reason in sorted(self.blockers))
        return QueryAnalysis(not blockers, blockers[0] if blockers else None,
                             tuple(self.ops), blockers)

    # -- where things are -------------------------------------------------------------------

    def pos(self, node: exp.Expression, *keywords: T) -> tuple[int | None, int]:
        """Line and offset of a construct: its keyword if it has one, else its first token.

        sqlglot records positions on identifiers, literals and function names only, so we take
        the first of those inside the node and walk back over the tokens to its keyword.
        """
        start = _first_start(node)
        if start is None:
            start = self._bare_start(node)
        if start is None:
            return (self.pos(node.parent, *keywords) if node.parent is not None else (None, 0))
        i = self.index.get(start)
        if i is None:
            return None, start
        for j in range(i - 1, max(i - 9, -1), -1):
            tok = self.tokens[j]
            if tok.token_type in keywords:
                return tok.line, tok.start
            if tok.token_type in _HARD:
                break
        return self.tokens[i].line, start

    def _bare_start(self, node: exp.Expression) -> int | None:
        # A few constructs carry no position at all (current_date without parentheses,
        # GROUP BY ALL): match the n-th such node to the n-th token that spells it.
        if isinstance(node, exp.Func):
            names = {name.lower() for name in type(node).sql_names()}

            def spelt(k: int) -> bool:
                nxt = self.tokens[k + 1].token_type if k + 1 < len(self.tokens) else None
                return self.tokens[k].text.lower() in names and nxt != T.L_PAREN
        elif isinstance(node, exp.Group) and node.args.get("all"):
            def spelt(k: int) -> bool:
                return (self.tokens[k].token_type == T.GROUP_BY and k + 1 < len(self.tokens)
                        and self.tokens[k + 1].token_type == T.ALL)
        else:
            return None
        same = [n for n in self.root.walk(bfs=False)
                if type(n) is type(node) and _first_start(n) is None]
        toks = [tok for k, tok in enumerate(self.tokens) if spelt(k)]
        hits = [k for k, n in enumerate(same) if n is node]
        return toks[hits[0]].start if len(toks) == len(same) and hits else None

    # -- recording ---------------------------------------------------------------------------

    def add(self, operator: str, strategy: str, where: tuple[int | None, int],
            considerations: tuple[str, ...] | list[str] = (), block: str | bool = False) -> None:
        """One operator row; `block` (True, or the construct's name) makes it force FULL."""
        line, offset = where
        if block:
            what = block if isinstance(block, str) else operator
            self.block(where, f"{what}{_at(line)} cannot be refreshed incrementally")
        self.ops.append(OperatorInfo(operator, FULL if block else strategy,
                                     tuple(considerations), line, not block))

    def block(self, where: tuple[int | None, int], reason: str) -> None:
        self.blockers.append((where[1], len(self.blockers), reason))

    # -- queries -----------------------------------------------------------------------------

    def query(self, node: exp.Expression) -> None:
        saved = dict(self.ctes)
        if isinstance(node, exp.Subquery):
            self.query(node.this)
        else:
            with_ = node.args.get("with_") or node.args.get("with")
            if with_:
                self.with_(with_)
            if isinstance(node, exp.SetOperation):
                self.set_operation(node)
            elif isinstance(node, exp.Select):
                self.select(node)
            else:
                self.add(node.key.upper(), FULL, self.pos(node), block=True)
        self.modifiers(node)
        self.ctes = saved

    def with_(self, with_: exp.With) -> None:
        ctes = with_.expressions
        for k, cte in enumerate(ctes):
            name = cte.alias_or_name
            where = self.pos(cte.args["alias"])
            if with_.args.get("recursive"):
                self.add(f"WITH RECURSIVE {name}", FULL, where, (_ADVICE["RECURSIVE"],), True)
            else:
                advice = ("a long WITH chain is hard to tune; consider splitting its stages into "
                          "dynamic tables of their own",) if k == 0 and len(ctes) > 3 else ()
                self.add(f"WITH {name}", CTE, where, advice)
                self.query(cte.this)
            self.ctes[name.lower()] = cte.this

    def set_operation(self, node: exp.SetOperation) -> None:
        self.query(node.this)
        distinct = node.args.get("distinct") is not False
        label = type(node).__name__.upper() + ("" if distinct else " ALL")
        where = self.pos(node.expression, T.UNION, T.EXCEPT, T.INTERSECT)
        if isinstance(node, exp.Union):
            self.add(label, UNION_DISTINCT if distinct else UNION_ALL, where)
        else:
            self.add(label, FULL, where, (_ADVICE[label.split()[0]],), True)
        self.query(node.expression)

    def modifiers(self, node: exp.Expression) -> None:
        for arg, label, kw in (("order", "ORDER BY", T.ORDER_BY), ("sort", "SORT BY", T.SORT_BY),
                               ("distribute", "DISTRIBUTE BY", T.DISTRIBUTE_BY),
                               ("cluster", "CLUSTER BY", T.CLUSTER_BY)):
            if node.args.get(arg):
                self.add(label, NO_ORDER, self.pos(node.args[arg], kw),
                         (f"a table keeps no row order: sort in the query that reads it; here "
                          f"{label} only costs time",))
        for arg, label, kw in (("limit", "LIMIT", T.LIMIT), ("offset", "OFFSET", T.OFFSET)):
            if node.args.get(arg):
                self.add(label, FULL, self.pos(node.args[arg], kw), (_ADVICE[label],), True)

    def select(self, sel: exp.Select) -> None:
        from_ = sel.args.get("from_") or sel.args.get("from")
        if from_:
            self.relation(from_.this, "FROM", self.pos(from_, T.FROM))
        for join in sel.args.get("joins") or ():
            self.join(join)
        for lateral in sel.args.get("laterals") or ():
            self.lateral(lateral)
        if sel.args.get("where"):
            cond = sel.args["where"].this
            hint = _selective(cond)
            self.add("WHERE", ROWS, self.pos(sel.args["where"], T.WHERE), (
                f"`{hint}` probably keeps few rows: a refresh still reads every change of its "
                "inputs to find the matching ones, even when none match",) if hint else ())
            self.scan(cond)
        group = sel.args.get("group")
        aggregates = [n for e in sel.expressions + [sel.args.get("having")] if e
                      for n in _scope(e) if fn.is_aggregate(n) and not _windowed(n)]
        if group:
            self.group_by(sel, group, aggregates)
        elif aggregates:
            self.add("SCALAR AGGREGATE", SINGLE_ROW, self.pos(aggregates[0]),
                     self.non_subtractable(aggregates, "the aggregate over the whole input",
                                           "keep the input append-only"))
        if sel.args.get("having"):
            self.add("HAVING", FILTER_GROUPS, self.pos(sel.args["having"], T.HAVING))
            self.scan(sel.args["having"].this)
        qualify = sel.args.get("qualify")
        for e in sel.expressions + ([qualify] if qualify else []):
            for node in _scope(e):
                if isinstance(node, exp.Window):
                    self.window(sel, node)
        if qualify:
            self.add("QUALIFY", FILTER_PARTITIONS, self.pos(qualify, T.QUALIFY))
            self.scan(qualify.this)
        if sel.args.get("distinct"):
            self.distinct(sel)
        self.add("SELECT", ROWS, self.pos(sel.expressions[0], T.SELECT))
        for e in sel.expressions:
            inner = e.this if isinstance(e, (exp.Alias, exp.Aliases)) else e
            if isinstance(inner, exp.Func) and fn.written_name(inner, self.sql) in fn.GENERATORS:
                self.add(f"{_text(inner)} in SELECT", ROWWISE, self.pos(inner))
        for e in sel.expressions + list(sel.args.get("windows") or ()):
            self.scan(e)

    # -- FROM and joins ----------------------------------------------------------------------

    def relation(self, rel: exp.Expression, verb: str, where, strategy: str | None = None,
                 considerations: tuple[str, ...] = ()) -> None:
        """A FROM or JOIN item; `strategy` is the join's, or None for the FROM item's own."""
        alias = rel.alias
        if isinstance(rel, exp.Table) and isinstance(rel.this, exp.Func):
            name = fn.written_name(rel.this, self.sql)
            if name in fn.GENERATORS and rel.this.find(exp.Column):
                # `FROM t, explode(t.items)`: a lateral generator, row by row like LATERAL VIEW
                self.add(f"{verb} {_text(rel.this)}", ROWWISE, where)
                self.scan(rel.this)
            elif name in fn.CONSTANT_TABLE_FUNCTIONS or name in fn.GENERATORS:
                self.add(f"{verb} {name}(...)", strategy or CONSTANT, where, considerations)
            else:
                self.add(f"{verb} {name}(...)", FULL, where, (_ADVICE["table function"],),
                         f"table function {name}()")
        elif isinstance(rel, exp.Table):
            name = ".".join(part.name for part in rel.parts)
            cte = len(rel.parts) == 1 and name.lower() in self.ctes
            self.add(f"{verb} {name}", strategy or (FROM_CTE if cte else ROWS), where,
                     considerations)
        elif isinstance(rel, exp.Subquery):
            self.add(f"{verb} (subquery)" + (f" AS {alias}" if alias else ""),
                     strategy or DERIVED, where, considerations)
            self.query(rel)
        elif isinstance(rel, exp.Values):
            self.add(f"{verb} VALUES", strategy or CONSTANT, where, considerations)
        elif isinstance(rel, exp.Lateral):
            self.lateral(rel)
        else:
            self.add(f"{verb} {rel.key.upper()}", FULL, where, block=True)
        if rel.args.get("sample"):
            self.add("TABLESAMPLE", FULL, self.pos(rel.args["sample"], T.TABLE_SAMPLE),
                     (_ADVICE["TABLESAMPLE"],), True)
        for pivot in rel.args.get("pivots") or ():
            label = "UNPIVOT" if pivot.args.get("unpivot") else "PIVOT"
            self.add(label, FULL, self.pos(pivot, T.PIVOT, T.UNPIVOT), (_ADVICE[label],), True)

    def join(self, join: exp.Join) -> None:
        rel = join.this
        if isinstance(rel, exp.Lateral):
            self.lateral(rel)
            return
        where = self.pos(join, T.JOIN)
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        keys = _join_keys(join)
        key_text = ", ".join(keys) or "the join key"
        other = ".".join(p.name for p in rel.parts) if isinstance(rel, exp.Table) else "it"
        no_keys = ("the join has no equality condition, so every change is matched against "
                   "the whole other side; join on equal keys if you can",)
        if kind in ("SEMI", "ANTI"):
            label = f"{side} {kind} JOIN".strip()
            self.add(f"{label} {other}", FULL, where, (_ADVICE["SEMI"],), True)
            if isinstance(rel, exp.Subquery):
                self.query(rel)
        elif side:
            advice = (f"a change on either side recomputes every join key it touches; if one "
                      f"side changes far more often, cluster the other side by "
                      f"{key_text} so those lookups prune files",) if keys or join.method \
                else no_keys
            self.relation(rel, f"{side} OUTER JOIN", where, OUTER, advice)
        elif kind == "CROSS" or not (join.args.get("on") or keys or join.method):
            self.relation(rel, "CROSS JOIN", where, INNER, (
                "every changed row pairs with every row of the other side; keep one side "
                "small",))
        else:
            advice = (f"if one side changes often, clustering the other side by "
                      f"{key_text} lets refreshes find the matching rows quickly",) \
                if keys or join.method else no_keys
            self.relation(rel, "INNER JOIN", where, INNER, advice)
        if join.args.get("on"):
            self.scan(join.args["on"])

    def lateral(self, lat: exp.Lateral) -> None:
        gen = lat.this
        where = self.pos(lat, T.LATERAL)
        if lat.args.get("view") or isinstance(gen, exp.Func):
            outer = " OUTER" if lat.args.get("outer") else ""
            label = ("LATERAL VIEW" if lat.args.get("view") else "LATERAL") + outer
            self.add(f"{label} {_text(gen)}", ROWWISE, where)
            self.scan(gen)
        else:
            self.add("LATERAL subquery", FULL, where, (_ADVICE["LATERAL"],), True)

    # -- aggregation and windows -------------------------------------------------------------

    def non_subtractable(self, aggregates: list[exp.Expression], scope: str,
                         remedy: str = "keep groups small or the input append-only",
                         ) -> tuple[str, ...]:
        names = [_text(a) for a in aggregates
                 if isinstance(a, fn.NON_SUBTRACTABLE) or isinstance(a.this, exp.Distinct)
                 or fn.written_name(a, self.sql) in fn.NON_SUBTRACTABLE_NAMES]
        if not names:
            return ()
        return (f"{', '.join(dict.fromkeys(names))}: a deleted or updated row cannot be "
                f"subtracted, so it makes the refresh recompute {scope}; {remedy}",)

    def group_by(self, sel: exp.Select, group: exp.Group, aggregates) -> None:
        keys = _group_keys(group, sel)
        label = _text(group).strip()
        advice: list[str] = []
        missing: list[exp.Expression] = []
        for key in keys:
            target = self.resolve_key(key, sel)
            if target is None:
                missing.append(key)
            elif not isinstance(target, (exp.Column, exp.Literal)):
                advice.append(f"grouping key `{_text(target)}` is an expression, not a column: "
                              "finding the groups that changed may scan far more data; "
                              "compute it as a column in an upstream dynamic table and group "
                              "by that column")
        advice += self.non_subtractable(aggregates, "its whole group from the input")
        advice += [f"add `{_text(key)}` to the SELECT list" for key in missing]
        where = self.pos(group, T.GROUP_BY)
        self.ops.append(OperatorInfo(label, FULL if missing else GROUPS, tuple(advice),
                                     where[0], not missing))
        for key in missing:
            line, offset = self.pos(key)
            self.block((line, offset), f"GROUP BY key `{_text(key)}`{_at(line)} is not an "
                       "output column, so changed groups cannot be located; add it to the "
                       "SELECT list")
        for key in keys:
            self.scan(key)

    def resolve_key(self, key: exp.Expression, sel: exp.Select) -> exp.Expression | None:
        """The output expression a GROUP BY key stands for, or None if it is not an output."""
        outputs = _outputs(sel)
        if isinstance(key, exp.Literal) and key.is_int:
            n = int(key.name)
            return outputs[n - 1][1] if 0 < n <= len(outputs) else None
        for name, expr in outputs:
            if expr == key:
                return expr
            if isinstance(key, exp.Column) and isinstance(expr, exp.Column) \
                    and expr.name.lower() == key.name.lower() \
                    and (not key.table or not expr.table or key.table == expr.table):
                return expr
        if isinstance(key, exp.Column) and not key.table:
            for name, expr in outputs:
                if name == key.name.lower():
                    return expr   # Spark lets GROUP BY name a SELECT alias
        return key if _has_star(sel) and isinstance(key, exp.Column) else None

    def distinct(self, sel: exp.Select) -> None:
        advice: tuple[str, ...] = ()
        if sel.args.get("group"):
            advice = ("DISTINCT looks redundant: the rows of a GROUP BY are already unique per "
                      "key; removing it saves a duplicate check on every refresh",)
        elif self.distinct_input(sel):
            advice = ("DISTINCT looks redundant: its input is already unique (GROUP BY or "
                      "DISTINCT upstream); removing it saves a duplicate check on every "
                      "refresh",)
        self.add("DISTINCT", DISTINCT_ROWS, self.pos(sel.expressions[0], T.DISTINCT), advice)

    def distinct_input(self, sel: exp.Select) -> bool:
        """DISTINCT straight over a query whose rows are already unique on what we keep."""
        from_ = sel.args.get("from_") or sel.args.get("from")
        if not from_ or sel.args.get("joins") or sel.args.get("laterals"):
            return False
        src = from_.this
        if isinstance(src, exp.Table) and len(src.parts) == 1:
            src = self.ctes.get(src.name.lower())
        while isinstance(src, exp.Subquery):
            src = src.this
        if not isinstance(src, exp.Select) or not (src.args.get("group") or
                                                   src.args.get("distinct")):
            return False
        if src.args.get("distinct"):
            unique = {name for name, _ in _outputs(src)}
        else:
            targets = [self.resolve_key(k, src) for k in _group_keys(src.args["group"], src)]
            unique = {name for name, expr in _outputs(src) if any(t is expr for t in targets)}
        if _has_star(sel):
            return True
        kept = {e.unalias().name.lower() for e in sel.expressions
                if isinstance(e.unalias(), exp.Column)}
        return bool(unique) and unique <= kept

    def window(self, sel: exp.Select, win: exp.Window) -> None:
        spec = win
        if win.args.get("alias") and not win.args.get("partition_by"):
            named = {w.name.lower(): w for w in sel.args.get("windows") or ()}
            spec = named.get(win.args["alias"].name.lower(), win)
        func = _text(win.this)
        partition = spec.args.get("partition_by") or []
        where = self.pos(win)
        if partition:
            keys = ", ".join(_text(p) for p in partition)
            self.add(f"WINDOW {func} OVER (PARTITION BY {keys})", PARTITIONS, where)
        else:
            order = spec.args.get("order")
            self.add(f"WINDOW {func} OVER ({_text(order) if order else ''})", FULL, where, (
                f"`{func}` has no PARTITION BY, so any change would recompute it over all "
                "rows; add PARTITION BY on a key so only the partitions that changed are "
                "recomputed",), f"window function {func} without PARTITION BY")

    # -- expressions -------------------------------------------------------------------------

    def scan(self, expr: exp.Expression) -> None:
        """Blockers inside one expression: subqueries and functions a refresh cannot replay."""
        for node in _scope(expr):
            if isinstance(node, (exp.Query, exp.Subquery)):
                self.subquery(node)
            elif isinstance(node, exp.StrToUnix) and isinstance(node.this, exp.CurrentTimestamp) \
                    and not node.this._meta:
                self.add("nondeterministic function unix_timestamp()", FULL, self.pos(node),
                         (fn.why_nondeterministic("unix_timestamp"),), True)
            elif fn.is_nondeterministic(node) and not (
                    isinstance(node.parent, exp.StrToUnix) and not node._meta):
                name = node.name.lower() if isinstance(node, exp.Column) \
                    else fn.written_name(node, self.sql)
                self.add(f"nondeterministic function {name}()", FULL, self.pos(node),
                         (fn.why_nondeterministic(name),), True)
            elif fn.is_user_defined(node):
                name = fn.written_name(node, self.sql)
                if isinstance(node.parent, exp.Dot):
                    name = f"{_text(node.parent.this)}.{name}"
                self.add(f"user-defined function {name}()", FULL, self.pos(node),
                         (_ADVICE["udf"],), True)

    def subquery(self, node: exp.Expression) -> None:
        parent = node.parent
        negated = "NOT " if isinstance(parent and parent.parent, exp.Not) else ""
        if isinstance(parent, exp.Exists):
            label, kw, advice = f"{negated}EXISTS subquery", T.EXISTS, "EXISTS"
        elif isinstance(parent, exp.In):
            label, kw, advice = f"{negated}IN subquery", T.IN, "EXISTS"
        elif isinstance(parent, (exp.Any, exp.All)):
            label, kw, advice = f"{parent.key.upper()} subquery", T.SELECT, "EXISTS"
        else:
            label, kw, advice = "scalar subquery", T.SELECT, "scalar"
        self.add(label, FULL, self.pos(node, kw), (_ADVICE[advice],), True)
