"""Plain data shared by every layer: project definitions, plans and refresh records.

Nothing here imports Spark; plans and records are JSON-serialisable so that the CLI process
and the spark-submit driver exchange them as files and lines.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from dtcli.config_keys import BackfillSpec, ColumnDecl, StartAt, TableConfig
from dtcli.data_tests import AuditSpec, CheckResultDict, DataTest
from dtcli.json_types import JsonObject, YamlMapping
from dtcli.lazy import LazyFields
from dtcli.plan_parts import (
    Backfill,
    BackfillCopy,
    Estimate,
    LagTarget,
    Layout,
    Regions,
    Registration,
    SourceLookup,
    Unregistration,
)

# Refresh actions and triggers, as Snowflake names them.
NO_DATA, INCREMENTAL, FULL, REINITIALIZE = "NO_DATA", "INCREMENTAL", "FULL", "REINITIALIZE"
# The action of a `dt test` step: the table's data tests run over it as it is; nothing is written.
TEST = "TEST"
# A resolved refresh mode besides INCREMENTAL and FULL: each refresh picks the cheaper of the two.
ADAPTIVE = "ADAPTIVE"
# The strategy kind every refresh of an incremental top-N runs (engine/runtime/strategies/top_n.py).
TOP_N = "TOP_N"
# The refresh mode of a REFRESH USING table: its own statement applies the changes.
CUSTOM_INCREMENTAL = "CUSTOM_INCREMENTAL"
CREATION, SCHEDULED, MANUAL = "CREATION", "SCHEDULED", "MANUAL"
SUCCEEDED, FAILED, SKIPPED, UPSTREAM_FAILED = "SUCCEEDED", "FAILED", "SKIPPED", "UPSTREAM_FAILED"
# The one definition of a refresh that failed: it, or the upstream refresh it needed, broke.
FAILURE_STATES = frozenset({FAILED, UPSTREAM_FAILED})
# state_code of the FAILED rows of a run whose Spark application could not start: no refresh
# ran, so they neither count toward auto-suspension nor break a streak
APPLICATION_NOT_STARTED = "APPLICATION_NOT_STARTED"
# state_code of the refreshes the application of a dt process that died did not run (the driver
# records them as it stops; reconcile, those of an application that died with it)
DT_PROCESS_GONE = "DT_PROCESS_GONE"



@dataclass(frozen=True)
class Column:
    name: str
    type: str | None      # Spark SQL type; None when it cannot be known before Spark runs

    def to_dict(self) -> ColumnDecl:
        return {"name": self.name, "type": self.type}


class IgnoredPropertyDict(TypedDict):
    """A CREATE DYNAMIC TABLE property dt does not use (WAREHOUSE, retention, tags...), as read."""

    property: str
    value: str
    line: int


@dataclass(frozen=True)
class Located:
    """A config value with the file and line it came from, for error messages."""

    value: Any
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class SourceDef:
    name: str
    path: str                     # absolute local path or a URI
    primary_key: tuple[str, ...] = ()
    origin: str = "declared"      # declared in dt_project.yml, or a seed
    file: str | None = None
    line: int | None = None
    rely: bool = False            # the primary key holds: CHANGES() of it are compacted per key
    table: str | None = None      # declared by table name (`table: raw.orders`): `path` is where
    #                               the metastore last said it lives ("" until a run asked it)
    description: str | None = None
    columns: tuple[tuple[str, str | None], ...] = ()   # declared (name, type): checked against Delta
    data_tests: tuple[DataTest, ...] = ()   # run by `dt test`


def _none() -> None:
    return None


@dataclass
class TableDef(LazyFields):
    """One dynamic table as defined in the project (after Jinja, parsed once, before planning).
    Its trees stay pickled in the check cache until read (dtcli.lazy)."""

    LAZY = ("parsed", "query", "custom")

    name: str
    file: str                     # path of the .sql file, relative to the project
    sql: str                      # rendered SQL, in the project's dialect, lines as in the file
    spark_sql: str                # the query in Spark SQL, reading inputs by their logical names
    kind: str                     # the name of its kind: a query, or a custom statement (REFRESH
    #                               USING / INSERT INTO SELF); everything the two do differently
    #                               is asked of the kind (dtcli/planning/kinds/registry.py)
    config: TableConfig           # merged config (defaults < folders < yml < config())
    config_origin: dict[str, Located] = field(default_factory=dict)   # where each key was set
    inputs: tuple[str, ...] = ()  # names of DTs and sources it reads, in order of appearance
    input_lines: dict[str, int] = field(default_factory=dict)
    folder: str = ""              # folder under tables/ ("" at the top), as in dbt's models/
    parsed: Any = field(default_factory=_none)   # the file's one parse (dtcli.sql.parse.ParsedSQL)
    query: Any = field(default_factory=_none)    # its query, inputs renamed to logical names (sqlglot tree)
    ignored: tuple[IgnoredPropertyDict, ...] = ()   # CREATE DYNAMIC TABLE properties dt does not use
    custom: Any = field(default_factory=_none)   # a custom table's statement (dtcli.sql.custom.CustomStatement)

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    @property
    def target_lag(self) -> str:
        return self.config.target_lag

    @property
    def refresh_mode(self) -> str:
        return self.config.refresh_mode

    @property
    def tags(self) -> tuple[str, ...]:
        return self.config.tags


@dataclass(frozen=True)
class CatalogSpec:
    """Where the project's DTs appear as tables (`catalog: {name: C, schema: S}`): `S.<dt>` in
    Spark's session catalog, or `C.S.<dt>` in a catalog plugin named C."""

    schema: str
    name: str | None = None

    def qualified(self, table: str) -> str:
        return ".".join([*([self.name] if self.name else []), self.schema, table])


