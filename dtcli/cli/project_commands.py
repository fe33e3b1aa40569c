"""Setting a project up, none of which starts Spark: init, seed, validate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.cli.app import NoCache, ProjectDir, Target, app


@app.command()
def init(directory: Annotated[Path, typer.Argument(help="Folder for the new project.")] = Path("."),
         name: Annotated[Optional[str], typer.Option(help="Project name (default: the folder name).")] = None) -> None:
    """Create a new project from the template: config, an example table and seed data.

    Example: dt init shop
    """
    from dtcli import api

    created = api.init(directory, name)
    typer.echo(f"created project {created.name} in {created.root}")
    typer.echo(f"next: cd {directory} && dt seed && dt run")



@app.command()
def seed(project_dir: ProjectDir = Path("."), target: Target = None,
         select: Annotated[Optional[list[str]], typer.Option("--select", "-s", help="Seed names.")] = None) -> None:
    """Load seeds/<name>.csv into Delta source tables with the change data feed on.

    Example: dt seed --select orders
    """
    from dtcli import api

    for s in api.seed(project_dir, target, select):
        typer.echo(f"seeded {s.name}: {s.rows} rows -> {s.path}")



@app.command()
def validate(project_dir: ProjectDir = Path("."), target: Target = None, no_cache: NoCache = False) -> None:
    """Parse, resolve and check every table: names, columns and types, cycles, config, lags, refresh modes. No Spark.

    Example: dt validate -p example_project
    """
    from dtcli import api

    checked = api.check(project_dir, target, check_sources=True, use_cache=not no_cache)
    from dtcli.planning.on_demand import on_demand

    manual = on_demand(checked.project)
    for name in checked.graph.order:
        mode = checked.modes[name]
        typer.echo(f"{name}: {mode.mode}" + (f" ({mode.reason})" if mode.reason else "")
                   + ("; scheduler: disable (refreshed only on demand)" if name in manual else ""))
        for warning in checked.warnings.get(name, []):
            typer.echo(f"  warning: {warning}")
    for name in checked.project.disabled:
        typer.echo(f"{name}: disabled (enabled: false)")
    typer.echo(f"ok: {len(checked.graph.order)} dynamic tables")
