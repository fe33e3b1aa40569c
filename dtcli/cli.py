"""The `dt` command line: a thin Typer layer over `dtcli.api`, with one error boundary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.errors import EXIT_REFRESH_FAILED, DtError, UsageError

app = typer.Typer(
    help="dt: dynamic tables for Apache Spark and Delta Lake.\n\n"
         "Example: dt init shop && cd shop && dt seed && dt run && dt show dynamic tables",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode=None)
show_app = typer.Typer(help="Show dynamic tables, refresh history or the DAG (no Spark).\n\n"
                            "Example: dt show dynamic tables --format json", no_args_is_help=True)
app.add_typer(show_app, name="show")

_state = {"debug": False}

ProjectDir = Annotated[Path, typer.Option("--project-dir", "-p", help="Project folder (default: current directory).")]
Target = Annotated[Optional[str], typer.Option("--target", "-t", help="Target from dt_project.yml targets:.")]
Format = Annotated[str, typer.Option("--format", "-f", help="table or json.")]


@app.callback()
def _main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False) -> None:
    _state["debug"] = debug


def _fmt(value: str, allowed: tuple[str, ...] = ("table", "json")) -> str:
    if value not in allowed:
        raise UsageError(f"--format must be one of {', '.join(allowed)}, not '{value}'")
    return value


@app.command()
def init(directory: Annotated[Path, typer.Argument(help="Folder for the new project.")] = Path("."),
         name: Annotated[Optional[str], typer.Option(help="Project name (default: the folder name).")] = None) -> None:
    """Create a new project from the template: config, an example table and seed data.

    Example: dt init shop
    """
    from dtcli.scaffold import init_project

    created = init_project(directory, name)
    typer.echo(f"created project {created.name} in {created.root}")
    typer.echo(f"next: cd {directory} && dt seed && dt run")


@app.command()
def seed(project_dir: ProjectDir = Path("."), target: Target = None,
         select: Annotated[Optional[list[str]], typer.Option("--select", "-s", help="Seed names.")] = None) -> None:
    """Load seeds/<name>.csv into Delta source tables with the change data feed on.

    Example: dt seed --select orders
    """
    from dtcli import api
    from dtcli.seed import seed as do_seed

    project = api.load(project_dir, target)
    for s in do_seed(project, select):
        typer.echo(f"seeded {s.name}: {s.rows} rows -> {s.path}")


@app.command()
def validate(project_dir: ProjectDir = Path("."), target: Target = None) -> None:
    """Parse, resolve and check every table: names, cycles, config, lags, refresh modes. No Spark.

    Example: dt validate -p example_project
    """
    from dtcli import api

    checked = api.validate(api.load(project_dir, target, check_sources=True))
    for name in checked.graph.order:
        mode = checked.modes[name]
        typer.echo(f"{name}: {mode.mode}" + (f" ({mode.reason})" if mode.reason else ""))
        for warning in checked.warnings.get(name, []):
            typer.echo(f"  warning: {warning}")
    typer.echo(f"ok: {len(checked.graph.order)} dynamic tables")


def _run(project_dir: Path, target: Optional[str], names: Optional[list[str]], full_refresh: bool,
         dry_run: bool, trigger: str) -> None:
    from dtcli import api
    from dtcli.ui.output import console, print_json
    from dtcli.ui.progress import RunProgress

    project = api.load(project_dir, target, check_sources=True)
    plan, _ = api.plan_run(project, names, trigger=trigger, full_refresh=full_refresh)
    if dry_run:
        print_json({"run_id": plan.run_id, "data_timestamp": plan.data_timestamp,
                    "source_versions": plan.source_versions,
                    "steps": [{"name": s.name, "action": s.action, "trigger": s.trigger,
                               "refresh_mode": s.refresh_mode, "reason": s.reinit_reason or s.refresh_mode_reason,
                               "inputs": {i.name: i.version for i in s.inputs}} for s in plan.steps]})
        return
    with RunProgress(len(plan.steps)) as progress:
        result = api.execute(project, plan, progress)
    bad = [r for r in result.records if r["state"] != "SUCCEEDED"]
    console.print(f"{len(result.records) - len(bad)} succeeded, {len(bad)} failed"
                  + ("" if result.launched else " (no Spark needed)"), highlight=False)
    if bad:
        raise typer.Exit(EXIT_REFRESH_FAILED)


@app.command()
def run(project_dir: ProjectDir = Path("."), target: Target = None,
        select: Annotated[Optional[list[str]], typer.Option("--select", "-s", help="Tables to refresh (with their upstream).")] = None,
        full_refresh: Annotated[bool, typer.Option("--full-refresh", help="Recompute selected tables FULL.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan as JSON; run nothing.")] = False) -> None:
    """Create new dynamic tables and refresh the others, in DAG order, from one snapshot.

    Tables whose inputs did not change are recorded NO_DATA without starting Spark; the rest
    run in one spark-submit application. Exit code 1 when any refresh failed.

    Example: dt run --select customer_rank
    """
    from dtcli.model import SCHEDULED

    _run(project_dir, target, select, full_refresh, dry_run, SCHEDULED)


@app.command()
def refresh(name: Annotated[str, typer.Argument(help="Dynamic table to refresh now.")],
            project_dir: ProjectDir = Path("."), target: Target = None,
            dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan as JSON; run nothing.")] = False) -> None:
    """Refresh one dynamic table now (trigger MANUAL), with the upstream tables it needs.

    Example: dt refresh customer_revenue
    """
    from dtcli.model import MANUAL

    _run(project_dir, target, [name], False, dry_run, MANUAL)


TABLE_COLUMNS = ("name", "target_lag", "refresh_mode", "scheduling_state", "data_timestamp", "rows",
                 "last_refresh_action", "last_refresh_state", "refresh_mode_reason")
HISTORY_COLUMNS = ("name", "state", "refresh_action", "refresh_trigger", "data_timestamp",
                   "refresh_end_time", "statistics", "state_message")


@show_app.command("dynamic")
def show_dynamic(what: Annotated[str, typer.Argument(metavar="tables", help="The word 'tables'.")],
                 project_dir: ProjectDir = Path("."), target: Target = None,
                 like: Annotated[Optional[str], typer.Option("--like", help="SQL LIKE or glob pattern on the name.")] = None,
                 format: Format = "table") -> None:
    """One row per dynamic table: lag, mode, state, data timestamp, rows, last refresh.

    Example: dt show dynamic tables --like 'customer%' --format json
    """
    from dtcli import api
    from dtcli.ui.output import print_json, print_table

    if what != "tables":
        raise UsageError(f"unknown object '{what}'", hint="dt show dynamic tables")
    rows = api.show_tables(api.load(project_dir, target), like)
    if _fmt(format) == "json":
        print_json(rows)
    else:
        print_table(rows, TABLE_COLUMNS, title="dynamic tables")


@show_app.command("refresh-history")
def show_history(name: Annotated[Optional[str], typer.Argument(help="Only this table.")] = None,
                 project_dir: ProjectDir = Path("."), target: Target = None,
                 limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Newest N entries.")] = None,
                 format: Format = "table") -> None:
    """Refresh history, newest first.

    Example: dt show refresh-history customer_rank --limit 5
    """
    from dtcli import api
    from dtcli.ui.output import print_json, print_table

    rows = api.show_history(api.load(project_dir, target), name, limit)
    if _fmt(format) == "json":
        print_json(rows)
    else:
        print_table(rows, HISTORY_COLUMNS, title="refresh history")


@show_app.command("graph")
def show_graph(project_dir: ProjectDir = Path("."), target: Target = None,
               format: Annotated[str, typer.Option("--format", "-f", help="tree, mermaid, dot or json.")] = "tree") -> None:
    """The DAG of sources and dynamic tables.

    Example: dt show graph --format mermaid
    """
    from dtcli import api
    from dtcli.graph import Graph
    from dtcli.ui.graph_view import edges, render
    from dtcli.ui.output import print_json

    project = api.load(project_dir, target)
    graph = Graph.of(project)
    fmt = _fmt(format, ("tree", "mermaid", "dot", "json"))
    if fmt == "json":
        print_json({"nodes": graph.order, "edges": [list(e) for e in edges(project, graph)]})
    else:
        typer.echo(render(project, graph, fmt))


@app.command()
def explain(name: Annotated[str, typer.Argument(help="Dynamic table to explain.")],
            project_dir: ProjectDir = Path("."), target: Target = None, format: Format = "table") -> None:
    """How a table refreshes and why: mode, reason, per-operator strategy, inputs, lag. No Spark.

    Example: dt explain customer_revenue --format json
    """
    from dtcli import api
    from dtcli.explain import explain as do_explain
    from dtcli.ui.output import console, print_json, print_table

    data = do_explain(api.load(project_dir, target, check_sources=True), name)
    if _fmt(format) == "json":
        print_json(data)
        return
    console.print(f"[bold]{data['name']}[/] ({data['file']}): refresh mode [bold]{data['refresh_mode']}[/]"
                  + (f" — {data['refresh_mode_reason']}" if data["refresh_mode_reason"] else ""))
    console.print(f"target lag {data['target_lag']}, effective lag {data['effective_lag']} s, "
                  f"period {data['period_seconds']} s; upstream: {', '.join(data['upstream']) or '-'}; "
                  f"downstream: {', '.join(data['downstream']) or '-'}", highlight=False)
    print_table(data["operators"], ("operator", "line", "strategy", "considerations"), title="operators")
    print_table(data["inputs"], ("name", "kind", "version", "change_data_feed", "path"), title="inputs")
    for warning in data["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)


def main() -> None:
    """Console entry point: the one place errors become messages and exit codes.

    Typer runs in standalone mode (usage errors exit 2, --help, typer.Exit); dt's own typed
    errors come out of it and are printed here as one line, without a traceback unless --debug.
    """
    from dtcli.ui.output import err_console

    try:
        app()
    except DtError as err:
        if _state["debug"]:
            raise
        err_console.print(f"error: {err}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