class LineageTransport(TypedDict, total=False):
    """`openlineage: transport:` as checked (project/lineage_settings.py): the OpenLineage
    client's transport config, by type."""

    type: str                 # http | file | console
    url: str                  # http: the backend
    endpoint: str             # http: its path (api/v1/lineage)
    api_key_env: str          # http: the environment variable that holds the API key
    verify: bool              # http: check the backend's TLS certificate
    compression: str          # http: gzip
    log_file_path: str        # file: where events are appended, one a line (absolute)
    append: bool              # file: append to one file rather than one file per event


@dataclass(frozen=True)
class LineageSpec:
    """`openlineage:` (dtcli/project/lineage_settings.py): where a run's OpenLineage events go."""

    transport: LineageTransport        # the client's shape; an API key only as `api_key_env`
    namespace: str | None = None       # the jobs' namespace (default: OPENLINEAGE_NAMESPACE, else the project)
    timeout: float = 5.0               # seconds a run waits for the backend, in all
    file: str | None = None            # where it was set, for messages
    line: int | None = None


@dataclass
class Project:
    root: Path
    name: str
    dialect: str
    warehouse: str                # absolute local path or URI
    spark_master: str
    spark_conf: dict[str, str]
    jars: tuple[str, ...]         # user-provided jars (air-gapped clusters); empty: provisioned
    sources: dict[str, SourceDef]
    tables: dict[str, TableDef]   # enabled tables: the ones dt plans and refreshes
    vars: YamlMapping             # `vars:` (and --vars), for Jinja's var()
    target: str | None = None
    disabled: dict[str, TableDef] = field(default_factory=dict)   # `enabled: false`
    threads: int = 4              # refreshes a run may execute side by side (`threads:`)
    catalog: CatalogSpec | None = None   # `catalog:`: DTs are also tables in a metastore
    version: str | None = None    # the project's own `version:` (shown in run_results and docs)
    spark_jit: str = "auto"       # `spark.jit`: how a run's JVM compiles (engine/launch/spark_conf.py)
    spark_class_archive: str = "auto"   # `spark.class_archive` (engine/launch/class_archive.py)
    openlineage: LineageSpec | None = None   # `openlineage:`; None: the client's environment decides
    singular_tests: list[DataTest] = field(default_factory=list)   # tests/*.sql

    def qualified_name(self, name: str) -> str | None:
        """`schema.name` (or `catalog.schema.name`) of a DT, with `catalog:` set."""
        return self.catalog.qualified(name) if self.catalog else None

    def table_path(self, name: str) -> str:
        return join_path(self.warehouse, name)

    def table_key(self, name: str) -> str:
        """The DT a user named (case-insensitive), or a usage error with a 'did you mean'."""
        from dtcli.errors import UsageError, suggest

        key = name.lower()
        if key not in self.tables:
            raise UsageError(f"no dynamic table named '{name}'",
                             hint=suggest(key, self.tables) or "see `dt show dynamic tables`")
        return key

    @property
    def target_dir(self) -> Path:
        return self.root / "target"

    def input_path(self, name: str) -> str:
        return self.table_path(name) if name in self.tables else self.sources[name].path

    def input_kind(self, name: str) -> str:
        return "dynamic_table" if name in self.tables else "source"


