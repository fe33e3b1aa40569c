"""A table's lifecycle, none of which starts Spark: suspend, resume, drop."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.cli.app import ProjectDir, Target, Wait, app
from dtcli.errors import UsageError


@app.command()
def suspend(name: Annotated[str, typer.Argument(help="Dynamic table to stop scheduling.")],
            project_dir: ProjectDir = Path("."), target: Target = None,
            reason: Annotated[Optional[str], typer.Option("--reason", help="Why (shown by dt show).")] = None,
            wait: Wait = 0.0) -> None:
    """Suspend a dynamic table: `dt run` skips it and every table downstream of it. No Spark.

    Example: dt suspend customer_rank --reason "dashboard frozen for the audit"
    """
    from dtcli import api

    held = api.suspend(api.check(project_dir, target), name, reason=reason, wait=wait)
    typer.echo(f"suspended {held[0]}" + (f"; also held back: {', '.join(held[1:])}" if held[1:] else ""))



@app.command()
def resume(name: Annotated[str, typer.Argument(help="Suspended dynamic table to schedule again.")],
           project_dir: ProjectDir = Path("."), target: Target = None, wait: Wait = 0.0) -> None:
    """Resume a suspended dynamic table (and the tables it held back). No Spark.

    Example: dt resume customer_rank
    """
    from dtcli import api

    active = api.resume(api.check(project_dir, target), name, wait=wait)
    typer.echo(f"active: {', '.join(active)}")



@app.command()
def drop(name: Annotated[str, typer.Argument(help="Dynamic table to delete.")],
         project_dir: ProjectDir = Path("."), target: Target = None,
         yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (CI).")] = False,
         wait: Wait = 0.0) -> None:
    """Delete a dynamic table: data, history, scheduling state, and its table in the metastore.

    No Spark, except with `catalog:` to remove the table from the metastore.

    An orphan (its .sql file was removed) is gone for good; a table still defined is created
    anew by the next `dt run` (how a table is recreated, e.g. to backfill it).

    Example: dt drop old_report --yes
    """
    from dtcli import api

    project = api.load(project_dir, target)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"dropping {name} deletes its data; confirm with --yes when not in a terminal")
        typer.confirm(f"delete dynamic table {name} at {project.table_path(name.lower())}?", abort=True)
    def said(event) -> None:
        from dtcli.events import CatalogChanged
        from dtcli.ui.run_view import catalog_line

        if isinstance(event, CatalogChanged):
            typer.echo(catalog_line(event))

    typer.echo(f"dropped {name.lower()} ({api.drop(project, name, wait=wait, on_event=said)})")

