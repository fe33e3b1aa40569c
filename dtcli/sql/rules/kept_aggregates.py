"""Aggregates inside a query kept as internal tables of running totals, read by the DT as inputs.

A subquery the rules turned into a join (the average quantity per part of TPC-H Q17, the
revenue per supplier of Q15, the quantity per part and supplier of Q20) is a derived table
grouped by some key. Recomputing the groups a change touches reads every input row of those
groups, twice (at the new and at the old version), for every refresh, wherever they lie: for
Q20 that is lineitem scanned at three levels and two versions. Snowflake's advice is to split
such a query into two dynamic tables by hand; dt does it for the user:

* every derived table (a FROM item) that is an aggregate of COUNT / SUM / AVG over inputs,
  with no query nested in it, is kept as an internal table of running totals
  (sql/rules/aggregate_totals.py's `totals`: per group its keys, COUNT(*), and the COUNT and
  SUM of each argument), which a change adjusts by its own rows;
* the DT's query reads it as an input of its own (`__dt_kept<n>`, named like the derived
  table's outputs: the engine binds it to the aggregate's values over the totals, the rule's
  `over`, and its change to those values over the totals' change), so the derived table's
  change costs the change, its old rows are read, not recomputed.

Equal derived tables (a CTE read twice, as Q15's) share one internal table. A recompute of the
DT rebuilds the totals, then reads them as the incremental refresh does.

>>> import sqlglot
>>> q = sqlglot.parse_one(
...     "SELECT SUM(l.p) / 7.0 AS y FROM l AS l JOIN (SELECT l.k AS k, 0.2 * AVG(l.q) AS v "
...     "FROM l AS l GROUP BY l.k) AS sq ON sq.k = l.k WHERE l.q < sq.v", read="spark")
>>> [k.block.sql(dialect="spark") for k in find(q)]
['SELECT l.k AS k, 0.2 * AVG(l.q) AS v FROM l AS l GROUP BY l.k']
>>> print(substitute(q, find(q)).sql(dialect="spark"))
SELECT SUM(l.p) / 7.0 AS y FROM l AS l JOIN __dt_kept1 AS sq ON sq.k = l.k WHERE l.q < sq.v
>>> find(q)[0].totals.sql(dialect="spark")
'SELECT l.k AS __dt_k0, COUNT(*) AS __dt_n, COUNT(l.q) AS __dt_c0, SUM(l.q) AS __dt_s0 FROM l AS l GROUP BY l.k'

What is not kept: an aggregate of MIN / MAX (no running total), one over a query of its own
(kept only innermost), and the outermost block (the DT's own rows, or aggregate_totals):

>>> find(sqlglot.parse_one("SELECT t.a FROM t AS t JOIN (SELECT u.k AS k, MIN(u.v) AS m FROM u AS u "
...                        "GROUP BY u.k) AS x ON x.k = t.k", read="spark"))
[]
>>> find(sqlglot.parse_one("SELECT u.k AS k, SUM(u.v) AS s FROM u AS u GROUP BY u.k", read="spark"))
[]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql.rules import aggregate_totals

PREFIX = "__dt_kept"        # the input name the DT's query reads a kept aggregate by
ROLE = "kept_aggregate_"    # its internal table's role: kept_aggregate_<n>


@dataclass(frozen=True)
class Kept:
    name: str                  # the input the substituted query reads: __dt_kept<n>
    role: str                  # the internal table's role
    block: exp.Select          # the derived table's query, as the DT's query has it
    split: aggregate_totals.Totals

    @property
    def totals(self) -> exp.Select:
        return self.split.totals


def find(query: exp.Expression, keys: Mapping[str, Sequence[str]] | None = None) -> list[Kept]:
    """The derived tables of `query` (CTEs inlined) kept as running totals, one per distinct
    block, in the order they are first met. `keys`: the declared primary key of each input by
    name (in lower case); a block whose groups are small by its key (`by_key`) is not kept. Each keepable block
    is numbered by its place among all of them, kept or not, so that a block's role names the
    same aggregate whichever others are kept."""
    return [Kept(f"{PREFIX}{n}", f"{ROLE}{n}", body.copy(), split)
            for n, body, split in _keepable_blocks(query) if _small_groups(body, split, keys or {}) is None]


@dataclass(frozen=True)
class ByKey:
    """A keepable aggregate not kept: it groups by the leading columns of `table`'s `key`."""
    block: exp.Select
    table: str
    key: tuple[str, ...]