def join_path(base: str, *parts: str) -> str:
    if "://" in base:
        return "/".join([base.rstrip("/"), *parts])
    return str(Path(base, *parts))


@dataclass
class Frontier:
    """What a DT reflects, committed with its data in one Delta commit (`userMetadata`)."""

    source_versions: dict[str, int]
    definition_hash: str | None = None
    data_timestamp: str | None = None
    run_id: str | None = None
    refresh_action: str | None = None
    refresh_mode: str | None = None
    frozen_where: str | None = None     # the predicate this refresh froze rows with
    backfill: BackfillSpec | None = None     # the `backfill` config it was created with
    input_ids: dict[str, str] | None = None  # custom tables: Delta table id of each CHANGES() input
    start_at: StartAt | None = None          # custom tables: the start_at they were created with
    source_ids: dict[str, str] | None = None  # Delta table id of each source read by table name
    # the version of each internal table of the DT (InternalTable.role -> version) its rows were
    # computed from: the DT's next refresh reads each one's change from there (kill-safe: an
    # internal table commits before its DT, and a DT never records a version it did not read)
    state_versions: dict[str, int] | None = None

    def to_dict(self) -> JsonObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> Frontier | None:
        if not isinstance(raw, dict):
            return None
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in raw.items() if k in known}
        values["source_versions"] = {str(k): int(v) for k, v in (raw.get("source_versions") or {}).items()}
        if values.get("state_versions") is not None:
            values["state_versions"] = {str(k): int(v) for k, v in values["state_versions"].items()}
        return cls(**values)


@dataclass
class StepInput:
    name: str
    kind: str                     # source | dynamic_table
    path: str
    version: int | None           # pinned version; None for a DT refreshed earlier in the same run


@dataclass
class ChangeInputSpec:
    """An input a custom table reads with CHANGES(): how, where, and its RELY key (if any)."""

    name: str
    mode: str                     # DEFAULT | APPEND_ONLY
    path: str
    key: list[str] | None = None


@dataclass
class CustomSpec:
    """A custom incremental table's statement, as the engine runs it (planning/custom.py)."""

    kind: str                                 # MERGE | INSERT
    columns: list[ColumnDecl]                 # the table's columns
    add_columns: list[ColumnDecl]             # columns the table gains at this refresh
    target_alias: str | None
    on: str | None                            # a MERGE's ON condition, as written
    changes: list[ChangeInputSpec]
    start_versions: dict[str, int] | None     # with backfill, at creation: where CHANGES() begin
    start_at: StartAt | None = None           # `start_at` config

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> CustomSpec | None:
        if raw is None:
            return None
        values = dict(raw)
        values["changes"] = [ChangeInputSpec(**c) for c in raw.get("changes") or []]
        return cls(**values)


@dataclass
class InternalTable:
    """An intermediate result a DT keeps as a Delta table of its own (its *internal state*): at
    `<warehouse>/_dt/internal/<dt>/<role>`, refreshed in the DT's refresh before the DT, with a
    frontier of its own; dropped with the DT (docs/configuration.md, "Internal state")."""

    role: str                     # what it holds, e.g. top_n_rows
    path: str
    sql: str                      # Spark SQL over the DT's inputs (logical names): its rows


@dataclass
class SortKey:
    position: int                 # column of the top-N's inner query
    desc: bool
    nulls_first: bool


