"""Turning a DT's query into queries for its changes (pure sqlglot; Spark only runs the output).

A change is a pair of multisets: rows that appear (plus) and rows that disappear (minus), so
the change of any relation is computed by two ordinary queries over the same columns as the
relation itself and no weight column ever has to travel through the user's SQL.

* A block of FROM items, inner/cross joins, WHERE, projections and LATERAL VIEW generators is
  linear in each FROM item, so its change is the sum over changed items i of the block with
  items before i at their new version, item i replaced by its change and items after i at their
  old version (the delta rule; self-joins work because every occurrence is replaced on its own).
  When several terms would scan one large input whole, that input's rows the changes reach are
  computed once (another callback) and read by every term instead, in that input's order
  (hub.py).
* UNION ALL adds its branches' changes. CTEs are inlined first so that every reference counts
  as an occurrence of its own.
* A block whose rows are not independent of each other (GROUP BY, DISTINCT, windows with
  PARTITION BY, one outer join, a scalar aggregate) is recomputed for the affected keys only:
  the keys of its input's changes are materialised (a callback), the block is evaluated at the
  new version restricted to them (plus) and at the old version restricted to them (minus).
  Those are ordinary relations again, so such blocks nest anywhere.

Anything not recognised raises `Unsupported`: a FULL refresh is slower but always right.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.incremental_rewrite.compiler import DeltaCompiler, Keyed
from dtcli.sql.incremental_rewrite.ctes import inline_ctes
from dtcli.sql.incremental_rewrite.relations import (
    BOTH,
    KEY_PREFIX,
    MINUS,
    NEW,
    OLD,
    PLUS,
    PRIOR,
    WEIGHTED,
    Bindings,
    Keep,
    KeySet,
    Materialize,
    Unsupported,
    key_column,
    parse,
)
from dtcli.sql.incremental_rewrite.shapes import OuterJoin, Shape

__all__ = ["BOTH", "KEY_PREFIX", "MINUS", "NEW", "OLD", "PLUS", "PRIOR", "WEIGHTED", "Bindings", "DeltaCompiler",
           "Keep", "KeySet", "Keyed", "Materialize", "OuterJoin", "Shape", "Unsupported", "inline_ctes", "key_column",
           "parse", "unsupported_reason"]


def unsupported_reason(sql: str | exp.Query, inputs: list[str]) -> str | None:
    """Why the query cannot be compiled into change queries (None: it can); no Spark needed."""
    try:
        DeltaCompiler(Bindings.for_inputs(inputs, set(inputs))).compile(sql)
    except Unsupported as err:
        return str(err)
    return None