def by_key(query: exp.Expression, keys: Mapping[str, Sequence[str]]) -> list[ByKey]:
    """The keepable derived tables of `query` that `find` leaves to be recomputed by key."""
    judged = [(body, _small_groups(body, split, keys)) for _, body, split in _keepable_blocks(query)]
    return [ByKey(body.copy(), *small) for body, small in judged if small is not None]


def _keepable_blocks(query: exp.Expression) -> Iterator[tuple[int, exp.Select, aggregate_totals.Totals]]:
    """Each distinct derived table whose totals could be kept, numbered from 1, with its split."""
    seen: list[exp.Select] = []
    for node in _inlined(query).find_all(exp.Subquery):
        body = node.this
        if not _keepable(node) or any(b == body for b in seen):
            continue
        split = aggregate_totals.split(body, own_rows=True)
        if split is not None:
            seen.append(body)
            yield len(seen), body, split


def _small_groups(block: exp.Select, split: aggregate_totals.Totals,
                  keys: Mapping[str, Sequence[str]]) -> tuple[str, tuple[str, ...]] | None:
    """The input (and its key) by whose leading key columns the block groups (all of a
    one-column key, all but the last of a longer one: the lines of an order, the suppliers of a
    part), else None. Each group is then a few input rows, found by key, and the running totals
    would be about as many rows as the input: recomputing the groups a change touches costs no
    more than keeping the totals up, one commit less (measured at SF10: TPC-H Q18 4.9 s against
    6.6 s kept, Q11 5.9 against 9.1 s).

    >>> import sqlglot
    >>> block = sqlglot.parse_one("SELECT l.k AS k, SUM(l.q) AS s FROM lineitem AS l GROUP BY l.k", read="spark")
    >>> split = aggregate_totals.split(block, own_rows=True)
    >>> _small_groups(block, split, {"lineitem": ["k", "n"]}), _small_groups(block, split, {"lineitem": ["n", "k"]})
    (('lineitem', ('k', 'n')), None)
    """
    grouped = {(c.table.lower(), c.name.lower()) for c in split.keys if isinstance(c, exp.Column)}
    for table in block.find_all(exp.Table):
        key = keys.get(table.name.lower())
        if not key:
            continue
        leading = key[:-1] if len(key) > 1 else key
        if all((table.alias_or_name.lower(), c.lower()) in grouped for c in leading):
            return table.name, tuple(key)
    return None


def substitute(query: exp.Expression, kept: list[Kept]) -> exp.Expression:
    """`query` (CTEs inlined) with each kept derived table read from its input instead."""
    if not kept:
        return query

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Subquery) and _keepable(node):
            for k in kept:
                if node.this == k.block:
                    alias = node.args.get("alias")
                    return exp.Table(this=exp.to_identifier(k.name),
                                     alias=alias.copy() if alias is not None else None)
        return node
    return _inlined(query).transform(swap, copy=False)


def label(block_sql: str) -> str:
    """A kept derived table's query in one short line, for explain's operator rows."""
    import sqlglot

    from dtcli.sql.rules._blocks import short

    return short(sqlglot.parse_one(block_sql, read="spark"), 80)


def _inlined(query: exp.Expression) -> exp.Expression:
    from dtcli.sql.incremental_rewrite.ctes import inline_ctes

    return inline_ctes(query)


def _keepable(node: exp.Subquery) -> bool:
    """A FROM item that is one SELECT with a name, no query nested in it and no row limit."""
    body = node.this
    return (isinstance(node.parent, (exp.From, exp.Join)) and isinstance(body, exp.Select)
            and bool(node.alias) and not body.args.get("limit") and not body.args.get("offset")
            and not body.args.get("laterals")
            and not any(isinstance(n, (exp.Subquery, exp.Query)) for n in body.walk() if n is not body)
            and any(isinstance(t, exp.Table) for t in body.find_all(exp.Table)))