@dataclass
class TopNSpec:
    """A top-N DT (`ORDER BY … LIMIT n` outermost) as the engine refreshes it: the query under
    it, whose change is computed, and the top-N applied over it (sql/rules/top_n.py)."""

    inner_sql: str                # Spark SQL: the outputs, then the hidden sort columns
    outputs: int                  # the DT's columns: the inner query's first `outputs`
    order: list[SortKey]
    limit: int | None
    offset: int
    state: InternalTable | None   # the inner query's rows, when recomputing from them pays

    @property
    def hidden(self) -> int:
        return max([k.position + 1 for k in self.order] + [self.outputs]) - self.outputs

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> TopNSpec | None:
        if raw is None:
            return None
        values = dict(raw)
        values["order"] = [SortKey(**k) for k in raw.get("order") or []]
        values["state"] = InternalTable(**raw["state"]) if raw.get("state") else None
        return cls(**values)


@dataclass(frozen=True)
class StepOptions:
    """What a step carries beyond its action, for the engine, the history and the renderers,
    built whole by the planner; each default is the one a table without that config gets."""

    previous_rows: int | None = 0             # rows of the DT before this refresh (None: unknown)
    source_ids: dict[str, str] | None = None  # Delta table id of each source (replaced sources)
    file: str | None = None                   # the table file (error messages)
    delta_sql: str | None = None              # the query with columns bound to their inputs
    # the columns of each input an incremental refresh reads (and checks); None: all
    read_columns: dict[str, list[str]] | None = None
    read_by_tables: bool = False              # another DT of the project reads this one
    columns: list[ColumnDecl] | None = None   # `columns:` config (names and types)
    # the output names dt gave the query's unaliased expressions (as Spark names them,
    # sql/spark_names.py): the result's columns are renamed to them by position
    names: list[str] | None = None
    layout: Layout = field(default_factory=Layout)
    regions: Regions = field(default_factory=Regions)
    backfill: Backfill = field(default_factory=Backfill)
    estimate: Estimate = field(default_factory=Estimate)
    lag: LagTarget = field(default_factory=LagTarget)
    custom: CustomSpec | None = None          # custom incremental tables only
    audit: AuditSpec | None = None            # what the refresh checks before it commits
    # DTs of the plan its checks read (a relationships target, a singular test's other tables):
    # it starts after their refreshes finish, reading what they commit, without depending on them
    after: list[str] | None = None
    top_n: TopNSpec | None = None             # an incremental top-N (strategies/top_n.py)

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> StepOptions:
        values = dict(raw or {})
        backfill = values.get("backfill") or {}
        values["layout"] = Layout(**values.get("layout") or {})
        values["regions"] = Regions(**values.get("regions") or {})
        values["backfill"] = Backfill(spec=backfill.get("spec"),
                                      copy=BackfillCopy(**backfill["copy"]) if backfill.get("copy") else None)
        values["estimate"] = Estimate(**values.get("estimate") or {})
        values["lag"] = LagTarget(**values.get("lag") or {})
        values["custom"] = CustomSpec.from_dict(values.get("custom"))
        values["audit"] = AuditSpec.from_dict(values.get("audit"))
        values["top_n"] = TopNSpec.from_dict(values.get("top_n"))
        return cls(**values)


@dataclass
class RefreshStep:
    """One DT's refresh as planned: data, so `--dry-run` can print it and the driver run it."""

    name: str
    path: str
    action: str                   # NO_DATA | INCREMENTAL | FULL | REINITIALIZE
    trigger: str                  # CREATION | SCHEDULED | MANUAL
    sql: str                      # Spark SQL, table names as logical names (bound as views)
    inputs: list[StepInput]
    definition_hash: str
    refresh_mode: str             # resolved: INCREMENTAL | FULL
    refresh_mode_reason: str | None = None
    reinit_reason: str | None = None
    previous: Frontier | None = None         # frontier of the DT before this refresh
    upstream: list[str] = field(default_factory=list)   # DTs of this plan it depends on
    options: StepOptions = field(default_factory=StepOptions)


