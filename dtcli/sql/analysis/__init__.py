"""Can a dynamic table's query refresh INCREMENTAL, and how does each of its constructs refresh?

A static look at the query (sqlglot only, no Spark) so that `dt validate`, `dt explain` and the
planner answer in milliseconds. It resolves `refresh_mode: auto` (INCREMENTAL unless some
construct blocks it) and yields the per-operator table that `dt explain` prints, with advice.
Anything this module does not recognise is reported as a blocker: a FULL refresh is slower but
always right, a wrong INCREMENTAL one is not. How a SELECT block is keyed (one outer join, GROUP
BY keys, window partitions, DISTINCT rows) is the change compiler's rule, asked here too
(incremental_rewrite/shapes.py), so that the operator table and the refresh mode agree.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.analysis.analyzer import Analyzer
from dtcli.sql.analysis.result import OperatorInfo, QueryAnalysis
from dtcli.sql.parse import ParsedSQL
from dtcli.sql.rules._notes import Rewrite

__all__ = ["OperatorInfo", "QueryAnalysis", "analyze"]


def analyze(parsed: ParsedSQL, query: exp.Query, rewrites: tuple[Rewrite, ...] = ()) -> QueryAnalysis:
    """Analyse a table's query from its one parse; `query` is that parse's query or a rewritten
    (renamed, qualified, normalized by sql/rules) copy of it, whose nodes keep their places in
    the file; `rewrites` are the rules' notes, which label the nodes the rules created."""
    analyzer = Analyzer(parsed.text, parsed.tokens, query, rewrites)
    analyzer.query(query)
    return analyzer.result()
