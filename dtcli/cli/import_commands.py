"""dt import: another tool's definitions become table files (no Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dtcli.cli.app import Format, ProjectDir, check_format, import_app


@import_app.command("snowflake")
def import_snowflake(script: Annotated[Path, typer.Argument(help="SQL script of CREATE DYNAMIC TABLE statements (as GET_DDL prints them).", exists=True, dir_okay=False)],
                     project_dir: ProjectDir = Path("."),
                     force: Annotated[bool, typer.Option("--force", help="Overwrite table files that exist.")] = False,
                     format: Format = "table") -> None:
    """Split a script of Snowflake CREATE DYNAMIC TABLE statements into tables/<name>.sql files.

    Each file holds its statement as written (properties become config: see `dt explain NAME`),
    with the ALTER TABLE ... ADD ... RELY statements that follow it. Other statements are listed
    as skipped. Sets dialect: snowflake when the project has no dialect. Check the result with
    `dt validate`.

    Example: dt import snowflake exported.sql -p shop
    """
    from dtcli import api
    from dtcli.ui.output import console, print_json

    report = api.import_snowflake(project_dir, script, force=force)
    if check_format(format) == "json":
        print_json(report.to_dict())
        return
    for table in report.tables:
        mapped = ", ".join(sorted(table.mapped)) or "-"
        ignored = ", ".join(p["property"] for p in table.ignored) or "-"
        console.print(f"{table.file}: config {mapped}; ignored {ignored}", highlight=False)
    for skipped in report.skipped:
        console.print(f"skipped (line {skipped['line']}): {skipped['statement']}", highlight=False)
    if report.dialect_set:
        console.print("dt_project.yml: dialect: snowflake", highlight=False)
    console.print(f"{len(report.tables)} dynamic tables imported; next: dt validate", highlight=False)

