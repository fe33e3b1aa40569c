"""Turn a project folder into a validated `Project`: settings, tables, their inputs and the DAG."""

from __future__ import annotations

from pathlib import Path

from dtcli.errors import ConfigError, ValidationError, suggest
from dtcli.model import Project, TableDef
from dtcli.project.settings import load_settings
from dtcli.project.table_config import merge_layers, normalise
from dtcli.project.templating import render_sql
from dtcli.project.yamlio import expect_mapping, load_yaml_file
from dtcli.sql.parse import parse_query, rename_tables, statement_kind, table_refs, to_spark


def load_project(project_dir: str | Path = ".", target: str | None = None, *,
                 check_sources: bool = False) -> Project:
    root = Path(project_dir).resolve()
    settings = load_settings(root, target)
    sql_files = sorted((root / "tables").glob("*.sql"))
    names = [f.stem.lower() for f in sql_files]
    clash = sorted(set(names) & set(settings.sources))
    if clash:
        raise ConfigError(f"'{clash[0]}' is both a dynamic table and a source", file=settings.file,
                          hint=f"rename tables/{clash[0]}.sql or the source")

    tables: dict[str, TableDef] = {}
    for sql_file in sql_files:
        table = _load_table(sql_file, names, settings)
        tables[table.name] = table

    project = Project(root=root, name=settings.name, dialect=settings.dialect,
                      warehouse=settings.warehouse, spark_master=settings.spark_master,
                      spark_conf=settings.spark_conf, jars=settings.jars, sources=settings.sources,
                      tables=tables, vars=settings.vars, target=settings.target)
    from dtcli.planning.graph import Graph  # the graph checks cycles when built
    Graph.of(project)
    if check_sources:
        check_source_paths(project)
    return project


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _load_table(sql_file: Path, table_names: list[str], settings) -> TableDef:
    root = settings.root
    name = sql_file.stem.lower()
    file = _rel(root, sql_file)
    layers = [(dict(settings.defaults), _rel(root, settings.file), settings.defaults.lines)]
    yml = sql_file.with_suffix(".yml")
    if yml.is_file():
        raw = expect_mapping(load_yaml_file(yml), _rel(root, yml), yml.name)
        if set(raw) == {"config"}:
            raw = expect_mapping(raw["config"], _rel(root, yml), "config", raw.line_of("config"))
        layers.append((dict(raw), _rel(root, yml), raw.lines))

    text = sql_file.read_text(encoding="utf-8")
    rendered = render_sql(text, file, is_table=lambda n: n.lower() in table_names,
                          is_source=lambda n: n.lower() in settings.sources,
                          table_names=table_names, source_names=list(settings.sources),
                          variables=settings.vars)
    config_line = next((i + 1 for i, l in enumerate(text.splitlines()) if "config(" in l), None)
    layers.append((rendered.config, file, {k: config_line for k in rendered.config}))
    config, origin = merge_layers(layers)
    config = normalise(config, origin, file)

    kind = statement_kind(rendered.sql)
    if kind == "custom":
        raise ValidationError("custom incremental tables (REFRESH USING / INSERT INTO SELF) are not supported yet",
                              file=file, line=1, hint="write the table as a SELECT query for now")
    query = parse_query(rendered.sql, settings.dialect, file)
    known = {**{n: n for n in table_names}, **{s: s for s in settings.sources}}
    inputs: list[str] = []
    input_lines: dict[str, int] = {}
    mapping: dict[str, str] = {}
    for ref, line in table_refs(query):
        resolved = known.get(ref) or known.get(ref.split(".")[-1])
        if resolved is None:
            raise ValidationError(f"unknown table '{ref}'", file=file, line=line,
                                  hint=suggest(ref.split(".")[-1], known) or
                                  "declare it under sources: in dt_project.yml or add tables/<name>.sql")
        if resolved == name:
            raise ValidationError(f"table '{name}' reads itself", file=file, line=line,
                                  hint="a dynamic table cannot read its own output")
        mapping[ref] = resolved
        if resolved not in inputs:
            inputs.append(resolved)
            input_lines[resolved] = line or 1
    spark_sql = to_spark(rename_tables(query, mapping))
    return TableDef(name=name, file=file, sql=rendered.sql, spark_sql=spark_sql, kind=kind,
                    config=config, config_origin=origin, inputs=tuple(inputs), input_lines=input_lines)


def check_source_paths(project: Project) -> None:
    """Every source a table reads must be an existing Delta table (local paths are checked)."""
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
