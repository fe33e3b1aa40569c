"""Turn a project folder into a `Project`: settings, and every table file rendered, parsed once
and resolved to the DTs and sources it reads.

`tables/` is read recursively, as dbt reads `models/`: the file stem is the table name, the
folder path can carry config (`folders:` in dt_project.yml). The DAG, schemas and refresh modes
are built from this by `dtcli.planning.checked`, once per command.
"""

from __future__ import annotations

from pathlib import Path

from dtcli import redact
from dtcli.errors import ConfigError, ValidationError
from dtcli.model import Project, SourceDef, TableDef
from dtcli.planning.check_cache import CheckCache
from dtcli.planning.kinds.registry import kind_of_statement
from dtcli.project.settings import Settings, load_settings
from dtcli.project.singular_tests import load_singular_tests
from dtcli.project.snowflake_ddl import Ddl, is_ddl, parse_ddl
from dtcli.project.table_config import folder_layers, merge_layers, normalise
from dtcli.project.templating import render_sql
from dtcli.project.yamlio import expect_mapping, load_yaml_file
from dtcli.state import storage

TABLES_DIR = "tables"
# Dialects whose quoted identifiers are case-sensitive: input names are left unquoted there.
_CASE_SENSITIVE_QUOTES = {"snowflake", "postgres", "trino", "duckdb", "bigquery"}


def load_project(project_dir: str | Path = ".", target: str | None = None, *,
                 check_sources: bool = False, cache: CheckCache | None = None) -> Project:
    """`cache` (dtcli.planning.check_cache): reuse each table file's render and parse while
    the file, its .yml, its config chain and the project's names, vars and dialect are unchanged."""
    root = Path(project_dir).resolve()
    settings = load_settings(root, target)
    storage.configure(settings.spark_conf)   # deltalake reaches object stores as Spark does
    redact.remember(settings.spark_conf)     # ... and no key of it is printed or written
    files = table_files(root)
    clash = sorted(set(files) & set(settings.sources))
    if clash:
        raise ConfigError(f"'{clash[0]}' is both a dynamic table and a source", file=settings.file,
                          hint=f"rename {_rel(root, files[clash[0]])} or the source")

    if cache is not None and cache.enabled:
        shared = repr((sorted(files), sorted(settings.sources), sorted(n for n, s in settings.sources.items()
                                                                      if s.origin == "seed"),
                       settings.vars, settings.dialect, str(settings.file), str(root)))
        loaded = [cache.get(_table_key(sql_file, settings, shared), _load_table, sql_file, files, settings)
                  for sql_file in files.values()]
    else:
        loaded = [_load_table(sql_file, files, settings) for sql_file in files.values()]
    tables = {t.name: t for t in loaded if t.enabled}
    disabled = {t.name: t for t in loaded if not t.enabled}
    for table in tables.values():
        for inp in table.inputs:
            if inp in disabled:
                raise ValidationError(f"{table.name} reads {inp}, which is disabled (enabled: false)",
                                      file=table.file, line=table.input_lines.get(inp),
                                      hint=f"enable {inp}, or disable {table.name} too")
    project = Project(root=root, name=settings.name, dialect=settings.dialect,
                      warehouse=settings.warehouse, spark_master=settings.spark_master,
                      spark_conf=settings.spark_conf, jars=settings.jars, sources=settings.sources,
                      tables=dict(sorted(tables.items())), vars=settings.vars, target=settings.target,
                      disabled=disabled, threads=settings.threads,
                      catalog=settings.catalog, version=settings.version,
                      spark_jit=settings.spark_jit, spark_class_archive=settings.spark_class_archive,
                      openlineage=settings.openlineage,
                      singular_tests=load_singular_tests(root, settings, files,
                                                         settings.dialect not in _CASE_SENSITIVE_QUOTES))
    if check_sources:
        check_source_paths(project)
    return project


def table_files(root: Path) -> dict[str, Path]:
    """Table name -> .sql file under tables/ (any depth); two files of one name are an error."""
    found: dict[str, Path] = {}
    for path in sorted((root / TABLES_DIR).rglob("*.sql")):
        name = path.stem.lower()
        if name in found:
            raise ValidationError(
                f"two table files define '{name}': {_rel(root, found[name])} and {_rel(root, path)}",
                file=_rel(root, path), line=1,
                hint="a table's name is its file name, wherever the file is; rename one of them")
        found[name] = path
    return found


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _table_key(sql_file: Path, settings: Settings, shared: str) -> str:
    """Everything `_load_table` reads for this file: its text, its .yml, the defaults and the
    folder config that apply to it, and (`shared`) the project's names, vars and dialect."""
    folder = str(sql_file.parent.relative_to(settings.root / TABLES_DIR)).replace("\\", "/").strip(".")
    layers = [(dict(c), c.lines) for c in [settings.defaults, *folder_layers(settings.folders, folder,
                                                                           settings.file)]]
    yml = sql_file.with_suffix(".yml")
    return CheckCache.key("table", str(sql_file), sql_file.read_bytes(),
                          yml.read_bytes() if yml.is_file() else None, repr(layers), shared)


