"""Snowflake's `CREATE DYNAMIC TABLE` as a table file (`dialect: snowflake`).

A Snowflake user can paste a statement as `GET_DDL` prints it into `tables/<name>.sql`:

    CREATE [OR REPLACE | OR ALTER] DYNAMIC TABLE name [(col [type], ...)]
      TARGET_LAG = '10 minutes' | DOWNSTREAM  WAREHOUSE = wh  [REFRESH_MODE = ...]
      [INITIALIZE = ...] [SCHEDULER = ENABLE | DISABLE] [FROZEN | IMMUTABLE WHERE (...)]
      [BACKFILL FROM t [AT | BEFORE (...)]] [START AT (...)] [CLUSTER BY (...)] [COMMENT = '...']
    AS query | REFRESH USING (...);
    [ALTER TABLE name ADD [CONSTRAINT c] PRIMARY KEY | UNIQUE (cols) RELY;]

Each property becomes the table config key it means (the same keys a `tables/<name>.yml` sets);
Snowflake-only ones (WAREHOUSE, retention, tags, ...) are accepted and listed as ignored. The
header is read with sqlglot's Snowflake tokenizer (quotes and nested parentheses are its
business, not a regex's), and everything but the query is blanked out of the text in place, so
the query keeps its lines of the user's file for every later message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.dialects.snowflake import Snowflake
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token
from sqlglot.tokens import TokenType as T

from dtcli.errors import ValidationError
from dtcli.json_types import Yaml, YamlMapping
from dtcli.model.definitions import IgnoredPropertyDict

# Property -> dt config key, for properties written `NAME = value`.
_ASSIGNED = {"TARGET_LAG": "target_lag", "REFRESH_MODE": "refresh_mode", "INITIALIZE": "initialize",
             "SCHEDULER": "scheduler", "COMMENT": "comment"}
# Snowflake-only keywords that take no value (COPY GRANTS) and `WITH ...` clauses (tags, policies).
_FLAGS = {"COPY": ("GRANTS",), "REQUIRE": ("USER",)}


@dataclass
class Ddl:
    name: str
    config: YamlMapping                       # as a table's .yml would hold it
    lines: dict[str, int]                     # config key -> line of the property setting it
    ignored: list[IgnoredPropertyDict] = field(default_factory=list)
    body: str = ""                            # the file's text with only the query left in place


def is_ddl(sql: str) -> bool:
    """Whether a table file holds a CREATE statement (not a bare query)."""
    try:
        tokens = Snowflake().tokenize(sql)
    except SqlglotError:
        return False
    return bool(tokens) and tokens[0].token_type == T.CREATE


def parse_ddl(sql: str, file: str) -> Ddl:
    return _Reader(sql, file).statement()


def _blank(text: str, start: int, end: int) -> str:
    """`text` with [start, end) turned into spaces, newlines kept (lines stay where they were)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


