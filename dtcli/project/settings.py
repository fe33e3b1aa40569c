"""`dt_project.yml`: project-level settings, with a target's overrides applied."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtcli.errors import ConfigError, suggest
from dtcli.json_types import YamlMapping
from dtcli.model import LineageSpec, SourceDef, join_path
from dtcli.model.definitions import CatalogSpec
from dtcli.project.data_tests import source_tests
from dtcli.project.lineage_settings import parse_openlineage
from dtcli.project.yamlio import LineDict, expect_mapping, load_yaml_file
from dtcli.state import source_names

PROJECT_FILE = "dt_project.yml"
PROJECT_KEYS = {"name", "dialect", "warehouse", "spark", "targets", "defaults", "sources", "vars",
                "default_target", "version", "folders", "threads", "catalog", "openlineage"}
TARGET_KEYS = {"warehouse", "spark", "dialect", "vars", "defaults", "threads", "catalog", "openlineage"}
# Refreshes of independent DTs a run executes side by side, as dbt's `threads`: while one waits
# on a commit or plans its queries, another computes.
DEFAULT_THREADS = 4
SOURCE_KEYS = {"path", "table", "primary_key", "rely", "description", "columns", "data_tests", "tests"}
SPARK_KEYS = {"master", "conf", "jars", "jit", "class_archive"}
# How the JVM of a run compiles (see dtcli/engine/launch/spark_conf.py:jit_options).
JIT_MODES = ("auto", "quick", "peak")
# Whether the driver JVM maps a class-data-sharing archive (dtcli/engine/launch/class_archive.py).
CLASS_ARCHIVE_MODES = ("auto", "off")
CATALOG_KEYS = {"schema", "name"}
# A schema or catalog name dt writes into SQL unquoted: a plain identifier, as every metastore
# (Hive, Glue, Unity Catalog) accepts it.
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DIALECTS = {"spark", "spark2", "databricks", "snowflake", "hive", "duckdb", "postgres", "bigquery", "trino"}


@dataclass
class Settings:
    root: Path
    file: Path
    name: str
    dialect: str
    warehouse: str
    spark_master: str
    spark_conf: dict[str, str]
    jars: tuple[str, ...]
    defaults: LineDict
    sources: dict[str, SourceDef]
    vars: YamlMapping = field(default_factory=dict)
    target: str | None = None
    folders: LineDict = field(default_factory=LineDict)   # folder under tables/ -> its config
    threads: int = DEFAULT_THREADS
    catalog: CatalogSpec | None = None
    version: str | None = None            # the project's own version (`version:`), as in dbt
    spark_jit: str = "auto"               # `spark.jit`: auto | quick | peak
    spark_class_archive: str = "auto"     # `spark.class_archive`: auto | off
    openlineage: LineageSpec | None = None   # `openlineage:` (project/lineage_settings.py)


def _check_keys(mapping: LineDict, allowed: set[str], file: Path, what: str) -> None:
    from dtcli.config_keys import TABLE_KEYS

    for key in mapping:
        if key not in allowed:
            hint = suggest(str(key), allowed) or f"known keys: {', '.join(sorted(allowed))}"
            if key in TABLE_KEYS and "defaults" in allowed:
                hint = f"table config keys go under defaults, e.g. defaults: {{{key}: ...}}"
            raise ConfigError(f"unknown {what} key '{key}'", file=file, line=mapping.line_of(key),
                              hint=hint)


def _resolve_path(root: Path, value: str) -> str:
    if "://" in value:
        return value
    return str((root / value).resolve())


def load_settings(root: Path, target: str | None = None) -> Settings:
    file = root / PROJECT_FILE
    if not file.is_file():
        raise ConfigError(f"no {PROJECT_FILE} in {root}", file=file,
                          hint="run `dt init` to create a project, or pass --project-dir")
    raw = expect_mapping(load_yaml_file(file), file, PROJECT_FILE)
    _check_keys(raw, PROJECT_KEYS, file, "project")
    name = raw.get("name")
    if not name or not isinstance(name, str):
        raise ConfigError("the project needs a name", file=file, line=raw.line_of("name"),
                          hint="add `name: my_project`")

    spark = expect_mapping(raw.get("spark"), file, "spark", raw.line_of("spark"))
    _check_keys(spark, SPARK_KEYS, file, "spark")
    warehouse = raw.get("warehouse", "warehouse")
    dialect = raw.get("dialect", "spark")
    variables = dict(expect_mapping(raw.get("vars"), file, "vars", raw.line_of("vars")))
    master = spark.get("master", "local[*]")
    conf = dict(expect_mapping(spark.get("conf"), file, "spark.conf", spark.line_of("conf")))
    jars = spark.get("jars") or []
    jit = _choice(spark, "jit", JIT_MODES, file, "auto (the default) picks per run")
    class_archive = _choice(spark, "class_archive", CLASS_ARCHIVE_MODES, file,
                            "auto (the default) keeps one per Java and jar set; off starts without")
    threads = _threads(raw.get("threads", DEFAULT_THREADS), file, raw.line_of("threads"))
    catalog = _catalog(raw, file)
    openlineage = parse_openlineage(raw, file, root)

    defaults = expect_mapping(raw.get("defaults"), file, "defaults", raw.line_of("defaults"))
    targets = expect_mapping(raw.get("targets"), file, "targets", raw.line_of("targets"))
    target = target or raw.get("default_target")
    if target:
        if target not in targets:
            raise ConfigError(f"target '{target}' is not defined", file=file, line=raw.line_of("targets"),
                              hint=suggest(target, map(str, targets))          # YAML reads a bare `off` as false
                              or f"targets: {', '.join(map(str, targets)) or 'none'}")
        over = expect_mapping(targets[target], file, f"target {target}", targets.line_of(target))
        _check_keys(over, TARGET_KEYS, file, f"target '{target}'")
        warehouse = over.get("warehouse", warehouse)
        dialect = over.get("dialect", dialect)
        variables.update(over.get("vars") or {})
        tspark = expect_mapping(over.get("spark"), file, "spark", over.line_of("spark"))
        _check_keys(tspark, SPARK_KEYS, file, "spark")
        master = tspark.get("master", master)
        conf.update(tspark.get("conf") or {})
        jars = tspark.get("jars", jars)
        if "jit" in tspark:
            jit = _choice(tspark, "jit", JIT_MODES, file, "auto (the default) picks per run")
        if "class_archive" in tspark:
            class_archive = _choice(tspark, "class_archive", CLASS_ARCHIVE_MODES, file, "auto or off")
        if "threads" in over:
            threads = _threads(over["threads"], file, over.line_of("threads"))
        if "catalog" in over:       # a target publishes elsewhere (or, with `catalog: null`, not at all)
            catalog = _catalog(over, file)
        if "openlineage" in over:   # a target sends elsewhere (or, with `openlineage: null`, nowhere)
            openlineage = parse_openlineage(over, file, root)
        # a target's defaults override the project's key by key (e.g. deletion_vectors: false
        # for a target whose readers cannot read deletion vectors)
        tdefaults = expect_mapping(over.get("defaults"), file, f"target {target} defaults",
                                   over.line_of("defaults"))
        defaults = _overlay(defaults, tdefaults)

    if str(dialect).lower() not in DIALECTS:
        raise ConfigError(f"unknown dialect '{dialect}'", file=file, line=raw.line_of("dialect"),
                          hint=suggest(str(dialect), DIALECTS) or "use spark or snowflake")
    if isinstance(jars, str):
        jars = [j for j in jars.split(",") if j]

    folders = expect_mapping(raw.get("folders"), file, "folders", raw.line_of("folders"))
    wh = _resolve_path(root, str(warehouse))
    sources = _load_sources(root, file, raw, wh)
    return Settings(root=root, file=file, name=name, dialect=str(dialect).lower(), warehouse=wh,
                    spark_master=str(master), spark_conf={str(k): str(v) for k, v in conf.items()},
                    jars=tuple(_resolve_path(root, j) for j in jars), defaults=defaults,
                    sources=sources, vars=variables, target=target, folders=folders, threads=threads,
                    catalog=catalog, version=None if raw.get("version") is None else str(raw["version"]),
                    spark_jit=jit, spark_class_archive=class_archive, openlineage=openlineage)


def _choice(spark: LineDict, key: str, modes: tuple[str, ...], file: Path, hint: str) -> str:
    """`spark.<key>`: one of `modes` (the first is the default)."""
    raw = spark.get(key, modes[0])
    value = ("off" if raw is False else str(raw)).lower()     # YAML reads a bare `off` as false
    if value not in modes:
        raise ConfigError(f"spark.{key} must be one of {', '.join(modes)}, not {raw!r}",
                          file=file, line=spark.line_of(key), hint=suggest(value, modes) or hint)
    return value


def _threads(value: Any, file: Path, line: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"threads must be a whole number of at least 1, not {value!r}", file=file,
                          line=line, hint="e.g. threads: 4 (1: one refresh at a time)")
    return value


def _catalog(raw: LineDict, file: Path) -> CatalogSpec | None:
    """`catalog: {schema: S}` or `{name: C, schema: S}`; None without it."""
    if raw.get("catalog") is None:
        return None
    line = raw.line_of("catalog")
    spec = expect_mapping(raw["catalog"], file, "catalog", line)
    _check_keys(spec, CATALOG_KEYS, file, "catalog")
    example = "e.g. catalog: {schema: analytics}"
    if "schema" not in spec:
        raise ConfigError("catalog needs a schema", file=file, line=line, hint=example)
    for key in ("schema", "name"):
        value = spec.get(key)
        if key in spec and not (isinstance(value, str) and _IDENTIFIER.match(value)):
            raise ConfigError(f"catalog {key} {value!r} is not an identifier", file=file,
                              line=spec.line_of(key) or line,
                              hint=f"letters, digits and _, not starting with a digit; {example}")
    return CatalogSpec(schema=spec["schema"].lower(),
                       name=spec["name"].lower() if spec.get("name") else None)


def _overlay(base: LineDict, over: LineDict) -> LineDict:
    """`base` with `over`'s keys replacing its own, each key keeping the line it came from."""
    merged = LineDict({**base, **over})
    merged.lines = {**getattr(base, "lines", {}), **getattr(over, "lines", {})}
    return merged