def _load_table(sql_file: Path, files: dict[str, Path], settings: Settings) -> TableDef:
    root = settings.root
    name = sql_file.stem.lower()
    file = _rel(root, sql_file)
    folder = str(sql_file.parent.relative_to(root / TABLES_DIR)).replace("\\", "/").strip(".")
    layers = [(dict(settings.defaults), _rel(root, settings.file), settings.defaults.lines)]
    layers += [(config, _rel(root, settings.file), config.lines)
               for config in folder_layers(settings.folders, folder, settings.file)]
    yml = sql_file.with_suffix(".yml")
    if yml.is_file():
        raw = expect_mapping(load_yaml_file(yml), _rel(root, yml), yml.name)
        if set(raw) == {"config"}:
            raw = expect_mapping(raw["config"], _rel(root, yml), "config", raw.line_of("config"))
        layers.append((dict(raw), _rel(root, yml), raw.lines))

    text = sql_file.read_text(encoding="utf-8")
    table_names = list(files)
    # as in dbt, ref() names a model (here a DT) or a seed; source() names a declared source
    seeds = {n for n, s in settings.sources.items() if s.origin == "seed"}
    rendered = render_sql(text, file, is_table=lambda n: n.lower() in files or n.lower() in seeds,
                          is_source=lambda n: n.lower() in settings.sources,
                          table_names=table_names + sorted(seeds), source_names=list(settings.sources),
                          variables=settings.vars, dialect=settings.dialect)
    config_line = next((i + 1 for i, line in enumerate(text.splitlines()) if "config(" in line), None)
    layers.append((rendered.config, file, {k: config_line for k in rendered.config}))
    sql, ignored = rendered.sql, ()
    if is_ddl(sql):
        ddl = _ddl(sql, name, file, settings, own={**(dict(raw) if yml.is_file() else {}), **rendered.config},
                   own_file=_rel(root, yml) if yml.is_file() else file)
        layers.append((ddl.config, file, ddl.lines))
        sql, ignored = ddl.body, tuple(ddl.ignored)
    config, origin = merge_layers(layers)
    config = normalise(config, origin, file, name)

    kind = kind_of_statement(sql)
    known = {**{n: n for n in table_names}, **{s: s for s in settings.sources}}
    read = kind.read(sql, name, file, settings.dialect, known,
                     quote=settings.dialect not in _CASE_SENSITIVE_QUOTES)
    return TableDef(name=name, file=file, sql=sql, spark_sql=read.spark_sql, kind=kind.name,
                    config=config, config_origin=origin, inputs=tuple(read.inputs),
                    input_lines=read.input_lines, folder=folder, parsed=read.parsed, query=read.query,
                    ignored=ignored, custom=read.custom)


_ALIASES = {"immutable_where": "frozen_where"}


def _ddl(sql: str, name: str, file: str, settings: Settings, own: dict, own_file: str) -> Ddl:
    """A CREATE DYNAMIC TABLE file: its properties, checked against the file's name and the
    table's own YAML (a property set in both places is an error naming both)."""
    if settings.dialect != "snowflake":
        raise ValidationError("CREATE DYNAMIC TABLE is Snowflake SQL, and this project's dialect is "
                              f"{settings.dialect}", file=file, line=1,
                              hint="set dialect: snowflake in dt_project.yml, or keep only the query in the file")
    ddl = parse_ddl(sql, file)
    if ddl.name.lower() != name:
        raise ValidationError(f"the statement creates {ddl.name}, but the file is named {name}", file=file,
                              line=1, hint=f"rename the file to tables/{ddl.name.lower()}.sql, "
                                           f"or the table to {name}")
    own_keys = {_ALIASES.get(k, k) for k in own}
    for key in ddl.config:
        if key in own_keys:
            raise ValidationError(f"{key} is set both by the CREATE statement (line {ddl.lines[key]}) and in "
                                  f"{own_file}", file=file, line=ddl.lines[key],
                                  hint=f"keep one of them: remove {key} from {own_file} or from the statement")
    return ddl


def unresolved_names(project: Project) -> list[SourceDef]:
    """Sources read by table name whose location dt must ask the metastore for: never asked, or
    the location it gave holds no Delta table any more (the table was dropped or moved)."""
    used = {i for t in project.tables.values() for i in t.inputs if i in project.sources}
    return [s for n, s in sorted(project.sources.items()) if n in used and s.table and
            (not s.path or ("://" not in s.path and not (Path(s.path) / "_delta_log").is_dir()))]


def check_source_paths(project: Project) -> None:
    """Every source a table reads must be an existing Delta table (local paths are checked)."""
    for source in unresolved_names(project):
        where = f"was at {source.path}, which holds no Delta table now" if source.path else \
            "has not been looked up in the metastore yet"
        raise ValidationError(f"source '{source.name}' is the table {source.table}, which {where}",
                              file=_rel(project.root, Path(source.file)), line=source.line,
                              hint="`dt run` looks table names up (in the metastore of the target's "
                                   "spark.conf) before it plans")
    used = {i for t in project.tables.values() for i in t.inputs if i in project.sources}
    for name in sorted(used):
        source = project.sources[name]
        if "://" in source.path:
            continue  # remote storage is checked when the refresh reads it
        if not (Path(source.path) / "_delta_log").is_dir():
            if source.origin == "seed":
                raise ValidationError(f"seed '{name}' has not been loaded ({source.path} does not exist)",
                                      file=_rel(project.root, Path(source.file)),
                                      hint="run `dt seed` first")
            where = "does not exist" if not Path(source.path).exists() else "is not a Delta table"
            raise ValidationError(f"source '{name}' path {source.path} {where}",
                                  file=_rel(project.root, Path(source.file)), line=source.line,
                                  hint="fix the path, or create the Delta table first")
