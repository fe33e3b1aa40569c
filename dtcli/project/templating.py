"""Sandboxed Jinja rendering of table SQL with dbt's config(), ref(), source() and var().

Rendering keeps every line where it was, so SQL errors point at the line in the user's file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from dtcli.errors import ConfigError, ValidationError
from dtcli.json_types import YamlMapping

_BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)


def _keep_lines(text: str) -> str:
    """Fold multi-line Jinja tags onto one line and re-emit their newlines after the tag."""

    def fold(match: re.Match) -> str:
        block = match.group(0)
        n = block.count("\n")
        return block.replace("\n", " ") + "\n" * n if n else block

    return _BLOCK.sub(fold, text)


@dataclass
class Rendered:
    sql: str
    config: YamlMapping = field(default_factory=dict)   # what config(...) set
    refs: list[str] = field(default_factory=list)


class _Halt(Exception):
    """Carries a dt error out of Jinja, which would otherwise wrap it."""

    def __init__(self, error: Exception):
        self.error = error


def _line_of(text: str, needle: str) -> int | None:
    idx = text.find(needle)
    return text.count("\n", 0, idx) + 1 if idx >= 0 else None


def render_sql(text: str, file: str, *, is_table: Callable[[str], bool], is_source: Callable[[str], bool],
               table_names: list[str], source_names: list[str], variables: YamlMapping,
               dialect: str = "spark") -> Rendered:
    from dtcli.errors import suggest

    # the name ref()/source() put in the SQL, quoted as the project's dialect quotes identifiers
    # (a name may be a keyword: `order`; Snowflake's parser refuses backticks)
    quote = '"' if dialect == "snowflake" else "`"

    out = Rendered(sql="")

    def config(**kwargs: Any) -> str:
        out.config.update(kwargs)
        return ""

    def ref(name: str, *_: Any) -> str:
        if not is_table(name):
            line = _line_of(text, f"'{name}'") or _line_of(text, f'"{name}"')
            raise _Halt(ValidationError(f"ref('{name}') names no dynamic table or seed of this project", file=file,
                                        line=line, hint=suggest(name, table_names) or "add tables/" + name + ".sql"))
        out.refs.append(name)
        return f"{quote}{name.lower()}{quote}"     # a table's name is its file's stem, lower-cased

    def source(name: str, table: str | None = None) -> str:
        key = table or name
        if not is_source(key):
            line = _line_of(text, f"'{key}'") or _line_of(text, f'"{key}"')
            hint = suggest(key, source_names) or "declare it under sources: in dt_project.yml"
            raise _Halt(ValidationError(f"source('{key}') is not declared", file=file, line=line, hint=hint))
        out.refs.append(key)
        return f"{quote}{key}{quote}"

    def var(name: str, default: Any = None) -> Any:
        if name in variables:
            return variables[name]
        if default is not None:
            return default
        line = _line_of(text, f"'{name}'") or _line_of(text, f'"{name}"')
        raise _Halt(ConfigError(f"var('{name}') is not set", file=file, line=line,
                                hint="add it under vars: in dt_project.yml or pass --vars"))

    env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.globals.update(config=config, ref=ref, source=source, var=var)
    try:
        out.sql = env.from_string(_keep_lines(text)).render()
    except _Halt as halt:
        raise halt.error from None
    except jinja2.TemplateSyntaxError as exc:
        raise ValidationError(f"Jinja syntax error: {exc.message}", file=file, line=exc.lineno) from None
    except jinja2.UndefinedError as exc:
        raise ValidationError(f"Jinja error: {exc.message}", file=file,
                              hint="only config(), ref(), source() and var() are available") from None
    except jinja2.TemplateError as exc:
        raise ValidationError(f"Jinja error: {exc}", file=file) from None
    except TypeError as exc:
        raise ValidationError(f"Jinja call error: {exc}", file=file) from None
    return out