def _load_sources(root: Path, file: Path, raw: LineDict, warehouse: str) -> dict[str, SourceDef]:
    sources: dict[str, SourceDef] = {}
    # Seeds become sources stored in the warehouse (`dt seed` writes them there).
    for csv in sorted((root / "seeds").glob("*.csv")):
        name = csv.stem.lower()
        pk, rely, description, tests = _seed_key(csv.with_suffix(".yml"), _relative(root, csv.with_suffix(".yml")))
        sources[name] = SourceDef(name, join_path(warehouse, name), pk, origin="seed", file=str(csv), rely=rely,
                                  description=description, data_tests=tuple(tests))
    declared = expect_mapping(raw.get("sources"), file, "sources", raw.line_of("sources"))
    resolved = None     # where the metastore said names live: read once, if any source has one
    for name, spec in declared.items():
        line = declared.line_of(name)
        if isinstance(spec, str):
            spec = {"path": spec}
        spec = expect_mapping(spec, file, f"source {name}", line)
        _check_keys(spec, SOURCE_KEYS, file, f"source '{name}'")
        if spec.get("path") and spec.get("table"):
            raise ConfigError(f"source '{name}' has both a path and a table name", file=file,
                              line=spec.line_of("table") or line,
                              hint="keep one: `path:` for a Delta folder, `table:` for a name in the metastore")
        if not spec.get("path") and not spec.get("table"):
            raise ConfigError(f"source '{name}' has no path", file=file, line=line,
                              hint="add `path: data/<table>` (a Delta table), or `table: schema.table` "
                                   "(a Delta table in the metastore)")
        pk = spec.get("primary_key") or []
        pk = [pk] if isinstance(pk, str) else list(pk)
        rely = spec.get("rely", False)
        if not isinstance(rely, bool) or (rely and not pk):
            raise ConfigError(f"source '{name}': rely must be true or false, with a primary_key to rely on",
                              file=file, line=spec.line_of("rely") or line,
                              hint="e.g. {path: data/users, primary_key: [id], rely: true}")
        if spec.get("table"):
            table = _table_name(spec["table"], file, spec.line_of("table") or line, str(name))
            resolved = source_names.current(warehouse) if resolved is None else resolved
            found = resolved.get(table)
            path = found.location if found is not None and found.location else ""
        else:
            table, path = None, _resolve_path(root, str(spec["path"]))
        sources[str(name).lower()] = SourceDef(
            str(name).lower(), path, tuple(pk), "declared", str(file), line, rely, table,
            description=_text(spec, "description", file, f"source '{name}'"),
            columns=_columns(spec, file, f"source '{name}'"),
            data_tests=tuple(source_tests(spec, str(name).lower(), _relative(root, file))))
    return sources


