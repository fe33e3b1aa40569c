"""The notes rules leave on what they rewrite (see the package docstring): a module of its own so
that the rule modules, which the package imports to list them, and the analyzer, which rule
modules' helpers live beside, import it without a circle."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

# key of a node's meta holding the index of the Rewrite note that created it
REWRITE = "dt_rewrite"
# key of the meta of a block a rule copied from one the analyzer reads elsewhere in the query (a
# grouping set's branch): the index of the note. Explain lists no rows of its own for it; the
# compiler's rule for its shape is still asked, and a refusal lands on the note's row.
COPY = "dt_copy"
# key of a construct's meta holding why a rule left it as written (the analyzer says it)
LEFT_AS_IS = "dt_left_as_is"


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


def note_of(node: exp.Expression, rewrites: tuple[Rewrite, ...]) -> Rewrite | None:
    """The note of the rewrite that created `node`, if a rule did."""
    index = node.meta.get(REWRITE) if node.meta else None
    return rewrites[index] if isinstance(index, int) and 0 <= index < len(rewrites) else None


def left_as_is(node: exp.Expression, reason: str) -> None:
    """Keep a construct as written, with the reason the analyzer gives for its FULL refresh."""
    node.meta[LEFT_AS_IS] = reason


def why_left(node: exp.Expression) -> str | None:
    """Why a rule left `node` (or the query a subquery node wraps) as written, if one did."""
    for n in (node, node.this if isinstance(node, exp.Subquery) else None):
        if isinstance(n, exp.Expression) and n.meta and LEFT_AS_IS in n.meta:
            return n.meta[LEFT_AS_IS]
    return None