@dataclass
class Plan:
    run_id: str
    project: str
    warehouse: str
    data_timestamp: str           # ISO-8601 UTC: the snapshot moment every step reflects
    source_versions: dict[str, int]
    steps: list[RefreshStep]
    threads: int = 1              # refreshes run side by side (each once its upstream finished)
    # catalog work done after the refreshes (see dtcli/planning/catalog.py)
    registrations: list[Registration] = field(default_factory=list)
    unregistrations: list[Unregistration] = field(default_factory=list)
    # sources declared by table name to look up in the metastore first
    resolutions: list[SourceLookup] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        raw = json.loads(text)
        steps = []
        for s in raw.pop("steps"):
            s["inputs"] = [StepInput(**i) for i in s["inputs"]]
            s["previous"] = Frontier.from_dict(s.get("previous"))
            s["options"] = StepOptions.from_dict(s.get("options"))
            steps.append(RefreshStep(**s))
        raw["registrations"] = [Registration(**r) for r in raw.get("registrations") or []]
        raw["unregistrations"] = [Unregistration(**r) for r in raw.get("unregistrations") or []]
        raw["resolutions"] = [SourceLookup(**r) for r in raw.get("resolutions") or []]
        return cls(steps=steps, **raw)

    @property
    def spark_steps(self) -> list[RefreshStep]:
        return [s for s in self.steps if s.action != NO_DATA]

    @property
    def needs_spark(self) -> bool:
        """Refreshes to run, or tables to (un)register in the metastore."""
        return bool(self.spark_steps or self.registrations or self.unregistrations or self.resolutions)


@dataclass
class RefreshRecord:
    """One refresh: what the engine reports, the history stores and the renderers show."""

    name: str
    state: str
    refresh_action: str
    refresh_trigger: str
    data_timestamp: str | None
    refresh_start_time: str
    refresh_end_time: str
    run_id: str
    state_message: str | None = None
    reinit_reason: str | None = None
    num_inserted_rows: int = 0
    num_deleted_rows: int = 0
    num_copied_rows: int = 0
    num_updated_rows: int = 0                  # rows a MERGE updated in place (custom tables)
    inputs_with_changed_data: list[str] = field(default_factory=list)
    source_versions: dict[str, int] = field(default_factory=dict)
    table_version: int | None = None
    definition_hash: str | None = None
    refresh_action_reason: str | None = None   # why this action (ADAPTIVE: its estimate)
    change_rows: int | None = None             # changed input rows the refresh read (estimated)
    input_rows: int | None = None              # rows of its inputs at the versions it read
    # Snowflake's newer refresh-history columns, where dt has the fact:
    state_code: str | None = None          # SUCCESS, or why not: an error condition, UPSTREAM_FAILED, ...
    query_id: str | None = None            # "<Spark application id>/<run id>"; None when no Spark ran for it
    target_lag_sec: int | None = None      # the effective target lag when it refreshed
    completion_target: str | None = None   # previous data timestamp + target lag
    # how an INCREMENTAL refresh applied its change (own_rows_aggregate, own_rows_window,
    # single_row_recomputed, keys_recomputed, slice_replaced, rows_appended, rows_merged,
    # table_rewritten, no_row_changed)
    refresh_strategy: str | None = None
    # what the refresh's data tests and expectations found (dtcli.data_tests.CheckResult as dicts)
    data_tests: list[CheckResultDict] | None = None

    def to_dict(self) -> JsonObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: JsonObject) -> RefreshRecord:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})

    @property
    def failed(self) -> bool:
        return self.state in FAILURE_STATES

    @property
    def statistics(self) -> dict[str, int]:
        return {"num_inserted_rows": self.num_inserted_rows, "num_deleted_rows": self.num_deleted_rows,
                "num_copied_rows": self.num_copied_rows}

    def to_row(self) -> JsonObject:
        """The JSON shape of `dt show refresh-history` (Snowflake's columns, snake_case)."""
        row = self.to_dict()
        for key in self.statistics:
            row.pop(key)
        row["statistics"] = self.statistics
        return row


def any_failed(records: list[RefreshRecord]) -> bool:
    return any(r.failed for r in records)
