"""Custom incremental statements: `REFRESH USING ( MERGE INTO SELF ... | INSERT INTO SELF ... )`.

sqlglot knows neither `src CHANGES(INFORMATION => ...)` nor, in the Spark dialect,
`METADATA$ACTION`. The text is rewritten in place before parsing, every line kept where it was:
the wrapper is blanked, `src CHANGES(...)` becomes one table name carrying its mode
(`__dt_changes_append_only__src`), and the metadata columns become plain names. After parsing,
the metadata columns get their Snowflake names back (quoted for Spark), and `SELF` read in the
USING query becomes a view of the table before this refresh.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import Dialect, exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType as T

from dtcli.errors import ValidationError
from dtcli.sql.parse import ParsedSQL, is_cte_ref, line_of, parse_sql

DEFAULT, APPEND_ONLY = "DEFAULT", "APPEND_ONLY"
MODES = (DEFAULT, APPEND_ONLY)
ACTION, ISUPDATE = "METADATA$ACTION", "METADATA$ISUPDATE"
SELF_VIEW = "__dt_self"
_PREFIX = "__dt_changes_"
_META = {"action": ACTION, "isupdate": ISUPDATE}
_META_TEXT = re.compile(r"[`\"]?\bMETADATA\$(\w+)\b[`\"]?", re.I)
_INFORMATION = re.compile(r"\s*(?:INFORMATION\s*=>\s*(\w+)\s*)?", re.I)
_QUOTES = {"snowflake": '"', "postgres": '"', "trino": '"', "duckdb": '"', "bigquery": "`"}


def changes_view(name: str, mode: str) -> str:
    """The view the engine binds a `name CHANGES(INFORMATION => mode)` input as."""
    return f"{_PREFIX}{mode.lower()}__{name}"


def split_changes_name(name: str) -> tuple[str, str] | None:
    """(mode, table name) of a rewritten CHANGES() reference, None for any other name."""
    match = re.fullmatch(rf"{_PREFIX}(default|append_only)__(.+)", name, re.I)
    return (match.group(1).upper(), match.group(2)) if match else None


@dataclass
class ChangesRef:
    name: str          # the table reference as written (lower case), resolved by the loader
    mode: str          # DEFAULT | APPEND_ONLY
    line: int


@dataclass
class CustomStatement:
    kind: str                               # MERGE | INSERT
    tree: exp.Expression                    # the statement, CHANGES() inputs as prefixed names
    parsed: ParsedSQL
    changes: list[ChangesRef] = field(default_factory=list)
    self_lines: list[int] = field(default_factory=list)    # lines where the USING query reads SELF
    # filled by the loader, once names are resolved to the project's DTs and sources:
    change_inputs: list[tuple[str, str, int]] = field(default_factory=list)   # (input, mode, line)
    snapshot_inputs: list[str] = field(default_factory=list)   # inputs read as they are

    @property
    def change_views(self) -> dict[str, tuple[str, str]]:
        """View name -> (input, mode) for every CHANGES() input."""
        return {changes_view(n, m): (n, m) for n, m, _ in self.change_inputs}

    @property
    def target_alias(self) -> str | None:
        alias = self.tree.this.alias if isinstance(self.tree.this, exp.Table) else None
        return alias or None


def parse_custom(sql: str, dialect: str, file: str, own_name: str) -> CustomStatement:
    text = _metadata_names(sql, file)
    text = _unwrap(text, dialect, file)
    text, changes = _changes(text, dialect, file)
    parsed = parse_sql(text, dialect, file)
    statements = parsed.statements
    if not statements:
        raise ValidationError("REFRESH USING holds no statement", file=file, line=1,
                              hint="write one MERGE INTO SELF ... or INSERT INTO SELF SELECT ...")
    if len(statements) > 1:
        raise ValidationError("REFRESH USING holds more than one statement", file=file,
                              line=line_of(statements[1]) or 1,
                              hint="a custom incremental table runs exactly one MERGE or INSERT per refresh")
    tree = statements[0]
    kind = _kind(tree, file, own_name)
    for ident in tree.find_all(exp.Identifier):
        match = re.fullmatch(r"__dt_meta_(\w+)", ident.name, re.I)
        if match:
            ident.set("this", _META[match.group(1).lower()])
            ident.set("quoted", True)
    statement = CustomStatement(kind, tree, parsed, changes)
    target = _target(tree)
    for table in list(tree.find_all(exp.Table)):
        if table is target or not table.name or is_cte_ref(table):
            continue
        if table.name.lower() == "self" and not table.args.get("db"):
            alias = table.alias or "self"
            statement.self_lines.append(line_of(table) or 1)
            table.set("this", exp.to_identifier(SELF_VIEW))
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return statement


def _target(tree: exp.Expression) -> exp.Table | None:
    target = tree.this
    if isinstance(target, exp.Schema):
        target = target.this
    return target if isinstance(target, exp.Table) else None


def _kind(tree: exp.Expression, file: str, own_name: str) -> str:
    target = _target(tree)
    kind = {exp.Merge: "MERGE", exp.Insert: "INSERT"}.get(type(tree))
    name = target.name.lower() if target is not None else ""
    if kind is None:
        raise ValidationError(f"REFRESH USING holds a {tree.key.upper()} statement", file=file,
                              line=line_of(tree) or 1,
                              hint="a custom incremental table is refreshed by MERGE INTO SELF ... or "
                                   "INSERT INTO SELF SELECT ...")
    if name != "self" or target.args.get("db"):
        shown = target.sql() if target is not None else "?"
        hint = ("the table is named SELF inside REFRESH USING" if name == own_name
                else "a custom incremental table writes only to itself: write INTO SELF")
        raise ValidationError(f"{kind} INTO {shown}: the target must be SELF", file=file,
                              line=line_of(tree) or 1, hint=hint)
    if kind == "INSERT" and tree.args.get("overwrite"):
        raise ValidationError("INSERT OVERWRITE INTO SELF is not a custom incremental statement",
                              file=file, line=line_of(tree) or 1,
                              hint="use INSERT INTO SELF, or a SELECT query table for a full recompute")
    return kind


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _metadata_names(text: str, file: str) -> str:
    def swap(match: re.Match) -> str:
        which = match.group(1).lower()
        if which not in _META:
            raise ValidationError(f"METADATA${match.group(1).upper()} is not available", file=file,
                                  line=_line(text, match.start()),
                                  hint="dt's CHANGES() rows carry METADATA$ACTION and METADATA$ISUPDATE "
                                       "(Delta's change data has no row id)")
        return f"__dt_meta_{which}"
    return _META_TEXT.sub(swap, text)


def _tokens(text: str, dialect: str, file: str):
    try:
        return Dialect.get_or_raise(dialect).tokenize(text)
    except SqlglotError as err:
        raise ValidationError(f"SQL syntax error: {err}", file=file) from None


def _closing(tokens, k: int) -> int:
    """Index of the parenthesis closing the one at `k` (or -1)."""
    depth = 0
    for j in range(k, len(tokens)):
        depth += {T.L_PAREN: 1, T.R_PAREN: -1}.get(tokens[j].token_type, 0)
        if depth == 0:
            return j
    return -1


def _unwrap(text: str, dialect: str, file: str) -> str:
    """`REFRESH USING ( stmt )` -> `stmt`, in place; a bare statement is left as it is."""
    tokens = _tokens(text, dialect, file)
    if len(tokens) < 2 or tokens[0].text.upper() != "REFRESH" or tokens[1].text.upper() != "USING":
        return text
    if len(tokens) < 3 or tokens[2].token_type != T.L_PAREN:
        raise ValidationError("REFRESH USING takes its statement in parentheses", file=file,
                              line=tokens[1].line, hint="write REFRESH USING ( MERGE INTO SELF ... )")
    end = _closing(tokens, 2)
    if end < 0:
        raise ValidationError("REFRESH USING ( ... is not closed", file=file, line=tokens[2].line,
                              hint="add the closing parenthesis after the statement")
    rest = [t for t in tokens[end + 1:] if t.token_type != T.SEMICOLON]
    if rest:
        raise ValidationError("REFRESH USING ( ... ) is followed by more SQL", file=file, line=rest[0].line,
                              hint="a custom incremental table runs exactly one statement")
    closing = tokens[end]
    text = _blank(text, closing.start, len(text))
    return _blank(text, 0, tokens[2].end + 1)


def _changes(text: str, dialect: str, file: str) -> tuple[str, list[ChangesRef]]:
    tokens = _tokens(text, dialect, file)
    quote = _QUOTES.get(dialect, "`")
    edits: list[tuple[int, int, str]] = []
    found: list[ChangesRef] = []
    for k, tok in enumerate(tokens):
        if tok.text.upper() != "CHANGES" or k == 0 or k + 1 >= len(tokens) \
                or tokens[k + 1].token_type != T.L_PAREN or tok.token_type == T.IDENTIFIER:
            continue
        name_tok = tokens[k - 1]
        if name_tok.token_type not in (T.VAR, T.IDENTIFIER) and not name_tok.text.isidentifier():
            continue
        end = _closing(tokens, k + 1)
        if end < 0:
            raise ValidationError("CHANGES( is not closed", file=file, line=tok.line,
                                  hint="write CHANGES(INFORMATION => DEFAULT)")
        inner = text[tokens[k + 1].end + 1:tokens[end].start]
        match = _INFORMATION.fullmatch(inner)
        mode = (match.group(1) or DEFAULT).upper() if match else None
        if mode not in MODES:
            raise ValidationError(f"cannot read CHANGES({inner.strip()})", file=file, line=tok.line,
                                  hint="write CHANGES(), CHANGES(INFORMATION => DEFAULT) or "
                                       "CHANGES(INFORMATION => APPEND_ONLY)")
        after = tokens[end + 1] if end + 1 < len(tokens) else None
        if after is not None and after.text.upper() in ("AT", "BEFORE", "END") and end + 2 < len(tokens) \
                and tokens[end + 2].token_type == T.L_PAREN:
            raise ValidationError(f"CHANGES(...) {after.text.upper()}(...): a custom incremental table's "
                                  "change interval is set by dt", file=file, line=after.line,
                                  hint="remove the time bound: each refresh reads the changes since the last one")
        name = name_tok.text
        if name.lower() == "self" and name_tok.token_type == T.VAR:
            raise ValidationError("CHANGES on SELF is not allowed", file=file, line=tok.line,
                                  hint="read SELF as it is (FROM SELF AS cur), or CHANGES() of a source")
        new = changes_view(name if name_tok.token_type == T.IDENTIFIER else name.lower(), mode)
        if name_tok.token_type == T.IDENTIFIER:
            new = quote + new + quote
        qualifier = []
        j = k - 2
        while j >= 1 and tokens[j].token_type == T.DOT:
            qualifier.insert(0, tokens[j - 1].text)
            j -= 2
        found.append(ChangesRef(".".join([*qualifier, name]).lower(), mode, tok.line))
        span = text[name_tok.start:tokens[end].end + 1]
        edits.append((name_tok.start, tokens[end].end + 1, new + " " + "\n" * span.count("\n")))
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text, found
