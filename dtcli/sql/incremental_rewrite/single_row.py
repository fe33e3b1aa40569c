"""A one-row FROM item joined to many rows, whose change often leaves its row as it was.

A scalar subquery's value, NOT IN's emptiness and NULL flags, an uncorrelated EXISTS: the rules
(sql/rules) join such a one-row aggregate to every row that reads it. Its change is always its
row at the new version (plus) and at the old one (minus), however little its inputs changed, so
the delta rule's term for it joins both rows with the whole other side: every row recomputed
twice, to cancel out when the value did not move (a row of the subquery's input changed
without changing its MAX, a supplier without complaints changed for NOT IN's set).

So the item's change is materialised once (the two rows, with a sign column), and compared:
when the new row equals the old one the item counts as unchanged and no term reads it. When it
did change, its terms read the materialised rows instead of recomputing the aggregate twice.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.incremental_rewrite import shapes
from dtcli.sql.incremental_rewrite.pushdown import equalities
from dtcli.sql.incremental_rewrite.relations import (
    MINUS,
    PLUS,
    KeySet,
    Unsupported,
    alias_of,
    block_items,
    is_table_ref,
    union_all,
)

SIGN = "__dt_sign"


class SingleRows:
    """Per one-row item of the compiled query (by its SQL), its materialised change: a KeySet
    over the rows with their SIGN, or None when its row is unchanged."""

    def __init__(self, compiler):
        self.compiler = compiler
        self.memo: dict[str, KeySet | None] = {}

    def columns(self, item: exp.Expression) -> list[str] | None:
        """The output names of a derived table whose body is a one-row aggregate, else None."""
        if not isinstance(item, exp.Subquery):
            return None
        body = item.this
        while isinstance(body, exp.Subquery):
            body = body.this
        if not isinstance(body, exp.Select) or body.args.get("limit") or body.args.get("offset"):
            return None
        try:
            shape = shapes.shape(body)
        except Unsupported:
            return None
        # keys [] is also a window without PARTITION BY (one partition of many rows)
        if shape is None or shape.keys != [] or shape.join is not None or body.args.get("group") \
                or body.args.get("qualify") or any(isinstance(n, exp.Window) for n in body.walk()):
            return None
        alias = item.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else \
            [e.alias_or_name for e in body.expressions]
        if len(names) != len(body.expressions) or any(not n or n == "*" for n in names) \
                or len({n.lower() for n in names}) != len(names) or SIGN in names:
            return None
        return names

    def change(self, item: exp.Expression) -> KeySet | None | bool:
        """The materialised change of a one-row item whose inputs changed; None when its row
        did not change; False when `item` is not such an item."""
        names = self.columns(item)
        if names is None or not self.compiler.changed_inputs(item):
            return False
        key = item.sql(dialect="spark")
        if key in self.memo:
            return self.memo[key]
        body = item.this
        parts = []
        for sign, weight in ((PLUS, 1), (MINUS, -1)):
            query = self.compiler.delta(body, sign)
            if query is not None:
                parts.append(exp.select(*[exp.column(n, "__dt_r") for n in names],
                                        exp.alias_(exp.Literal.number(weight), SIGN))
                             .from_(exp.Subquery(this=query, alias=exp.TableAlias(
                                 this=exp.to_identifier("__dt_r"), columns=[
                                     exp.to_identifier(n) for n in names]))))
        if not parts:       # no term reads a changed row: a one-row item inside it did not move
            self.memo[key] = None
            return None
        rows = self.compiler.materialize(union_all(parts))
        differ = self.compiler.materialize(exp.select(exp.alias_(exp.Count(this=exp.Star()), "__dt_c0"))
                                           .from_(exp.Subquery(this=exp.Except(
                                               this=self.side(rows, names, 1),
                                               expression=self.side(rows, names, -1),
                                               distinct=False), alias=exp.TableAlias(
                                                   this=exp.to_identifier("__dt_d")))))
        same = differ.rows is not None and differ.rows == [(0,)]
        self.memo[key] = None if same else rows
        return self.memo[key]

    @staticmethod
    def side(rows: KeySet, names: list[str], sign: int) -> exp.Select:
        return exp.select(*[exp.column(n) for n in names]).from_(exp.to_table(rows.view)).where(
            exp.EQ(this=exp.column(SIGN), expression=exp.Literal.number(sign)))

    def relation(self, item: exp.Subquery, rows: KeySet, how: str) -> exp.Subquery:
        """The item's change `how` (plus, minus or both) read from its materialised rows."""
        names = self.columns(item) or []
        query = exp.select(*[exp.column(n) for n in names]).from_(exp.to_table(rows.view))
        if how == PLUS:
            query = query.where(exp.EQ(this=exp.column(SIGN), expression=exp.Literal.number(1)))
        elif how == MINUS:
            query = query.where(exp.EQ(this=exp.column(SIGN), expression=exp.Literal.number(-1)))
        alias = item.args.get("alias")
        return exp.Subquery(this=query, alias=alias.copy() if alias is not None else None)


def moves_every_row(query: exp.Expression, one_row: set[str], changed: set[str]) -> bool:
    """Whether a changed input of one row (`one_row`: a kept aggregate without GROUP BY, as
    TPC-H Q22's average balance or Q11's total value) is joined to the other rows of its block
    by no equality: compared with every row (`c_acctbal > avg`), its moved value can move every
    row, and the delta rule's term for it reads all of them at both versions to find which did.
    A keyed DT then recomputes all of its keys at the new version instead (compiler.keyed)."""
    for block in query.find_all(exp.Select):
        for item in block_items(block):
            name = item.name.lower() if isinstance(item, exp.Table) and is_table_ref(item) else None
            if name is None or name not in one_row or name not in changed:
                continue
            alias = (alias_of(item) or "").lower()
            if not any(alias in (left.table.lower(), right.table.lower()) for left, right in equalities(block)):
                return True
    return False
