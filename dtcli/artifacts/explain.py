"""`dt explain NAME --format json`, typed: how a DT refreshes and why, before anything runs.

Built by dtcli/planning/explain.py, printed by dtcli/ui/explain_view.py, and embedded per DT in
the docs site's project.json (`explain`). The key names are the ones users and the docs site
read, so a field here is never renamed without a new schema_version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dtcli.artifacts.typed_json import JSON, OMIT_NONE
from dtcli.artifacts.versions import ArtifactKind

SCHEMA_VERSION = 1


@dataclass
class ColumnType:
    name: str
    type: str | None                   # Spark SQL type; null when only Spark can tell


@dataclass
class Operator:
    """A row of the operator table: an operator of the query and how it refreshes."""

    operator: str
    strategy: str
    considerations: list[str]
    line: int | None                   # in the DT's file
    incremental: bool


@dataclass
class RuleRewrite:
    """A construct of the query dt's rules rewrote for refreshing (a subquery as a join...)."""

    rule: str
    construct: str
    rewritten_as: str
    strategy: str


@dataclass
class Input:
    name: str
    kind: str                          # source | seed | dynamic table
    path: str
    change_data_feed: bool
    version: int | None
    columns: list[ColumnType]


@dataclass
class LineageTransformation:
    type: str                          # DIRECT | INDIRECT
    subtype: str                       # IDENTITY, TRANSFORMATION, AGGREGATION | FILTER, JOIN, ...
    masking: bool


@dataclass
class LineageInput:
    input: str
    column: str
    transformations: list[LineageTransformation]


@dataclass
class LineageColumn:
    name: str
    inputs: list[LineageInput]


@dataclass
class ColumnLineage:
    """Each output column's input columns and how it is made of them, and the input columns
    every row depends on (`dataset`): OpenLineage's column lineage facet."""

    columns: list[LineageColumn]
    dataset: list[LineageInput]


@dataclass
class AdaptiveChoice:
    """What ADAPTIVE would choose if the DT refreshed now, and why."""

    action: str
    change_rows: int
    input_rows: int
    expected_incremental_seconds: float
    expected_full_seconds: float
    threshold_rows: int | None
    basis: str
    reason: str


@dataclass
class ChangeInput:
    name: str
    information: str                   # DEFAULT | APPEND_ONLY
    line: int | None
    rely_primary_key: list[str] | None
    compacted_per_key: bool


@dataclass
class CustomSection:
    """A custom table's statement (REFRESH USING), the CHANGES() it reads, where it reads SELF."""

    statement: str
    changes: list[ChangeInput]
    self_reads: list[int]
    snapshot_tables: list[str]
    initial_population: str


@dataclass
class SortOrder:
    column: int                        # position in the inner query
    descending: bool
    nulls_first: bool


@dataclass
class TopN:
    """How an incremental top-N is split: the query under it and its sort keys, n and the offset."""

    inner_sql: str
    order: list[SortOrder]
    limit: int | None
    offset: int
    hidden_sort_columns: int
    recomputed_from: str


@dataclass
class InternalTable:
    """An intermediate result the DT keeps under <warehouse>/_dt/internal/ (null: not created)."""

    dt: str
    role: str
    path: str
    version: int | None
    rows: int | None
    bytes: int | None
    source_versions: dict[str, int] | None
    maintained: bool
    holds: str


@dataclass
class Frozen:
    """The frozen region: its predicate, the columns it reads, the RELY constraints it was checked
    against, and what it froze at the last refresh."""

    predicate: str
    columns: list[str]
    rely_constraints: list[dict[str, list[str]]]
    rely_check: str
    frozen_rows: int | None
    active_rows: int | None
    as_of: str | None


@dataclass
class IgnoredProperty:
    """A CREATE DYNAMIC TABLE property with no meaning in dt (WAREHOUSE, retention, ...)."""

    property: str
    value: str | None
    line: int | None


@dataclass
class DataTestPlan:
    """A data test or expectation, what a failure does and what a refresh reads to check it."""

    name: str
    kind: str
    test: str
    column: str | None
    on_failure: str
    reads: str


@dataclass
class ExplainReport:
    """`dt explain NAME --format json`: how a dynamic table refreshes and why."""

    schema_version: int
    name: str
    file: str | None
    qualified_name: str | None = field(metadata=OMIT_NONE)     # only with `catalog:`
    refresh_mode: str
    refresh_mode_reason: str | None
    configured_refresh_mode: str | None
    columns: list[ColumnType]
    operators: list[Operator]
    rewritten_sql: str | None
    rewrites: list[RuleRewrite]
    inputs: list[Input]
    column_lineage: ColumnLineage | None
    target_lag: str | None      # null: refreshed only on demand
    effective_lag: float | None
    scheduler: str
    period_seconds: float | None
    refresh_seconds: float | None
    adaptive: AdaptiveChoice | None
    custom: CustomSection | None
    top_n: TopN | None
    internal_tables: list[InternalTable]
    frozen_where: str | None
    frozen: Frozen | None
    cluster_by: JSON            # as configured: a column or a list of them
    partition_by: JSON
    comment: str | None
    tags: list[str]
    upstream: list[str]
    downstream: list[str]
    depth: int
    ignored_properties: list[IgnoredProperty]
    data_tests: list[DataTestPlan]
    warnings: list[str]


EXPLAIN = ArtifactKind(
    name="explain", version=SCHEMA_VERSION, root=ExplainReport, version_at=("schema_version",),
    description="dt explain NAME --format json (and each DT's `explain` in the docs site's project.json): "
                "how a dynamic table refreshes and why, before anything runs.",
    # a report of an earlier dt (an older project.json) has no schema_version: version 0, which
    # is version 1's shape without the field
    legacy_version=lambda doc: 0 if "refresh_mode" in doc else None,
    upgrades={0: lambda doc: {"schema_version": 1, **doc}})
