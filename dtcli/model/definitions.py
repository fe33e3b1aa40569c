"""A project as loaded: its settings, sources and dynamic tables (after Jinja, before planning).

Built by dtcli/project, read by planning, the engine and the renderers; nothing here imports Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from dtcli.config_keys import ColumnDecl, TableConfig
from dtcli.data_tests import DataTest
from dtcli.json_types import YamlMapping
from dtcli.lazy import LazyFields


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