def _table_name(value: Any, file: Path, line: int | None, source: str) -> str:
    """`schema.table` or `catalog.schema.table`, each part an identifier; lower case."""
    parts = str(value).split(".") if isinstance(value, str) else []
    if not 2 <= len(parts) <= 3 or not all(_IDENTIFIER.match(p) for p in parts):
        raise ConfigError(f"source '{source}': table {value!r} is not a qualified table name", file=file,
                          line=line, hint="write schema.table (or catalog.schema.table): letters, digits "
                                          "and _, not starting with a digit, e.g. table: raw.orders")
    return ".".join(parts).lower()


def _text(spec: LineDict, key: str, file: Path, what: str) -> str | None:
    value = spec.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{what}: {key} must be text", file=file, line=spec.line_of(key),
                          hint=f"e.g. {key}: 'Orders as the shop system writes them'")
    return value


def _columns(spec: LineDict, file: Path, what: str) -> tuple[tuple[str, str | None], ...]:
    """Declared columns, checked against the Delta table when the project is checked: a list of
    names or of {name, type, description}, or a mapping name: type."""
    raw = spec.get("columns")
    if raw is None:
        return ()
    line = spec.line_of("columns")
    items = list(raw.items()) if isinstance(raw, dict) else None
    if items is None and isinstance(raw, list):
        items = []
        for item in raw:
            if isinstance(item, str):
                items.append((item, None))
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                unknown = set(item) - {"name", "type", "description", "data_tests", "tests"}
                if unknown:
                    raise ConfigError(f"{what}: unknown key '{sorted(unknown)[0]}' in a column", file=file,
                                      line=line, hint="a column is {name, type, description}")
                items.append((item["name"], item.get("type")))
            else:
                items = None
                break
    if items is None or any(t is not None and not isinstance(t, str) for _, t in items):
        raise ConfigError(f"{what}: columns must be a list of names or of {{name, type}}, or name: type",
                          file=file, line=line, hint="e.g. columns: [{name: id, type: bigint}, {name: amount}]")
    return tuple((str(n).lower(), t) for n, t in items)


SEED_KEYS = {"primary_key", "rely", "description", "columns", "data_tests", "tests"}   # columns: read by `dt seed`


def _relative(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _seed_key(yml: Path, shown: str) -> tuple[tuple[str, ...], bool, str | None, list]:
    """A seed's `primary_key`, `rely`, `description` and data tests from `seeds/<name>.yml`, as
    a declared source's."""
    if not yml.is_file():
        return (), False, None, []
    raw = expect_mapping(load_yaml_file(yml), yml, yml.name)
    _check_keys(raw, SEED_KEYS, yml, f"seed '{yml.stem}'")
    pk = raw.get("primary_key") or []
    pk = [pk] if isinstance(pk, str) else list(pk)
    rely = raw.get("rely", False)
    if not isinstance(rely, bool) or (rely and not pk):
        raise ConfigError("rely must be true or false, with a primary_key to rely on", file=yml,
                          line=raw.line_of("rely"), hint="e.g. primary_key: [id] and rely: true")
    return (tuple(str(c) for c in pk), rely, _text(raw, "description", yml, f"seed '{yml.stem}'"),
            source_tests(raw, yml.stem.lower(), shown))
