"""Singular data tests: `tests/<name>.sql`, a query returning the rows that break a rule.

Written as table files are (Jinja with `ref()`, `source()`, `var()` and `config()`, tables by
name, in the project's dialect) and parsed once when the project loads: a file that does not
parse, or names a table the project does not have, is an error at its line before any Spark
work. `{{ config(severity='warn') }}` makes its failures a warning.
"""

from __future__ import annotations

from pathlib import Path

from dtcli.data_tests import SEVERITIES, SINGULAR, DataTest
from dtcli.errors import ConfigError, suggest
from dtcli.project.templating import render_sql
from dtcli.sql.parse import parse_sql, rename_tables, resolve_input, table_refs, the_query, to_spark

TESTS_DIR = "tests"
_CONFIG = ("severity", "enabled", "tags", "meta", "name")


def load_singular_tests(root: Path, settings, files: dict[str, Path], quote: bool) -> list[DataTest]:
    """Every `tests/**/*.sql` of the project, rendered, parsed and resolved to the tables it
    reads (`files`: table name -> its file; `quote`: whether logical names are quoted, as for
    the table files)."""
    folder = root / TESTS_DIR
    if not folder.is_dir():
        return []
    seeds = {n for n, s in settings.sources.items() if s.origin == "seed"}
    known = {**{n: n for n in files}, **{s: s for s in settings.sources}}
    out: list[DataTest] = []
    for path in sorted(folder.rglob("*.sql")):
        file = str(path.relative_to(root))
        text = path.read_text(encoding="utf-8")
        rendered = render_sql(text, file, is_table=lambda n: n.lower() in files or n.lower() in seeds,
                              is_source=lambda n: n.lower() in settings.sources,
                              table_names=sorted(files) + sorted(seeds), source_names=list(settings.sources),
                              variables=settings.vars, dialect=settings.dialect)
        config = dict(rendered.config)
        line = next((i + 1 for i, text_line in enumerate(text.splitlines()) if "config(" in text_line), None)
        unknown = sorted(set(config) - set(_CONFIG))
        if unknown:
            raise ConfigError(f"unknown config key '{unknown[0]}' for a singular test", file=file, line=line,
                              hint=suggest(unknown[0], _CONFIG) or "a singular test's config takes severity")
        if config.get("enabled", True) is False:
            continue
        severity = str(config.get("severity", "error")).lower()
        if severity not in SEVERITIES:
            raise ConfigError(f"severity '{config['severity']}' is not error or warn", file=file, line=line,
                              hint="config(severity='warn') records the failing rows and goes on")
        query = the_query(parse_sql(rendered.sql, settings.dialect, file), file)
        inputs: list[str] = []
        mapping: dict[str, str] = {}
        for ref, ref_line in table_refs(query):
            resolved = resolve_input(known, ref, file, ref_line)
            mapping[ref] = resolved
            if resolved not in inputs:
                inputs.append(resolved)
        if not inputs:
            raise ConfigError("the singular test reads no table", file=file, line=1,
                              hint="a singular test selects the failing rows of a table, e.g. "
                                   "SELECT * FROM {{ ref('orders') }} WHERE amount < 0")
        logical = rename_tables(query, mapping, quote=quote)
        out.append(DataTest(kind=SINGULAR, table="", name=str(config.get("name") or path.stem.lower()),
                            severity=severity, file=file, line=1, sql=to_spark(logical), inputs=tuple(inputs)))
    names = [t.name for t in out]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise ConfigError(f"two singular tests are named {twice}", file=str(folder.relative_to(root)),
                          hint="a singular test's name is its file name: rename one")
    return out
