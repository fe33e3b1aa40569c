"""Rewrites that put a DT's qualified query into forms the change compiler refreshes.

A user writes `WHERE EXISTS (...)`, `x NOT IN (...)`, a scalar subquery, `EXCEPT`, `ROLLUP`...;
the change compiler (`incremental_rewrite`) knows joins (inner, outer, semi, anti), GROUP BY,
DISTINCT, windows and UNION ALL. Each module here is one rule, in the manner of sqlglot's
optimizer rules: a function from a qualified query to an equivalent query (same rows as a
multiset, same output columns in the same order, SQL's NULL rules kept) in which one kind of
construct has been replaced by forms the compiler refreshes. A rule that cannot rewrite a
construct exactly leaves it where it is: the analyzer then names it and the DT refreshes FULL
with that reason. Never a wrong answer.

Every rewrite is recorded as a `Rewrite` note: what construct of the user's query it replaced,
where it was written, and how the replacement refreshes. `dt explain` prints those notes as the
operator rows of the constructs the user wrote (at their lines), and shows the rewritten query;
the nodes a rule creates carry the index of their note in `meta[REWRITE]`, so that the analyzer,
which walks the rewritten query (the one the compiler compiles), labels them with it. That is
how explain and the refresh agree by design: both read the one rewritten query.

The FULL refresh runs the query as written (Spark optimises subqueries itself); the incremental
refresh compiles the rewritten one; the differential tests prove the two equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

# key of a node's meta holding the index of the Rewrite note that created it
REWRITE = "dt_rewrite"


@dataclass(frozen=True)
class Rewrite:
    """One construct of the user's query that a rule replaced."""

    rule: str                      # the rule's module name, e.g. "subqueries"
    construct: str                 # as explain labels it: "EXISTS subquery", "NOT IN subquery"
    start: int | None              # offset of the construct in the user's file (None: unknown)
    strategy: str                  # how the replacement refreshes, in explain's words
    considerations: tuple[str, ...] = ()
    rewritten_as: str = ""         # the replacement in a few words: "LEFT SEMI JOIN ... ON ..."


@dataclass(frozen=True)
class Normalized:
    query: exp.Query
    rewrites: tuple[Rewrite, ...]


class Notes:
    """The rewrites made so far; a rule records one per construct it replaces."""

    def __init__(self) -> None:
        self.items: list[Rewrite] = []

    def add(self, rewrite: Rewrite, *nodes: exp.Expression) -> int:
        """Record `rewrite`; mark `nodes` (the nodes it created) with its index."""
        index = len(self.items)
        self.items.append(rewrite)
        for node in nodes:
            node.meta[REWRITE] = index
        return index


Rule = Callable[[exp.Query, Notes], exp.Query]

# The rules, in the order they run (each sees the output of the ones before it).
RULES: tuple[Rule, ...] = ()


def normalize(query: exp.Query) -> Normalized:
    """`query` (qualified, not modified) with every rule applied, and the notes of what changed."""
    notes = Notes()
    out = query.copy()
    for rule in RULES:
        out = rule(out, notes)
    return Normalized(out, tuple(notes.items))


def note_of(node: exp.Expression, rewrites: tuple[Rewrite, ...]) -> Rewrite | None:
    """The note of the rewrite that created `node`, if a rule did."""
    index = node.meta.get(REWRITE) if node.meta else None
    return rewrites[index] if isinstance(index, int) and 0 <= index < len(rewrites) else None
