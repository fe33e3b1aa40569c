"""Every table config key, once: its meaning, its type and the default a table that does not set
it gets (docs/configuration.md is the user's view of the same keys).

project/ reads the layers a key can be set in, checks each value and builds a `TableConfig`;
planning, the engine's step and the renderers read its fields. Nothing else holds a default of a
table key: a new key is a field here (and a check in project/table_config.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

if TYPE_CHECKING:
    from dtcli.data_tests import ColumnNote, DataTest, Expectation
    from dtcli.unit_tests import UnitTest

# What a structured value looks like once project/table_values.py has checked it. They stay
# plain mappings (JSON as written): the definition hash and the docs' project file hash and show
# them as such, and a DT defined before this type existed must keep its hash.


class ColumnDecl(TypedDict):
    """A `columns:` entry: the output's name, and its Spark type (None: as the query gives it)."""

    name: str
    type: str | None


class Constraint(TypedDict):
    """A `constraints:` entry: a primary key or unique key, and whether it holds (`rely`)."""

    kind: str                 # primary_key | unique
    columns: list[str]
    rely: bool
    name: str | None


# `backfill:` ({from: {table: NAME} | {path: P}, version, timestamp, before}); "from" is a keyword
BackfillSpec = TypedDict("BackfillSpec", {"from": dict[str, str], "version": int | None,
                                          "timestamp": str | None, "before": bool})


class StartAt(TypedDict, total=False):
    """`start_at:` of a custom table: exactly one of a version, a UTC timestamp, or an offset."""

    version: int
    timestamp: str
    offset: int               # seconds, negative: that long before the table's creation


# A config's values by key, each of its TableConfig field's type (project/table_config.py checks
# what a user wrote into these; TableConfig(**values) holds them)
ConfigValues = dict[str, object]


def _shown(default: Any) -> Any:
    """A key every table has in its merged config (Snowflake's DDL always states it), so the
    docs' project file and `dt show` print it even when the user left it out."""
    return field(default=default, metadata={"shown": True})


@dataclass(frozen=True)
class TableConfig:
    """A DT's config, merged (defaults < folders < yml < config()) and checked by project/."""

    target_lag: str = _shown("1 hour")      # a time span or 'downstream' (planning/lag.py)
    refresh_mode: str = _shown("auto")      # auto | adaptive | incremental | full | custom_incremental
    initialize: str = _shown("on_create")   # on_create | on_schedule: refresh at creation or first tick
    enabled: bool = True                    # false: not planned, not refreshed (`dt show`: disabled)
    scheduler: str = "enable"               # disable: refreshed only when asked by name (planning/on_demand.py)
    tags: tuple[str, ...] = ()              # add up across layers, as dbt's do
    comment: str | None = None              # the Delta table's description
    # rows the predicate holds for are never recomputed again (frozen regions, planning/frozen.py);
    # `immutable_where` is Snowflake's name for it
    frozen_where: str | None = None
    backfill: BackfillSpec | None = None    # copy this table at creation (planning/backfill.py)
    start_at: StartAt | None = None         # custom tables: where CHANGES() begin at creation
    columns: tuple[ColumnDecl, ...] | None = None   # rename (and type) the query's outputs
    constraints: tuple[Constraint, ...] = ()
    partition_by: tuple[str, ...] | None = None
    cluster_by: tuple[str, ...] | None = None       # Delta liquid clustering
    # DTs are written with deletion vectors unless false (docs/readers.md says who cannot read them)
    deletion_vectors: bool = True
    # How a recompute writes the DT (docs/configuration.md, "Layout"): optionally its rows in order
    # of the key its incremental refreshes name rows by, in files of at most max_rows_per_file
    # rows, so that Delta skips the files a change does not touch. Sorting is off by default: on
    # the TPC-H DTs it bought no faster refresh (their rows arrive in key order or hash-spread)
    # and cost every recompute a sort. A layout change redefines no data (not hashed).
    sort_by_key: bool = False
    max_rows_per_file: int = 1_000_000      # 0: no limit
    # An incremental refresh writes a DT of at most this many rows whole, in one overwrite, instead
    # of replacing its changed rows in place (engine/runtime/rewrite.py says why). Off by default:
    # it changes what the DT's change feed and history show its readers, and no wall time gain
    # has been measured yet (fewer Spark jobs: (a) 17 -> 10 at TPC-H SF0.01, 2026-11-26).
    small_table_rows: int = 0
    # An aggregate whose outputs are COUNT / SUM / AVG over its keys keeps its running totals per
    # group as an internal table (sql/rules/aggregate_totals.py), so a change costs its own rows,
    # not a recompute of every group it touches; false: no second copy of the groups (storage,
    # one more commit per refresh), the groups recomputed as before. A layout-like choice: the
    # DT's rows are the same either way (not hashed).
    aggregate_totals: bool = True
    data_tests: tuple[DataTest, ...] = ()   # run by `dt test` and each refresh's audit; alias `tests`
    expectations: tuple[Expectation, ...] = ()
    unit_tests: tuple[UnitTest, ...] = ()
    # not a key: the `columns:` entries that only describe or test a column, by name
    column_notes: tuple[ColumnNote, ...] = field(default=(), metadata={"key": False})
    # the keys as project/ left them (aliases folded, defaults of the shown keys included): what
    # reading by key sees
    written: frozenset[str] = field(default=frozenset(), metadata={"key": False})

    # Reading by key, as the merged config was written (a key not written reads as absent, lists
    # as lists): for the docs' project file, and for the tests written against the merged mapping
    # this type replaced. dt's own code reads the fields.
    def __getitem__(self, key: str) -> Any:
        if key not in self.written:
            raise KeyError(key)
        value = getattr(self, key)
        return list(value) if isinstance(value, tuple) else value

    def __contains__(self, key: object) -> bool:
        return key in self.written

    def __iter__(self):
        return iter(sorted(self.written))

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self.written else default

    def as_written(self) -> ConfigValues:
        return {key: self[key] for key in sorted(self.written)}

    def with_keys(self, **values: Any) -> TableConfig:
        """A copy with these keys set, as if written."""
        return replace(self, **values, written=self.written | set(values))

    def without_keys(self, *keys: str) -> TableConfig:
        """A copy with these keys unset: their defaults, as if never written."""
        defaults = {f.name: f.default for f in fields(self) if f.name in keys}
        return replace(self, **defaults, written=self.written - set(keys))


T = TypeVar("T")


def listed(values: tuple[T, ...] | None) -> list[T] | None:
    """A config tuple as the list the step, explain's report and JSON carry (None stays None)."""
    return None if values is None else list(values)


# Other names a key may be written under (Snowflake's, dt's older ones)
ALIASES = {"immutable_where": "frozen_where", "tests": "data_tests"}
# Every key a table's config may set
TABLE_KEYS = frozenset({f.name for f in fields(TableConfig) if f.metadata.get("key", True)} | set(ALIASES))
# The keys every merged config starts from, with their defaults
SHOWN_DEFAULTS = {f.name: f.default for f in fields(TableConfig) if f.metadata.get("shown")}
