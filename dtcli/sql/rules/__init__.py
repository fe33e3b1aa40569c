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

from sqlglot import exp

# The rule modules use helpers of sql/analysis, which reads the notes: both import them from
# `_notes`, never from this package (importing it first imports the rules).
from dtcli.sql.rules import (
    aggregate_totals,
    grouping_sets,
    kept_aggregates,
    keyed_joins,
    set_operations,
    subqueries,
    top_n,
)
from dtcli.sql.rules._notes import COPY, REWRITE, Normalized, Notes, Rewrite, note_of

__all__ = ["COPY", "REWRITE", "RULES", "SPLITS", "Normalized", "Notes", "Rewrite", "Rule", "normalize", "note_of"]

Rule = Callable[[exp.Query, Notes], exp.Query]

# The rules, in the order they run (each sees the output of the ones before it). top_n rewrites
# nothing: it records how the outermost ORDER BY … LIMIT is split (last: over the query the
# other rules made, which is what the change compiler compiles).
RULES: tuple[Rule, ...] = (grouping_sets.rewrite, set_operations.rewrite, subqueries.rewrite,
                          keyed_joins.rewrite, top_n.rewrite)


# Rules that split a DT's query into an internal table and the DT over it, applied by planning
# where the DT's config keeps that table (planning/internal.py): they rewrite nothing here.
SPLITS = (aggregate_totals, kept_aggregates)


def normalize(query: exp.Query) -> Normalized:
    """`query` (qualified, not modified) with every rule applied, and the notes of what changed."""
    notes = Notes()
    out = query.copy()
    for rule in RULES:
        out = rule(out, notes)
    return Normalized(out, tuple(notes.items))