class _Reader:
    def __init__(self, sql: str, file: str):
        self.sql, self.file = sql, file
        try:
            self.tokens = Snowflake().tokenize(sql)
        except SqlglotError as err:
            raise ValidationError(f"SQL syntax error: {err}", file=file) from None
        self.i = 0
        self.config: YamlMapping = {}
        self.lines: dict[str, int] = {}
        self.ignored: list[IgnoredPropertyDict] = []

    # -- tokens ------------------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> Token | None:
        k = self.i + ahead
        return self.tokens[k] if k < len(self.tokens) else None

    def word(self, ahead: int = 0) -> str:
        tok = self.peek(ahead)
        return tok.text.upper() if tok is not None else ""

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            last = self.tokens[-1]
            self.fail("the statement ends early: expected AS followed by the query", last.line,
                      "end the statement with AS SELECT ... (or REFRESH USING (...))")
        self.i += 1
        return tok

    def expect(self, *words: str, hint: str) -> Token:
        tok = self.take()
        if tok.text.upper() not in words and not (tok.token_type == T.EQ and "=" in words):
            self.fail(f"expected {' or '.join(words)}, found '{tok.text}'", tok.line, hint)
        return tok

    def group(self) -> tuple[str, int]:
        """A parenthesised group at the cursor: its inner text and the line it starts on."""
        open_ = self.take()
        if open_.token_type != T.L_PAREN:
            self.fail(f"expected '(', found '{open_.text}'", open_.line, "put the value in parentheses")
        depth = 1
        while depth:
            tok = self.take()
            depth += {T.L_PAREN: 1, T.R_PAREN: -1}.get(tok.token_type, 0)
        return self.sql[open_.end + 1:tok.start].strip(), open_.line

    def fail(self, message: str, line: int | None, hint: str):
        raise ValidationError(message, file=self.file, line=line, hint=hint)

    def set(self, key: str, value: Yaml, tok: Token) -> None:
        if key in self.config:
            self.fail(f"{key} is set twice in the CREATE statement", tok.line, "keep one of them")
        self.config[key], self.lines[key] = value, tok.line

    # -- the statement -------------------------------------------------------------------------

    def statement(self) -> Ddl:
        self.expect("CREATE", hint="a table file holds a query or one CREATE DYNAMIC TABLE statement")
        if self.word() == "OR":
            self.take()
            self.expect("REPLACE", "ALTER", hint="write CREATE OR REPLACE or CREATE OR ALTER")
        while self.word() in ("TRANSIENT", "TEMPORARY", "TEMP"):
            self.ignore(self.take().text.upper(), "", self.tokens[self.i - 1].line)
        self.expect("DYNAMIC", hint="only CREATE DYNAMIC TABLE statements make dynamic tables")
        self.expect("TABLE", hint="write CREATE DYNAMIC TABLE name ...")
        if self.word() == "IF":
            self.take(), self.expect("NOT", hint="IF NOT EXISTS"), self.expect("EXISTS", hint="IF NOT EXISTS")
        name = self.name()
        if self.peek() is not None and self.peek().token_type == T.L_PAREN:
            self.columns()
        start = self.properties()
        body = _blank(self.sql, 0, start)
        body = self.after_body(body, start, name)
        return Ddl(name=name, config=self.config, lines=self.lines, ignored=self.ignored, body=body)

    def name(self) -> str:
        parts = [self.take()]
        while self.peek() is not None and self.peek().token_type == T.DOT:
            self.take()
            parts.append(self.take())
        return parts[-1].text   # db.schema.name: dt's tables live in one project

    def columns(self) -> None:
        inner, line = self.group()
        columns = []
        for spec in _split_top(inner):
            words = spec.split(None, 1)
            if not words:
                continue
            col: YamlMapping = {"name": _identifier(words[0])}
            rest = re.split(r"(?:^|\s+)(?:COMMENT|NOT\s+NULL|NULL|DEFAULT|COLLATE|WITH|MASKING|TAG)\b", words[1],
                            flags=re.I)[0].strip() if len(words) > 1 else ""
            if rest:
                col["type"] = _spark_type(rest, self, line)
            columns.append(col)
        self.config["columns"], self.lines["columns"] = columns, line

    def properties(self) -> int:
        """Read properties up to AS / REFRESH USING; the offset where the table's body starts."""
        while True:
            tok = self.peek()
            if tok is None:
                self.take()   # fails: the statement ended before its query
            word = tok.text.upper()
            if tok.token_type == T.ALIAS:       # AS: the query follows
                self.take()
                return tok.end + 1
            if word == "REFRESH" and self.word(1) == "USING":
                return tok.start                # the custom table's statement is the body
            if word in ("FROZEN", "IMMUTABLE") and self.word(1) == "WHERE":
                self.take(), self.take()
                inner, _ = self.group()
                self.set("frozen_where", inner, tok)
            elif word == "BACKFILL":
                self.take()
                self.expect("FROM", hint="write BACKFILL FROM table_name")
                spec: YamlMapping = {"from": self.name()}
                if self.word() in ("AT", "BEFORE"):
                    which = self.take().text.lower()
                    spec[which] = self.point(("TIMESTAMP", "STATEMENT", "VERSION"))
                self.set("backfill", spec, tok)
            elif word == "START" and self.word(1) == "AT":
                self.take(), self.take()
                self.set("start_at", self.point(("TIMESTAMP", "STATEMENT", "VERSION", "OFFSET")), tok)
            elif tok.token_type == T.CLUSTER_BY:
                self.take()
                inner, _ = self.group()
                self.set("cluster_by", [_identifier(c) for c in _split_top(inner)], tok)
            elif word in _ASSIGNED or (self.peek(1) is not None and self.peek(1).token_type == T.EQ):
                self.take()
                self.expect("=", hint=f"write {word} = value")
                value = self.value()
                if word in _ASSIGNED:
                    self.set(_ASSIGNED[word], _config_value(word, value), tok)
                else:
                    self.ignore(word, value, tok.line)
            elif word in _FLAGS and self.word(1) in _FLAGS[word]:
                self.take(), self.take()
                self.ignore(f"{word} {_FLAGS[word][0]}", "", tok.line)
            elif word == "WITH":                # WITH TAG (...), WITH ROW ACCESS POLICY p ON (...)
                start = self.take()
                while self.peek() is not None and self.peek().token_type not in (T.L_PAREN, T.ALIAS):
                    self.take()
                if self.peek() is not None and self.peek().token_type == T.L_PAREN:
                    self.group()
                self.ignore(self.sql[start.start:self.tokens[self.i - 1].end + 1], "", tok.line)
            else:
                self.fail(f"unknown CREATE DYNAMIC TABLE property '{tok.text}'", tok.line,
                          "end the properties with AS followed by the query; dt reads TARGET_LAG, "
                          "REFRESH_MODE, INITIALIZE, SCHEDULER, FROZEN WHERE, BACKFILL FROM, START AT, "
                          "CLUSTER BY and COMMENT")

    def value(self) -> str:
        tok = self.take()
        if tok.token_type == T.L_PAREN:
            self.i -= 1
            return self.group()[0]
        return tok.text

    def point(self, kinds: tuple[str, ...]) -> YamlMapping:
        """`(TIMESTAMP => ts | STATEMENT => id | OFFSET => -seconds)` as dt's {timestamp|version|offset}."""
        inner, line = self.group()
        match = re.fullmatch(r"\s*(\w+)\s*=>\s*(.+?)\s*", inner, re.S)
        kind = match.group(1).upper() if match else ""
        if kind not in kinds:
            self.fail(f"cannot read ({inner}) as a point in time", line,
                      "write (" + " | ".join(f"{k} => ..." for k in kinds) + "); STATEMENT => is the "
                      "Delta version of the table")
        raw = match.group(2)
        if kind == "TIMESTAMP":
            literal = re.match(r"'([^']*)'", raw)
            if literal is None:
                self.fail(f"TIMESTAMP => {raw}: dt needs a literal timestamp", line,
                          "write TIMESTAMP => '2025-04-01 12:00:00'")
            return {"timestamp": literal.group(1)}
        number = raw.strip("'\" ")
        if not re.fullmatch(r"-?\d+", number):
            self.fail(f"{kind} => {raw}: dt needs a number here", line,
                      "STATEMENT => takes the Delta version of the table (dt's refresh history "
                      "records them), OFFSET => a negative number of seconds")
        return {"offset": int(number)} if kind == "OFFSET" else {"version": int(number)}

    def ignore(self, prop: str, value: str, line: int) -> None:
        self.ignored.append({"property": prop, "value": value, "line": line})

    # -- after the query ------------------------------------------------------------------------

    def after_body(self, body: str, start: int, name: str) -> str:
        """The query runs to the first `;` outside parentheses; after it, only
        `ALTER TABLE <name> ADD ... RELY` statements (Snowflake's way to declare RELY keys)."""
        depth, end = 0, None
        for k in range(self.i, len(self.tokens)):
            tok = self.tokens[k]
            depth += {T.L_PAREN: 1, T.R_PAREN: -1}.get(tok.token_type, 0)
            if tok.token_type == T.SEMICOLON and depth == 0:
                end, self.i = tok.start, k + 1
                break
        if end is None:
            return body
        rest = _blank_comments(self.sql[end:])
        constraints = []
        for statement, offset in _statements(rest[1:], end + 1):
            if not statement.strip():
                continue
            line = self.sql.count("\n", 0, offset + len(statement) - len(statement.lstrip())) + 1
            constraints.append(rely_constraint(statement, name, self.file, line))
        if constraints:
            self.config["constraints"], self.lines["constraints"] = constraints, line
        return _blank(body, end, len(body))


