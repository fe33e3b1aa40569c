"""A source's declared `columns:` checked against its Delta table, so that a declaration is a
promise dt keeps (a user reads it as one), not a comment that drifts from the data."""

from __future__ import annotations

from pathlib import Path

from dtcli.errors import ValidationError
from dtcli.model import Column, SourceDef
from dtcli.sql.types import from_sqlglot, to_sqlglot


def check(source: SourceDef, schema: tuple[Column, ...], root: Path) -> None:
    """Each declared column exists in the Delta table, with the declared type when one is given."""
    if not source.columns:
        return
    actual = {c.name.lower(): c.type for c in schema}
    file = _relative(root, source.file)
    for name, declared in source.columns:
        if name not in actual:
            raise ValidationError(
                f"source '{source.name}' declares column '{name}', which its Delta table does not have",
                file=file, line=source.line,
                hint=f"its columns are {', '.join(sorted(actual))}: fix or remove the declaration")
        if declared is not None and actual[name] is not None and _norm(declared) != _norm(actual[name]):
            raise ValidationError(
                f"source '{source.name}' declares column '{name}' as {declared}, but its Delta table has "
                f"{actual[name]}", file=file, line=source.line,
                hint=f"declare type: {actual[name].lower()}, or change the table")


def _norm(spark_type: str) -> str:
    return (from_sqlglot(to_sqlglot(spark_type)) or spark_type).replace(" ", "").upper()


def _relative(root: Path, file: str | None) -> str | None:
    try:
        return str(Path(file).relative_to(root)) if file else file
    except ValueError:
        return file
