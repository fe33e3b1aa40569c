"""The docs site's `project.json`, typed: every fact the site shows, for the pages and other tools.

Built by dtcli/api/docs.py without a JVM, rendered by dtcli/ui/site, documented key by key in
docs/docs-site.md. Per DT it holds its `dt show dynamic tables` row (`status`), its `dt explain`
report (`explain`) and its `dt show refresh-history` rows, in those commands' shapes.
`metadata.format_version` is the name the version had before `schema_version`: both carry the
same number, so readers of earlier files keep working.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dtcli.artifacts.explain import EXPLAIN, ColumnType, ExplainReport
from dtcli.artifacts.run_results import Statistics
from dtcli.artifacts.typed_json import JSON, OMIT_NONE
from dtcli.artifacts.versions import ArtifactKind, set_version

SCHEMA_VERSION = 1


@dataclass
class ManifestMetadata:
    format_version: int                # = schema_version (its earlier name)
    schema_version: int
    dt_version: str
    generated_at: str                  # the moment lags are measured at
    project: str
    project_version: str | None
    target: str | None
    dialect: str
    warehouse: str
    select: list[str] | None           # the --select values
    history_per_table: int


@dataclass
class SourceFacts:
    name: str
    kind: str                          # source | seed
    path: str | None
    file: str | None
    line: int | None
    primary_key: list[str]
    rely: bool
    table: str | None
    description: str | None
    change_data_feed: bool | None
    version: int | None
    rows: int | None
    columns: list[ColumnType]
    downstream: list[str]


@dataclass
class Lag:
    """The effective target lag, the lag at `generated_at` and whether it exceeds the target,
    with the last hour's peak and the measured refresh time (dt show's figures)."""

    target_seconds: float | None
    current_seconds: float | None
    behind: bool
    data_timestamp: str | None
    peak_seconds: float | None
    target_met: bool | None
    refresh_seconds: float | None
    can_meet_target: bool | None


@dataclass
class TableStatus:
    """A DT's row of `dt show dynamic tables --format json`."""

    name: str
    target_lag: str | None
    effective_lag_seconds: float | None
    period_seconds: float | None
    refresh_mode: str | None
    refresh_mode_reason: str | None
    scheduling_state: str | None
    scheduling_state_reason: str | None
    last_suspended_on: str | None
    next_due: str | None
    data_timestamp: str | None
    lag_seconds: float | None
    peak_lag_seconds: float | None
    peak_lag_at: str | None
    target_lag_met: bool | None
    refreshes_last_hour: int | None
    refresh_seconds: float | None
    can_meet_target_lag: bool | None
    qualified_name: str | None = field(metadata=OMIT_NONE)     # only with `catalog:`
    immutable_where: str | None
    rows: int | None
    bytes: int | None
    text: str | None
    created_on: str | None
    last_refresh_action: str | None
    last_refresh_state: str | None
    comment: str | None
    cluster_by: JSON
    tags: list[str]
    scheduler: str | None
    deletion_vectors: bool | None
    version: int | None
    path: str
    file: str | None
    orphaned: bool
    columns: list[ColumnType]
    warnings: list[str]


@dataclass
class RecordedCheck:
    """A check's result as a refresh recorded it (dtcli.data_tests.CheckResult)."""

    name: str
    unique_id: str | None
    kind: str | None
    test: str | None
    table: str | None
    status: str | None
    failures: int | None
    message: str | None
    action: str | None
    samples: list[dict[str, JSON]] | None
    column: str | None


@dataclass
class HistoryRow:
    """A row of `dt show refresh-history --format json` (Snowflake's columns, snake_case)."""

    name: str
    state: str
    refresh_action: str
    refresh_trigger: str
    data_timestamp: str | None
    refresh_start_time: str
    refresh_end_time: str
    run_id: str
    state_message: str | None
    reinit_reason: str | None
    num_updated_rows: int
    inputs_with_changed_data: list[str]
    source_versions: dict[str, int]
    table_version: int | None
    definition_hash: str | None
    refresh_action_reason: str | None
    change_rows: int | None
    input_rows: int | None
    state_code: str | None
    query_id: str | None
    target_lag_sec: float | None
    completion_target: str | None
    refresh_strategy: str | None
    data_tests: list[RecordedCheck] | None
    statistics: Statistics


