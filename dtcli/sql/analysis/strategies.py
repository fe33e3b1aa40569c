"""How each construct refreshes, as `dt explain` words it, and the advice it gives."""

from __future__ import annotations

from sqlglot.tokens import TokenType as T

ROWS = "apply to changed rows only"
ROWWISE = "apply to changed rows"
UNION_ALL = "union of each side's changes"
CTE = "compute the CTE's changes once, feed them to every reference"
FROM_CTE = "the changes computed for the CTE"
DERIVED = "the subquery's changes feed the outer query"
CONSTANT = "constant input: never changes"
INNER = "ΔA ⋈ B_new + A_old ⋈ ΔB over pinned versions"
OUTER = "recompute the join keys touched by either side's changes"
SEMI_ANTI = "recompute the left rows of the join keys either side's changes touch"
SINGLE_ROW_JOIN = "join the subquery's one row: a change of its value recomputes the rows it meets"
GROUPS = "recompute the groups whose keys changed"
DISTINCT_ROWS = "recompute the distinct rows whose values changed"
PARTITIONS = "recompute the partitions that changed"
ONE_PARTITION = ("no PARTITION BY: the whole result is one partition, re-evaluated when its input "
                 "changes: over the table's own rows when the outermost SELECT's windows read only its "
                 "output columns (for ranks, row numbers and running aggregates over RANGE frames only the "
                 "rows from the first changed position in the ORDER BY on are rewritten), else recomputed "
                 "whole")
SINGLE_ROW = "recompute the single row"
FILTER_GROUPS = "filter the recomputed groups"
FILTER_PARTITIONS = "filter the recomputed partitions"
NO_ORDER = "ignored: a table keeps no row order"
FULL = "not incremental: forces FULL"

# Tokens that belong to the previous construct: a backwards keyword search stops there.
HARD_TOKENS = {T.R_PAREN, T.COMMA, T.VAR, T.IDENTIFIER, T.NUMBER, T.STRING, T.STAR, T.FROM, T.WHERE,
         T.GROUP_BY, T.HAVING, T.JOIN, T.ON, T.ORDER_BY, T.LIMIT, T.OFFSET, T.UNION, T.EXCEPT,
         T.INTERSECT, T.QUALIFY, T.SEMICOLON}

ADVICE = {
    "LIMIT": "the rows a LIMIT keeps depend on the whole input: limit when reading the table, "
             "or keep the top N per key with row_number() OVER (PARTITION BY ...) <= N",
    "OFFSET": "the rows an OFFSET skips depend on the whole input: apply it when reading",
    "LIMIT inside": "a LIMIT inside a subquery keeps rows that depend on the whole input of it: "
                    "make that subquery a dynamic table of its own, where ORDER BY … LIMIT "
                    "refreshes incrementally (top-N), and read that table",
    "TABLESAMPLE": "a sample differs on every evaluation: for a stable one, filter on a hash "
                   "of a key, e.g. xxhash64(id) % 100 < 5",
    "set operation": "dt refreshes UNION, INTERSECT and EXCEPT incrementally when it knows the "
                     "columns of every branch: name them instead of a *, and check that every "
                     "input is a source or dynamic table of the project",
    "EXISTS": "rewrite as a join on the correlated key: an INNER JOIN to the DISTINCT keys for "
              "EXISTS / IN, a LEFT OUTER JOIN keeping unmatched rows for NOT EXISTS / NOT IN "
              "(mind NULLs with NOT IN)",
    "scalar": "compute the value in a dynamic table of its own and join it (CROSS JOIN for a "
              "single value, or on the correlated key)",
    "LATERAL": "rewrite as a join on the correlated columns, grouping the subquery by them if "
               "it aggregates",
    "PIVOT": "write it as a GROUP BY with one conditional aggregate per value, "
             "e.g. sum(CASE WHEN k = 'a' THEN v END)",
    "UNPIVOT": "write it as LATERAL VIEW stack(...), which refreshes row by row",
    "RECURSIVE": "its depth depends on the data; unroll it into a fixed chain of joins if the "
                 "depth is bounded",
    "udf": "Spark cannot tell whether a user-defined function is deterministic; use built-in "
           "functions where you can",
    "table function": "read the data from a table instead",
}
