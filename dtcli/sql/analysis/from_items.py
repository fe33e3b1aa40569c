"""The analyzer's rules for FROM items, joins and LATERAL VIEWs: one operator row each, with the
join's strategy and the clustering advice that makes its lookups prune files."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import TokenType as T

from dtcli.sql import functions as fn
from dtcli.sql.analysis.nodes import join_keys, text_of, where_keys
from dtcli.sql.analysis.strategies import (
    ADVICE,
    CONSTANT,
    DERIVED,
    FROM_CTE,
    FULL,
    INNER,
    OUTER,
    ROWS,
    ROWWISE,
    SEMI_ANTI,
)


class FromItemRules:
    """Mixed into Analyzer: it provides `add`, `mark`, `pos`, `noted`, `add_rewritten`, `scan`,
    `query` and the state they use."""

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
        # `FROM a, b WHERE a.k = b.k` (sqlglot makes the comma a CROSS join) or `CROSS JOIN b`
        # with the same WHERE: an inner join whose condition is in WHERE
        if kind in ("", "CROSS") and not (side or join.args.get("on") or join.args.get("using") or join.method):
            keys = where_keys(join, rel)
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
        elif not (join.args.get("on") or join.args.get("using") or keys or join.method):
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