@dataclass
class LastCheck:
    """A check the DT defines with its newest result (`dt show test-results`' row)."""

    name: str
    kind: str | None
    test: str | None
    column: str | None
    status: str | None                 # null: never ran
    failures: int | None
    message: str | None
    action: str | None
    at: str | None
    by: str | None                     # refresh INCREMENTAL, ..., dt test, dt build


@dataclass
class CheckPoint:
    """A check's result at one audited refresh."""

    at: str
    status: str | None
    failures: int | None
    action: str | None


@dataclass
class ExpectationCounts:
    """An expectation's violating rows over the kept history, by what happened to them."""

    refreshes: int
    dropped: int
    warned: int
    failed: int


@dataclass
class TableTestResults:
    last: list[LastCheck]
    last_at: str | None
    over_time: dict[str, list[CheckPoint]]           # check -> per audited refresh, oldest first
    expectations: dict[str, ExpectationCounts]


@dataclass
class TableFacts:
    """A dynamic table: what it is, its state, how it refreshes and what its refreshes did."""

    name: str
    state: str                         # ACTIVE, SUSPENDED, FAILED, ORPHANED, DISABLED
    frozen: bool
    file: str | None
    sql: str | None                    # its file as written (before Jinja)
    compiled_sql: str | None
    config: dict[str, JSON]            # as merged from defaults, folders, its .yml and config()
    lag: Lag
    status: TableStatus
    explain: ExplainReport | None      # null for disabled and orphaned DTs
    refresh_history: list[HistoryRow]  # newest first, the newest history_per_table
    data_tests: TableTestResults


@dataclass
class Freshness:
    """A scheduled DT's lag against its target (the overview lists the ones behind first)."""

    name: str
    state: str
    target_seconds: float | None
    current_seconds: float | None
    behind: bool
    data_timestamp: str | None
    peak_seconds: float | None
    target_met: bool | None
    refresh_seconds: float | None
    can_meet_target: bool | None


@dataclass
class DayTotals:
    day: str                           # a UTC date
    refreshes: int
    seconds: float
    failed: int


@dataclass
class Overview:
    freshness: list[Freshness]
    failures_last_day: list[HistoryRow]               # newest first
    refresh_mode_mix: dict[str, int]                  # resolved mode -> DTs
    refresh_time_per_day: list[DayTotals]             # the last 14 UTC days, oldest first


@dataclass
class Manifest:
    """The docs site's project.json: the DTs, the sources they read, the edges between them
    and an overview."""

    metadata: ManifestMetadata
    sources: dict[str, SourceFacts]
    dynamic_tables: dict[str, TableFacts]            # in DAG order, then disabled and orphaned ones
    edges: list[list[str]]                           # [input, dt]
    overview: Overview


def _legacy_version(doc: dict) -> int | None:
    """A project.json of an earlier dt carries `format_version` 1 only: version 0 here, version 1's
    shape without the schema_version fields (its own and its explain reports')."""
    return 0 if (doc.get("metadata") or {}).get("format_version") == 1 else None


def _from_format_version_1(doc: dict) -> dict:
    tables = {name: {**table, "explain": EXPLAIN.upgrade(table["explain"]) if table.get("explain") else None}
              for name, table in (doc.get("dynamic_tables") or {}).items()}
    return {**set_version(doc, ("metadata", "schema_version"), 1), "dynamic_tables": tables}


MANIFEST = ArtifactKind(
    name="manifest", version=SCHEMA_VERSION, root=Manifest, version_at=("metadata", "schema_version"),
    description="target/docs/project.json, the docs site's facts (dt docs generate); see docs/docs-site.md.",
    legacy_version=_legacy_version, upgrades={0: _from_format_version_1})
