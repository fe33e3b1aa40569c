"""The analyzer's walk over queries and SELECT blocks: set operations, WITH, ORDER BY / LIMIT,
and each block's clauses in the order it evaluates them."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import TokenType as T

from dtcli.sql import functions as fn
from dtcli.sql.analysis.aggregates import AggregateRules
from dtcli.sql.analysis.from_items import FromItemRules
from dtcli.sql.analysis.nodes import at_line, level_nodes, selective, text_of
from dtcli.sql.analysis.recorder import Recorder
from dtcli.sql.analysis.result import OperatorInfo
from dtcli.sql.analysis.strategies import (
    ADVICE,
    CTE,
    FILTER_GROUPS,
    FILTER_PARTITIONS,
    FULL,
    NO_ORDER,
    ROWS,
    ROWWISE,
    SINGLE_ROW,
    UNION_ALL,
)
from dtcli.sql.incremental_rewrite import Unsupported, shapes
from dtcli.sql.rules import top_n
from dtcli.sql.rules._notes import COPY


class Analyzer(FromItemRules, AggregateRules, Recorder):
    """The walk over queries and SELECT blocks; FROM items and joins are from_items.py, GROUP BY,
    DISTINCT, windows and expressions aggregates.py, the rows and positions recorder.py."""

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