def _blank_comments(text: str) -> str:
    """`--` and `/* */` comments turned to spaces (newlines kept, so offsets and lines hold)."""
    return re.sub(r"--[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)


def _statements(text: str, offset: int):
    """(statement, its offset) for each `;`-separated statement of `text`."""
    position = 0
    for part in text.split(";"):
        yield part, offset + position
        position += len(part) + 1


_CONSTRAINT = re.compile(r"\s*alter\s+(?:dynamic\s+)?table\s+(?:[\w\"$]+\.)*\"?([\w$]+)\"?\s+add\s+"
                         r"(?:constraint\s+\"?[\w$]+\"?\s+)?(primary\s+key|unique)\s*\(([^)]*)\)\s*(\w+)?\s*$",
                         re.I | re.S)


def rely_constraint(statement: str, name: str, file: str, line: int) -> YamlMapping:
    match = _CONSTRAINT.match(statement)
    if match is None or match.group(1).lower() != name.lower():
        raise ValidationError("a table file holds one CREATE DYNAMIC TABLE statement (and ALTER TABLE "
                              f"{name} ADD ... RELY statements after it), found: {statement.strip()[:60]}",
                              file=file, line=line, hint="move other statements out of the table file")
    if (match.group(4) or "").upper() != "RELY":
        raise ValidationError(f"the constraint on {name} is not RELY: dt only uses RELY constraints",
                              file=file, line=line, hint="end the statement with RELY, or remove it")
    kind = "primary_key" if match.group(2).lower().startswith("primary") else "unique"
    return {kind: [_identifier(c) for c in match.group(3).split(",")], "rely": True}


def _identifier(text: str) -> str:
    """A column name as Snowflake means it: unquoted is case-insensitive (dt spells it in lower
    case, as Spark shows it), quoted is exact."""
    text = text.strip()
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text.lower()


def _split_top(text: str) -> list[str]:
    """Split at commas outside parentheses (NUMBER(10,2) stays whole)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _spark_type(text: str, reader: _Reader, line: int) -> str:
    try:
        return exp.DataType.build(text, dialect="snowflake").sql(dialect="spark")
    except (SqlglotError, ValueError):
        reader.fail(f"unknown column type '{text}'", line, "use a Snowflake type such as NUMBER(10,2), "
                    "VARCHAR, TIMESTAMP_NTZ, or leave the type out")


def _config_value(prop: str, value: str) -> str:
    if prop in ("TARGET_LAG", "COMMENT"):
        return "downstream" if prop == "TARGET_LAG" and value.upper() == "DOWNSTREAM" else value
    value = value.lower()
    return "auto" if prop == "REFRESH_MODE" and value == "custom_incremental" else value
