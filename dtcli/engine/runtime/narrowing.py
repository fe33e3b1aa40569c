"""Which scans a change's join values are pushed into (the compiler's `Narrow`, sql/
incremental_rewrite/pushdown.py).

A term of a join's change query reads one input's change and the other inputs whole; naming the
change's join values in another input's scan (`o.orderkey IN (...)`) lets Delta skip the files
holding none of them. The predicate has a price: Delta plans every distinct (table, filter) scan
of a query with a Spark job of its own (*Filtering files for query*), and a join of n changed
inputs has a term per input, each narrowing the others differently, where the unfiltered scan of
a table is planned once and its broadcast or shuffle is shared by every term that reads it at
the same version. So a predicate is pushed only into a scan it lets skip more than
SKIP_WORTH_BYTES of files, as the table's log says (its files' min/max statistics, read without
a JVM); a table of at most that size is never narrowed. Where the log cannot tell (no
statistics of the column, values of another type), the predicate is pushed as before.

A change whose join column holds only NULLs joins no row: that term is cut to nothing (`false`)
whatever the scan, which Spark plans without reading anything.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dtcli.engine.runtime import key_predicates
from dtcli.engine.runtime.changes import column_values
from dtcli.state.delta_log import FileStats, column_types, file_stats

# A table this small is read whole rather than narrowed: reading 16 MiB costs about what planning
# one more Delta scan does (a Spark job on two cores); at TPC-H SF0.1 every table but lineitem.
SMALL_INPUT_BYTES = 16 << 20
# A predicate is pushed into a larger table's scan only when its files' statistics say it skips
# more than this many bytes of them.
SKIP_WORTH_BYTES = 16 << 20
# A join's hub (sql/incremental_rewrite/hub.py) has its rows a change reaches kept once, a Spark
# job, instead of being scanned by every term that reads it: worth it from the size at which a
# scan costs about as much as a job (SMALL_INPUT_BYTES's trade).
HUB_MIN_BYTES = SMALL_INPUT_BYTES


class Narrowing:
    """The pushdown's answers for one refresh: `changes` maps each changed input to its
    ChangeSet, `inputs` each input to (its path, the version the refresh reads)."""

    def __init__(self, changes: dict, inputs: dict[str, tuple[str, int | None]]):
        self.changes = changes
        # rows the refresh keeps on the driver, by view (a join hub's, sql/incremental_rewrite/
        # hub.py): their join values are pushed as a change's are
        self.kept: dict[str, KeptRows] = {}
        self.inputs = {name.lower(): where for name, where in inputs.items()}
        self._stats: dict[str, FileStats | None] = {}
        self._types: dict[str, dict[str, str] | None] = {}

    def __call__(self, name: str, column: str, scanned: str | None = None, via: list | None = None
                 ) -> Callable[[exp.Expression], exp.Expression | None] | None:
        """A function restricting an expression (a column of input `scanned`, or of a FROM item
        that is no input: None) to the values `column` takes in input `name`'s change; None when
        they are not known, too many or not written as literals, or the restriction is not worth
        its scan (see above). `via`: the (input, column) pairs a chain of equalities joins the
        two through, which must all be of the change column's type (pushdown.py)."""
        if via and not self._same_type(name, column, via):
            return None
        cs = self.changes.get(name) or self.kept.get(name)
        found = cs.values(column) if cs is not None else None
        if found is None:
            return None
        values, data_type = found
        present = [v for v in values if v is not None]
        if not present:
            return lambda expr: exp.false()     # NULL equals nothing: no row joins
        if len(present) > key_predicates.MAX_LITERALS or any(
                key_predicates.literal(v, data_type) is None for v in present):
            return None                         # joined, not named
        stats = self.stats(scanned) if scanned is not None else None
        if stats is not None and stats.bytes <= SMALL_INPUT_BYTES:
            return None
        folded = key_predicates.ranges(present, data_type)

        def restrict(expr: exp.Expression) -> exp.Expression | None:
            if stats is not None and isinstance(expr, exp.Column):
                skipped = stats.skipped_bytes(expr.name, folded)
                if skipped is not None and skipped <= SKIP_WORTH_BYTES:
                    return None
            return exp.Var(this=key_predicates.among(expr.sql(dialect="spark"), present, data_type))
        return restrict

    def _same_type(self, name: str, column: str, via: list) -> bool:
        """Whether every (input, column) of `via` has the type input `name`'s `column` has, as
        the tables' logs say (read without a JVM)."""
        def kind(table: str, col: str) -> str | None:
            key = table.lower()
            if key not in self._types:
                where = self.inputs.get(key)
                self._types[key] = column_types(*where) if where is not None else None
            return (self._types[key] or {}).get(col.lower())
        mine = kind(name, column)
        return mine is not None and all(kind(t, c) == mine for t, c in via)

    def hub_bytes(self, name: str) -> int | None:
        """Input `name`'s bytes when it is large enough to be a join's hub, else None."""
        stats = self.stats(name)
        return stats.bytes if stats is not None and stats.bytes >= HUB_MIN_BYTES else None

    def stats(self, name: str) -> FileStats | None:
        """Input `name`'s files at the version the refresh reads (None: not an input, no log)."""
        key = name.lower()
        if key not in self._stats:
            where = self.inputs.get(key)
            self._stats[key] = file_stats(*where) if where is not None else None
        return self._stats[key]


class KeptRows:
    """Rows collected on the driver and their schema, read for their values as a change is."""

    def __init__(self, rows: list, schema):
        self.rows, self.schema = rows, schema

    def values(self, column: str) -> tuple[list, object] | None:
        """The distinct values `column` takes, with its Spark type; None without that column."""
        return column_values(self.rows, self.schema, column)
