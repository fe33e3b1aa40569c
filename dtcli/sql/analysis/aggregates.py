"""The analyzer's rules for GROUP BY, DISTINCT, windows and expressions (subqueries, functions)."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import TokenType as T

from dtcli.sql import functions as fn
from dtcli.sql.analysis.nodes import group_keys, has_star, level_nodes, named_outputs, text_of
from dtcli.sql.analysis.result import OperatorInfo
from dtcli.sql.analysis.strategies import ADVICE, DISTINCT_ROWS, FULL, GROUPS, ONE_PARTITION, PARTITIONS
from dtcli.sql.rules._notes import why_left


class AggregateRules:
    """Mixed into Analyzer: it provides `add`, `mark`, `pos`, `block`, `query` and the state they use."""

    # -- aggregation and windows -------------------------------------------------------------

    def non_subtractable(self, aggregates: list[exp.Expression], scope: str,
                         remedy: str = "keep groups small or the input append-only",
                         ) -> tuple[str, ...]:
        names = [text_of(a) for a in aggregates
                 if isinstance(a, fn.NON_SUBTRACTABLE) or isinstance(a.this, exp.Distinct)
                 or fn.written_name(a, self.sql) in fn.NON_SUBTRACTABLE_NAMES]
        if not names:
            return ()
        return (f"{', '.join(dict.fromkeys(names))}: a deleted or updated row cannot be "
                f"subtracted, so it makes the refresh recompute {scope}; {remedy}",)

    def group_by(self, sel: exp.Select, group: exp.Group, aggregates) -> None:
        keys = group_keys(group, sel)
        label = text_of(group).strip()
        advice: list[str] = []
        missing: list[exp.Expression] = []
        for key in keys:
            target = self.resolve_key(key, sel)
            if target is None:
                missing.append(key)
                target = key
            if not isinstance(target, (exp.Column, exp.Literal)):
                advice.append(f"grouping key `{text_of(target)}` is an expression, not a column: "
                              "finding the groups that changed may scan far more data; "
                              "compute it as a column in an upstream dynamic table and group "
                              "by that column")
        advice += self.non_subtractable(aggregates, "its whole group from the input")
        if missing:
            # the block is still recomputed for the touched keys only (the compiler restricts its
            # input by the key expressions), but its rows cannot be told apart by key in the
            # result: the change is the groups before and after, netted row by row
            named = ", ".join(f"`{text_of(k)}`" for k in missing)
            advice.append(f"grouping key {named} is not an output column: a change recomputes "
                          "the groups it touches both before and after it and applies the "
                          "difference row by row; selecting the key lets the refresh replace "
                          "those groups in place")
        where = self.pos(group, T.GROUP_BY)
        if self.noted(group) is not None:      # a rule's GROUP BY (a grouping set's): its row
            row = self.rewritten_row(group)
            op = self.ops[row]
            self.ops[row] = OperatorInfo(op.operator, op.strategy, (*op.considerations, *advice),
                                         op.line, op.incremental)
        else:
            self.mark(group)
            self.ops.append(OperatorInfo(label, GROUPS, tuple(advice), where[0], True))
        for key in keys:
            self.scan(key)

    def resolve_key(self, key: exp.Expression, sel: exp.Select) -> exp.Expression | None:
        """The output expression a GROUP BY key stands for, or None if it is not an output."""
        outputs = named_outputs(sel)
        if isinstance(key, exp.Literal) and key.is_int:
            n = int(key.name)
            return outputs[n - 1][1] if 0 < n <= len(outputs) else None
        for _name, expr in outputs:
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
        return key if has_star(sel) and isinstance(key, exp.Column) else None

    def distinct(self, sel: exp.Select) -> None:
        advice: tuple[str, ...] = ()
        if sel.args.get("group"):
            advice = ("DISTINCT looks redundant: the rows of a GROUP BY are already unique per "
                      "key; removing it saves a duplicate check on every refresh",)
        elif self.distinct_input(sel):
            advice = ("DISTINCT looks redundant: its input is already unique (GROUP BY or "
                      "DISTINCT upstream); removing it saves a duplicate check on every "
                      "refresh",)
        self.mark(sel.args["distinct"])
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
            unique = {name for name, _ in named_outputs(src)}
        else:
            targets = [self.resolve_key(k, src) for k in group_keys(src.args["group"], src)]
            unique = {name for name, expr in named_outputs(src) if any(t is expr for t in targets)}
        if has_star(sel):
            return True
        kept = {e.unalias().name.lower() for e in sel.expressions
                if isinstance(e.unalias(), exp.Column)}
        return bool(unique) and unique <= kept

    def window(self, sel: exp.Select, win: exp.Window) -> None:
        spec = win
        if win.args.get("alias") and not win.args.get("partition_by"):
            named = {w.name.lower(): w for w in sel.args.get("windows") or ()}
            spec = named.get(win.args["alias"].name.lower(), win)
        func = text_of(win.this)
        partition = spec.args.get("partition_by") or []
        where = self.pos(win)
        self.mark(win)
        if partition:
            keys = ", ".join(text_of(p) for p in partition)
            self.add(f"WINDOW {func} OVER (PARTITION BY {keys})", PARTITIONS, where)
        else:
            order = spec.args.get("order")
            self.add(f"WINDOW {func} OVER ({text_of(order) if order else ''})", ONE_PARTITION, where, (
                f"`{func}` has no PARTITION BY: every change re-evaluates it over all rows; add "
                "PARTITION BY on a key so only the partitions that changed are recomputed",))

    # -- expressions -------------------------------------------------------------------------

    def scan(self, expr: exp.Expression) -> None:
        """Blockers inside one expression: subqueries and functions a refresh cannot replay."""
        for node in level_nodes(expr):
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
                    name = f"{text_of(node.parent.this)}.{name}"
                self.add(f"user-defined function {name}()", FULL, self.pos(node),
                         (ADVICE["udf"],), True)

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
        why = why_left(node)
        # left as written by dt's rewrite into joins (sql/rules/subqueries.py): its reason; a
        # query dt could not bind to its inputs is not rewritten at all: how to write it
        said = f"dt does not rewrite it into a join: {why}" if why else ADVICE[advice]
        self.add(label, FULL, self.pos(node, kw), (said,), True)
