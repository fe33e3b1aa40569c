"""`dt import snowflake SCRIPT.sql`: a script of CREATE DYNAMIC TABLE statements (as Snowflake's
GET_DDL prints them) split into table files, one per dynamic table.

Each statement goes to `tables/<name>.sql` as written (a table file may hold the statement, see
snowflake_ddl.py), with the `ALTER TABLE <name> ADD ... RELY` statements that follow it; other
statements (CREATE TABLE, grants, ...) are listed as skipped. Nothing is written when any
statement does not read, or when a file exists and --force was not given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from sqlglot.dialects.snowflake import Snowflake
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType as T

from dtcli.errors import ConfigError, ValidationError
from dtcli.json_types import JsonObject, YamlMapping
from dtcli.model.definitions import IgnoredPropertyDict
from dtcli.project.snowflake_ddl import parse_ddl, rely_constraint
from dtcli.project.yamlio import load_yaml_file

_ALTER = re.compile(r"\s*alter\s+(?:dynamic\s+)?table\s+(?:[\w\"$]+\.)*\"?([\w$]+)\"?\s+add\b", re.I)


@dataclass
class Imported:
    name: str
    file: str
    mapped: YamlMapping                       # the config its CREATE statement sets, as .yml holds it
    ignored: list[IgnoredPropertyDict]


class Skipped(TypedDict):
    """A statement that defines no dynamic table (CREATE TABLE, a grant...): its line and start."""

    line: int
    statement: str


@dataclass
class ImportReport:
    tables: list[Imported] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    dialect_set: bool = False

    def to_dict(self) -> JsonObject:
        return {"tables": [vars(t) for t in self.tables], "skipped": self.skipped,
                "dialect_set": self.dialect_set}


def statements(script: str, file: str) -> list[tuple[str, int]]:
    """(statement text with its leading comments, first line) for each `;`-separated statement."""
    try:
        tokens = Snowflake().tokenize(script)
    except SqlglotError as err:
        raise ValidationError(f"the script cannot be read: {err}", file=file) from None
    out, start, depth, first = [], 0, 0, None
    for tok in tokens:
        first = first or tok
        depth += {T.L_PAREN: 1, T.R_PAREN: -1}.get(tok.token_type, 0)
        if tok.token_type == T.SEMICOLON and depth == 0:
            if first is not tok:
                out.append((script[start:tok.start].strip("\n").rstrip(), first.line))
            start, first = tok.end + 1, None
    if first is not None:
        out.append((script[start:].strip("\n").rstrip(), first.line))
    return out


def _start(statement: str) -> int:
    """Where the statement's first token is, after its leading comments."""
    match = re.match(r"(?:\s|--[^\n]*|/\*.*?\*/)*", statement, re.S)
    return match.end() if match else 0


def import_script(root: Path, script: Path, *, force: bool = False) -> ImportReport:
    project_file = root / "dt_project.yml"
    if not project_file.is_file():
        raise ConfigError(f"no dt project at {root} (dt_project.yml not found)",
                          hint=f"create one with dt init {root}, then import into it")
    settings = load_yaml_file(project_file) or {}
    dialect = str(settings.get("dialect") or "").lower()
    if dialect not in ("", "snowflake"):
        raise ConfigError(f"{project_file.name} sets dialect: {dialect}; Snowflake statements need "
                          "dialect: snowflake",
                          hint="import into a project of its own (dt init NEW_DIR), or change the dialect "
                               "if every table of this one is Snowflake SQL")
    file = str(script)
    text = script.read_text(encoding="utf-8")
    report, files = ImportReport(), {}
    for statement, line in statements(text, file):
        # errors name the script's own lines: the statement (from its comments on) padded to its place
        padded = "\n" * (line - 1 - statement.count("\n", 0, _start(statement))) + statement
        words = re.sub(r"--[^\n]*|/\*.*?\*/", "", statement, flags=re.S).split(None, 6)
        head = " ".join(words[:6]).upper()
        if head.startswith("CREATE") and " DYNAMIC TABLE" in f" {head}":
            ddl = parse_ddl(padded + ";", file)
            name = ddl.name.lower()
            if name in files:
                raise ValidationError(f"the script creates {name} twice", file=file, line=line,
                                      hint="keep one CREATE DYNAMIC TABLE statement per table")
            files[name] = [statement]
            report.tables.append(Imported(name, f"tables/{name}.sql", dict(ddl.config), ddl.ignored))
        elif (alter := _ALTER.match(statement)) and alter.group(1).lower() in files:
            name = alter.group(1).lower()
            files[name].append(statement)
            imported = next(t for t in report.tables if t.name == name)
            imported.mapped.setdefault("constraints", []).append(rely_constraint(statement, name, file, line))
        else:
            report.skipped.append({"line": line, "statement": " ".join(words[:5]) + (" ..." if len(words) > 5 else "")})
    if not files:
        raise ValidationError("the script has no CREATE DYNAMIC TABLE statement", file=file,
                              hint="export the tables with SELECT GET_DDL('DYNAMIC_TABLE', 'DB.SCHEMA.NAME')")
    tables = root / "tables"
    existing = [n for n in files if (tables / f"{n}.sql").exists()]
    if existing and not force:
        raise ConfigError(f"tables/{existing[0]}.sql already exists" +
                          (f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""),
                          hint="pass --force to overwrite them")
    tables.mkdir(exist_ok=True)
    for name, parts in files.items():
        (tables / f"{name}.sql").write_text(";\n\n".join(parts) + ";\n", encoding="utf-8")
    if not dialect:
        body = project_file.read_text(encoding="utf-8")
        project_file.write_text(body + ("" if body.endswith("\n") else "\n") + "dialect: snowflake\n",
                                encoding="utf-8")
        report.dialect_set = True
    return report
