"""The analyzer's walk over queries, FROM items and joins; recording operators and blockers."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token
from sqlglot.tokens import TokenType as T

from dtcli.sql import functions as fn
from dtcli.sql.analysis.aggregates import AggregateRules
from dtcli.sql.analysis.nodes import at_line, first_start, join_keys, level_nodes, selective, text_of
from dtcli.sql.analysis.result import OperatorInfo, QueryAnalysis
from dtcli.sql.analysis.strategies import (
    ADVICE,
    CONSTANT,
    CTE,
    DERIVED,
    FILTER_GROUPS,
    FILTER_PARTITIONS,
    FROM_CTE,
    FULL,
    HARD_TOKENS,
    INNER,
    NO_ORDER,
    OUTER,
    ROWS,
    ROWWISE,
    SEMI_ANTI,
    SINGLE_ROW,
    UNION_ALL,
)
from dtcli.sql.incremental_rewrite import Unsupported, shapes
from dtcli.sql.rules import top_n
from dtcli.sql.rules._notes import COPY, REWRITE, Rewrite, note_of


class Analyzer(AggregateRules):
    def __init__(self, sql: str, tokens: list[Token], root: exp.Expression,
                 rewrites: tuple[Rewrite, ...] = ()):
        self.sql, self.tokens, self.root, self.rewrites = sql, tokens, root, rewrites
        self.index = {tok.start: i for i, tok in enumerate(tokens)}
        self.ops: list[OperatorInfo] = []
        self.blockers: list[tuple[int, int, str]] = []
        self.ctes: dict[str, exp.Expression] = {}
        self.row_of: dict[int, int] = {}    # id of a construct's node -> its row in self.ops
        self.note_rows: dict[int, int] = {}  # a rule's note (its index) -> the row it labels

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
        start = first_start(node)
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
            if tok.token_type in HARD_TOKENS:
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
                if type(n) is type(node) and first_start(n) is None]
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
            self.block(where, f"{what}{at_line(line)} cannot be refreshed incrementally")
        self.ops.append(OperatorInfo(operator, FULL if block else strategy,
                                     tuple(considerations), line, not block))

    def noted(self, node: exp.Expression) -> Rewrite | None:
        """The rules' note on a node they created (sql/rules), if any."""
        return note_of(node, self.rewrites)

    def at(self, start: int | None) -> tuple[int | None, int]:
        """Line and offset of a position in the user's file (a rule's note's `start`)."""
        if start is None:
            return None, 0
        i = self.index.get(start)
        return (self.tokens[i].line if i is not None else None), start

    def add_rewritten(self, node: exp.Expression, note: Rewrite) -> None:
        """The row of a construct a rule replaced: labelled as the user wrote it, at its line,
        with how its replacement refreshes; `node` (what the rule created) is marked, so that
        a shape refusal of the compiler lands on this row."""
        self.mark(node)
        label = note.construct + (f" → {note.rewritten_as}" if note.rewritten_as else "")
        self.add(label, note.strategy, self.at(note.start), note.considerations)

    def rewritten_row(self, node: exp.Expression) -> int:
        """The row of the rule's note on `node`: added when the first node the rule made for that
        construct is met (a rule may make several: one row per construct the user wrote)."""
        index = node.meta[REWRITE]
        if index not in self.note_rows:
            self.note_rows[index] = len(self.ops)
            self.add_rewritten(node, self.rewrites[index])
        return self.note_rows[index]

    def block(self, where: tuple[int | None, int], reason: str) -> None:
        self.blockers.append((where[1], len(self.blockers), reason))

    def mark(self, node: exp.Expression) -> None:
        """The next row recorded is `node`'s: the compiler's shape rule may name it (shape)."""
        self.row_of[id(node)] = len(self.ops)

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
                self.add(f"WITH RECURSIVE {name}", FULL, where, (ADVICE["RECURSIVE"],), True)
            else:
                advice = ("a long WITH chain is hard to tune; consider splitting its stages into "
                          "dynamic tables of their own",) if k == 0 and len(ctes) > 3 else ()
                self.add(f"WITH {name}", CTE, where, advice)
                self.query(cte.this)
            self.ctes[name.lower()] = cte.this

    def set_operation(self, node: exp.SetOperation) -> None:
        if self.noted(node) is not None:        # a rule's UNION ALL: its branches are the user's
            self.row_of[id(node)] = self.rewritten_row(node)
            self.query(node.this)
            self.query(node.expression)
            return
        self.query(node.this)
        distinct = node.args.get("distinct") is not False
        label = type(node).__name__.upper() + ("" if distinct else " ALL")
        where = self.pos(node.expression, T.UNION, T.EXCEPT, T.INTERSECT)
        if isinstance(node, exp.Union) and not distinct:
            self.add(label, UNION_ALL, where)
        else:     # sql/rules/set_operations could not rewrite it (its columns are not known)
            self.add(label, FULL, where, (ADVICE["set operation"],), True)
        self.query(node.expression)

    def modifiers(self, node: exp.Expression) -> None:
        top = node.args.get("limit") or node.args.get("offset")
        note = self.noted(top) if top is not None else None
        if note is not None:        # a top-N the top_n rule split: one row for ORDER BY … LIMIT
            self.add(note.construct, note.strategy, self.pos(node.args.get("order") or top, T.ORDER_BY,
                                                             T.LIMIT, T.OFFSET), note.considerations)
        for arg, label, kw in (("order", "ORDER BY", T.ORDER_BY), ("sort", "SORT BY", T.SORT_BY),
                               ("distribute", "DISTRIBUTE BY", T.DISTRIBUTE_BY),
                               ("cluster", "CLUSTER BY", T.CLUSTER_BY)):
            if node.args.get(arg) and not (note is not None and arg == "order"):
                self.add(label, NO_ORDER, self.pos(node.args[arg], kw),
                         (f"a table keeps no row order: sort in the query that reads it; here "
                          f"{label} only costs time",))
        for arg, label, kw in (("limit", "LIMIT", T.LIMIT), ("offset", "OFFSET", T.OFFSET)):
            if node.args.get(arg) and note is None:
                self.limit(node, label, self.pos(node.args[arg], kw))

    def limit(self, node: exp.Expression, label: str, where: tuple[int | None, int]) -> None:
        """A LIMIT / OFFSET the top_n rule did not split: FULL, saying why (outermost) or what
        to do (inside a subquery)."""
        why = top_n.why_not(node) if node is self.root else None
        if why is None:
            self.add(label, FULL, where, (ADVICE["LIMIT inside" if node is not self.root else label],), True)
            return
        self.ops.append(OperatorInfo(label, FULL, (why,), where[0], False))
        self.block(where, f"{label}{at_line(where[0])} cannot be refreshed incrementally: {why}")

    def select(self, sel: exp.Select) -> None:
        blocked = len(self.blockers)
        copied = sel.meta.get(COPY) if sel.meta else None
        if copied is not None:       # a rule's copy of a block read elsewhere: its shape only
            for node in (sel, sel.args.get("group"), sel.args.get("having")):
                if node is not None:
                    self.row_of[id(node)] = self.note_rows.get(copied, len(self.ops))
            self.shape(sel)
            return
        if self.noted(sel) is not None:
            self.rule_block(sel)
        else:
            self.select_operators(sel)
        if len(self.blockers) == blocked:
            self.shape(sel)

    def rule_block(self, sel: exp.Select) -> None:
        """A SELECT a rule made (sql/rules) in place of a construct the user wrote: that construct
        is one row, which a refusal of the block's shape lands on; the queries it reads (the
        user's, or more of the rule's) are walked as usual."""
        row = self.rewritten_row(sel)
        for node in (sel.args.get("group"), sel.args.get("distinct"), sel.args.get("having"),
                     *(sel.args.get("laterals") or ())):
            if node is not None:
                self.row_of[id(node)] = row
        from_ = sel.args.get("from_") or sel.args.get("from")
        if from_ is not None:
            if isinstance(from_.this, exp.Subquery):
                self.query(from_.this)
            else:
                self.relation(from_.this, "FROM", self.pos(from_, T.FROM))
        for join in sel.args.get("joins") or ():
            self.join(join)

    def shape(self, sel: exp.Select) -> None:
        """The change compiler's rule for how a block is keyed (one outer join, GROUP BY keys,
        window partitions, DISTINCT rows), asked here as well, so that explain's rows and the
        refresh mode give one verdict: when it refuses a block whose every construct is known
        here (two outer joins, ROLLUP, windows without a common PARTITION BY...), the row of the
        construct it names forces FULL in its words (a row for the block if it names none)."""
        try:
            shapes.shape(sel)
        except Unsupported as err:
            row = self.row_of.get(id(err.node)) if err.node is not None else None
            if row is None:         # no one construct's row: one for the block
                where = self.pos(sel.expressions[0], T.SELECT)
                self.ops.append(OperatorInfo("SELECT (its shape as a whole)", FULL, (str(err),), where[0], False))
                self.block(where, f"the SELECT{at_line(where[0])} cannot be refreshed incrementally: {err}")
                return
            op = self.ops[row]
            self.ops[row] = OperatorInfo(op.operator, FULL, (str(err), *op.considerations), op.line, False)
            self.block(self.pos(err.node),
                       f"{op.operator}{at_line(op.line)} cannot be refreshed incrementally: {err}")

    def select_operators(self, sel: exp.Select) -> None:
        from_ = sel.args.get("from_") or sel.args.get("from")
        if from_ is not None and self.noted(from_.this) is not None:
            # a derived table a rule made (nested keyed joins, a lifted aggregation)
            self.rewritten_row(from_.this)
            self.query(from_.this)
        elif from_:
            self.relation(from_.this, "FROM", self.pos(from_, T.FROM))
        for join in sel.args.get("joins") or ():
            self.join(join)
        for lateral in sel.args.get("laterals") or ():
            self.lateral(lateral)
        if sel.args.get("where"):
            cond = sel.args["where"].this
            hint = selective(cond)
            self.add("WHERE", ROWS, self.pos(sel.args["where"], T.WHERE), (
                f"`{hint}` probably keeps few rows: a refresh still reads every change of its "
                "inputs to find the matching ones, even when none match",) if hint else ())
            self.scan(cond)
        group = sel.args.get("group")
        aggregates = [n for e in sel.expressions + [sel.args.get("having")] if e
                      for n in level_nodes(e) if fn.is_aggregate(n) and not fn.is_windowed(n)]
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
            for node in level_nodes(e):
                if isinstance(node, exp.Window):
                    self.window(sel, node)
        if qualify:
            self.mark(qualify)
            self.add("QUALIFY", FILTER_PARTITIONS, self.pos(qualify, T.QUALIFY))
            self.scan(qualify.this)
        if sel.args.get("distinct"):
            self.distinct(sel)
        self.add("SELECT", ROWS, self.pos(sel.expressions[0], T.SELECT))
        for e in sel.expressions:
            inner = e.this if isinstance(e, (exp.Alias, exp.Aliases)) else e
            if isinstance(inner, exp.Func) and fn.written_name(inner, self.sql) in fn.GENERATORS:
                self.mark(inner)
                self.add(f"{text_of(inner)} in SELECT", ROWWISE, self.pos(inner))
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
                self.add(f"{verb} {text_of(rel.this)}", ROWWISE, where)
                self.scan(rel.this)
            elif name in fn.CONSTANT_TABLE_FUNCTIONS or name in fn.GENERATORS:
                self.add(f"{verb} {name}(...)", strategy or CONSTANT, where, considerations)
            else:
                self.add(f"{verb} {name}(...)", FULL, where, (ADVICE["table function"],),
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
                     (ADVICE["TABLESAMPLE"],), True)
        for pivot in rel.args.get("pivots") or ():
            label = "UNPIVOT" if pivot.args.get("unpivot") else "PIVOT"
            self.add(label, FULL, self.pos(pivot, T.PIVOT, T.UNPIVOT), (ADVICE[label],), True)

    def join(self, join: exp.Join) -> None:
        rel = join.this
        if isinstance(rel, exp.Lateral):
            self.lateral(rel)
            return
        note = self.noted(join)
        if note is not None:          # a join a rule made of a subquery, a set operation...
            self.add_rewritten(join, note)
            if isinstance(rel, exp.Subquery):
                self.query(rel)
            if join.args.get("on"):
                self.scan(join.args["on"])
            return
        self.mark(join)
        where = self.pos(join, T.JOIN)
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        keys = join_keys(join)
        key_text = ", ".join(keys) or "the join key"
        no_keys = ("the join has no equality condition, so every change is matched against "
                   "the whole other side; join on equal keys if you can",)
        if kind in ("SEMI", "ANTI"):
            advice = (f"a change on either side recomputes the left rows of every join key it "
                      f"touches; cluster the right side by {key_text} so those lookups prune "
                      f"files",) if keys else no_keys
            self.relation(rel, f"LEFT {kind} JOIN", where, SEMI_ANTI, advice)
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
            self.add(f"{label} {text_of(gen)}", ROWWISE, where)
            self.scan(gen)
        else:
            self.add("LATERAL subquery", FULL, where, (ADVICE["LATERAL"],), True)
