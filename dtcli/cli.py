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
show_app = typer.Typer(help="Show dynamic tables, refresh history, rows or the DAG (no Spark).\n\n"
                            "Example: dt show dynamic tables --format json", no_args_is_help=True)
app.add_typer(show_app, name="show")
import_app = typer.Typer(help="Turn another tool's definitions into table files (no Spark).\n\n"
                              "Example: dt import snowflake dynamic_tables.sql", no_args_is_help=True)
app.add_typer(import_app, name="import")

_state = {"debug": False}

ProjectDir = Annotated[Path, typer.Option("--project-dir", "-p", help="Project folder (default: current directory).")]
Target = Annotated[Optional[str], typer.Option("--target", "-t", help="Target from dt_project.yml targets:.")]
Format = Annotated[str, typer.Option("--format", "-f", help="table or json.")]
RunFormat = Annotated[str, typer.Option("--format", "-f", help="table (a summary line) or json (target/run_results.json on stdout; progress on stderr).")]


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
def validate(project_dir: ProjectDir = Path("."), target: Target = None) -> None:
    """Parse, resolve and check every table: names, columns and types, cycles, config, lags, refresh modes. No Spark.

    Example: dt validate -p example_project
    """
    from dtcli import api

    checked = api.check(project_dir, target, check_sources=True)
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


Wait = Annotated[float, typer.Option("--wait", help="Seconds to wait for another dt process, or the Spark "
                                                     "application of a dt that was killed, holding the "
                                                     "warehouse lock (default: fail at once).")]


@app.command()
def run(project_dir: ProjectDir = Path("."), target: Target = None,
        select: Annotated[Optional[list[str]], typer.Option("--select", "-s", help="dbt-style selectors: name, +name (with upstream), name+ (with downstream), tag:x, path:tables/staging; repeatable.")] = None,
        all_tables: Annotated[bool, typer.Option("--all", help="Refresh every selected table now, ignoring target lag.")] = False,
        full_refresh: Annotated[bool, typer.Option("--full-refresh", help="Recompute the selected tables FULL now (implies --all).")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan as JSON; run nothing.")] = False,
        watch: Annotated[bool, typer.Option("--watch", help="Keep scheduling: run a pass whenever a table falls due, until Ctrl-C.")] = False,
        max_ticks: Annotated[Optional[int], typer.Option("--max-ticks", min=1, help="With --watch: stop after N scheduling passes.")] = None,
        idle_timeout: Annotated[Optional[float], typer.Option("--idle-timeout", min=1, help="With --watch: stop the warm Spark application after this many seconds without work (default 300); the next pass with work starts a new one.")] = None,
        wait: Wait = 0.0, format: RunFormat = "table") -> None:
    """Create new dynamic tables, reinitialize changed ones, and refresh the ones that are due.

    A table is due when a tick of its refresh period (from its target lag) passed since its
    data timestamp; the upstream tables it reads are refreshed with it, from one snapshot.
    Tables whose inputs did not change are recorded NO_DATA without starting Spark; the rest
    run in one spark-submit application. Suspended tables are skipped, and so are tables with
    `scheduler: disable` unless --select names them with --all. Every run writes
    target/run_results.json (--format json prints it on stdout; progress and the summary go
    to stderr). With --watch, the passes share one warm Spark application, started by the
    first pass with work and stopped after --idle-timeout seconds without any. Exit code 1
    when any refresh failed.

    Example: dt run --select +customer_rank --all
    """
    from dtcli import api
    from dtcli.api.watch import clock_from_env
    from dtcli.ui.run_view import RunView, print_plan

    fmt = _fmt(format)
    if max_ticks is not None and not watch:
        raise UsageError("--max-ticks only applies with --watch")
    if idle_timeout is not None and not watch:
        raise UsageError("--idle-timeout only applies with --watch")
    if watch and dry_run:
        raise UsageError("--watch and --dry-run cannot be combined")
    args = {"select": select or [], "all": all_tables, "full_refresh": full_refresh}
    if watch:
        return _watch(project_dir, target, select, wait, max_ticks, fmt, args, idle_timeout)
    checked = api.check(project_dir, target, check_sources=True, now=clock_from_env().now(),
                        with_stats=True)
    if dry_run:
        planned = api.plan_scheduled(checked, select, all_tables=all_tables, full_refresh=full_refresh)
        return print_plan(planned.plan, planned.decision)
    started = _utcnow()
    progress = RunView()
    try:
        result = api.run(checked, select, all_tables=all_tables, full_refresh=full_refresh, wait=wait,
                         on_event=progress, on_plan=progress.plan)
    finally:
        progress.close()
    _report(checked, result, "run", args, started, fmt)
    if result.failed:
        raise typer.Exit(EXIT_REFRESH_FAILED)


def _utcnow():
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


def _report(checked, result, command: str, args: dict, started, fmt: str, *, lines: bool = False,
            prefix: str = "") -> None:
    """Write target/run_results.json; print it (--format json) or a one-line summary. With
    JSON on stdout, the summary goes to stderr with the progress. `lines`: one compact JSON
    document per line (--watch)."""
    from dtcli import api
    from dtcli.ui.output import err_console, print_json
    from dtcli.ui.run_view import print_summary

    doc = api.write_run_results(checked, result, command=command, args=args, started_at=started)
    if fmt == "json":
        if lines:
            import json

            sys.stdout.write(json.dumps(doc, default=str) + "\n")
            sys.stdout.flush()
        else:
            print_json(doc)
        print_summary(result, out=err_console, prefix=prefix)
    else:
        print_summary(result, prefix=prefix)


def _watch(project_dir: Path, target: Optional[str], select: Optional[list[str]], wait: float,
           max_ticks: Optional[int], fmt: str, args: dict, idle_timeout: Optional[float]) -> None:
    from dtcli import api
    from dtcli.api.watch import clock_from_env, watch
    from dtcli.ui.output import console, err_console
    from dtcli.ui.run_view import RunView

    clock, failures = clock_from_env(), []
    progress = RunView()
    out = err_console if fmt == "json" else console
    state = {"started": _utcnow(), "checked": None}

    def on_pass(n, result, wake) -> None:
        progress.close()
        _report(state["checked"], result, "run", {**args, "watch": True}, state["started"], fmt,
                lines=True, prefix=f"pass {n} at {result.plan.data_timestamp[:19]}: ")
        failures.extend(r for r in result.records if r.failed)
        out.print(f"next pass at {wake.isoformat()[:19]}" if wake else "no table is scheduled; stopping",
                  highlight=False)

    def check(now):       # called at the start of each pass
        state["started"] = _utcnow()
        state["checked"] = api.check(project_dir, target, check_sources=True, now=now, with_stats=True)
        return state["checked"]

    passes = watch(check, select, clock=clock, max_ticks=max_ticks, wait=wait, on_pass=on_pass,
                   on_event=progress, idle_timeout=idle_timeout)
    out.print(f"watch stopped after {passes} pass(es)", highlight=False)
    if failures:
        raise typer.Exit(EXIT_REFRESH_FAILED)


@app.command()
def refresh(name: Annotated[str, typer.Argument(help="Dynamic table to refresh now.")],
            project_dir: ProjectDir = Path("."), target: Target = None,
            dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan as JSON; run nothing.")] = False,
            wait: Wait = 0.0, format: RunFormat = "table") -> None:
    """Refresh one dynamic table now (trigger MANUAL), with the upstream tables it needs.

    Works on suspended tables and on `scheduler: disable` tables too (an upstream table with
    `scheduler: disable` is read as it is); manual failures do not count toward
    auto-suspension. Writes target/run_results.json (--format json prints it).

    Example: dt refresh customer_revenue
    """
    from dtcli import api
    from dtcli.api.watch import clock_from_env
    from dtcli.model import MANUAL
    from dtcli.ui.run_view import RunView, print_plan

    fmt = _fmt(format)
    checked = api.check(project_dir, target, check_sources=True, now=clock_from_env().now(),
                        with_stats=True)
    if dry_run:
        return print_plan(api.plan_run(checked, [checked.project.table_key(name)], trigger=MANUAL))
    started = _utcnow()
    progress = RunView()
    try:
        result = api.refresh(checked, name, progress, wait=wait, on_plan=progress.plan)
    finally:
        progress.close()
    _report(checked, result, "refresh", {"name": name}, started, fmt)
    if result.failed:
        raise typer.Exit(EXIT_REFRESH_FAILED)


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
    """Delete a dynamic table: data, history, scheduling state. No Spark.

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
    typer.echo(f"dropped {name.lower()} ({api.drop(project, name, wait=wait)})")


Wide = Annotated[bool, typer.Option("--wide", "-w", help="Every field as a column (lines may be wider than the terminal).")]


@show_app.command("dynamic")
def show_dynamic(what: Annotated[str, typer.Argument(metavar="tables", help="The word 'tables'.")],
                 project_dir: ProjectDir = Path("."), target: Target = None,
                 like: Annotated[Optional[str], typer.Option("--like", help="SQL LIKE or glob pattern on the name.")] = None,
                 format: Format = "table", wide: Wide = False) -> None:
    """One row per dynamic table: state, refresh mode, target lag, freshness, rows, last
    refresh, next due, scheduler; as many as fit the terminal (--wide: every field).

    Example: dt show dynamic tables --like 'customer%' --format json
    """
    from dtcli import api
    from dtcli.api.watch import clock_from_env
    from dtcli.ui.output import print_fitted, print_json
    from dtcli.ui.show_view import table_columns, wide_columns

    if what != "tables":
        raise UsageError(f"unknown object '{what}'", hint="dt show dynamic tables")
    checked = api.check(project_dir, target, now=clock_from_env().now(), with_stats=True)
    rows = api.show_tables(checked, like)
    if _fmt(format) == "json":
        print_json(rows)
    else:
        print_fitted(wide_columns(rows) if wide else table_columns(checked.now), rows, wide=wide)


@show_app.command("refresh-history")
def show_history(name: Annotated[Optional[str], typer.Argument(help="Only this table.")] = None,
                 project_dir: ProjectDir = Path("."), target: Target = None,
                 limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Newest N entries.")] = None,
                 format: Format = "table", wide: Wide = False) -> None:
    """Refresh history, newest first: state, action, trigger, when, how long, rows changed,
    message (cut to the terminal; --wide or --format json for every field in full).

    Example: dt show refresh-history customer_rank --limit 5
    """
    from dtcli import api
    from dtcli.api.watch import clock_from_env
    from dtcli.ui.output import print_fitted, print_json
    from dtcli.ui.show_view import history_columns, wide_columns

    checked = api.check(project_dir, target, now=clock_from_env().now())
    rows = api.show_history(checked, name, limit)
    if _fmt(format) == "json":
        print_json(rows)
    else:
        print_fitted(wide_columns(rows) if wide else history_columns(checked.now), rows, wide=wide)


@show_app.command("rows")
def show_rows(name: Annotated[str, typer.Argument(help="Dynamic table to preview.")],
              project_dir: ProjectDir = Path("."), target: Target = None,
              where: Annotated[Optional[str], typer.Option("--where", "-w", help="Only rows matching this SQL condition (the project's dialect).")] = None,
              limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="At most N rows (default 10).")] = 10,
              count: Annotated[bool, typer.Option("--count", help="Print frozen_rows and active_rows instead of rows.")] = False,
              format: Format = "table") -> None:
    """Preview a dynamic table's rows, with is_frozen: whether the row is in its frozen region
    (as of its last refresh). No Spark: the rows are read with deltalake's own engine.

    Example: dt show rows dt_orders --where "order_date >= '2025-01-01'" --limit 5
    """
    from dtcli import api
    from dtcli.ui.output import print_json, print_table

    found = api.show_rows(api.check(project_dir, target), name, where=where, limit=limit, count=count)
    if _fmt(format) == "json":
        print_json(found)
    elif count:
        print_table([found], ("frozen_rows", "active_rows"), title=f"{name.lower()}: frozen and active rows")
    else:
        print_table(found, list(found[0]) if found else ["is_frozen"], title=f"{name.lower()} ({len(found)} rows)")


@show_app.command("graph")
def show_graph(project_dir: ProjectDir = Path("."), target: Target = None,
               format: Annotated[str, typer.Option("--format", "-f", help="tree, mermaid, dot or json.")] = "tree") -> None:
    """The DAG of sources and dynamic tables.

    Example: dt show graph --format mermaid
    """
    from dtcli import api
    from dtcli.ui.graph_view import edges, render
    from dtcli.ui.output import print_json

    checked = api.check(project_dir, target)
    project, graph = checked.project, checked.graph
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
    from dtcli.ui.output import console, print_json, print_table

    data = api.explain(api.check(project_dir, target, check_sources=True), name)
    if _fmt(format) == "json":
        print_json(data)
        return
    console.print(f"[bold]{data['name']}[/] ({data['file']}): refresh mode [bold]{data['refresh_mode']}[/]"
                  + (f" — {data['refresh_mode_reason']}" if data["refresh_mode_reason"] else ""))
    if data["scheduler"] != "ENABLE":
        schedule = "scheduler: disable (refreshed only on demand: dt refresh NAME)"
    elif data["effective_lag"] is None:     # downstream with no consumer that has a time lag
        schedule = f"target lag {data['target_lag']}, not refreshed by schedule (no consumer with a time lag)"
    else:
        schedule = (f"target lag {data['target_lag']}, effective lag {data['effective_lag']} s, "
                    f"period {data['period_seconds']} s")
    console.print(f"{schedule}; upstream: {', '.join(data['upstream']) or '-'}; "
                  f"downstream: {', '.join(data['downstream']) or '-'}", highlight=False)
    if data["columns"]:
        print_table([{"column": c["name"], "type": c["type"] or "(known when Spark runs)"}
                     for c in data["columns"]], ("column", "type"), title="columns")
    print_table(data["operators"], ("operator", "line", "strategy", "considerations"), title="operators")
    print_table(data["inputs"], ("name", "kind", "version", "change_data_feed", "path"), title="inputs")
    if data["custom"]:
        custom = data["custom"]
        changes = ", ".join(f"{c['name']} ({c['information']}"
                            + (f", compacted on RELY key {', '.join(c['rely_primary_key'])})" if c["compacted_per_key"]
                               else ", as recorded: no RELY key)") for c in custom["changes"]) or "-"
        console.print(f"{custom['statement']}; CHANGES() of: {changes}; reads SELF: "
                      f"{'line ' + ', '.join(map(str, custom['self_reads'])) if custom['self_reads'] else 'no'}; "
                      f"read at the run's snapshot: {', '.join(custom['snapshot_tables']) or '-'}; "
                      f"first refresh: {custom['initial_population']}", highlight=False)
    if data["adaptive"]:
        console.print(f"next refresh: {data['adaptive']['action']} — {data['adaptive']['reason']}", highlight=False)
    if data["frozen"]:
        frozen = data["frozen"]
        counted = (f"; at the last refresh ({frozen['as_of'][:19]}) {frozen['frozen_rows']} rows frozen, "
                   f"{frozen['active_rows']} active" if frozen["as_of"] else "")
        console.print(f"frozen where {frozen['predicate']} (columns {', '.join(frozen['columns'])}); "
                      f"{frozen['rely_check']}{counted}", highlight=False)
    if data["ignored_properties"]:
        console.print("ignored (Snowflake-only): " + ", ".join(
            f"{p['property']}{' = ' + p['value'] if p['value'] else ''} (line {p['line']})"
            for p in data["ignored_properties"]), highlight=False)
    for warning in data["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)


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
    if _fmt(format) == "json":
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


def main() -> None:
    """Console entry point: the one place errors become messages and exit codes.

    Typer runs in standalone mode (usage errors exit 2, --help, typer.Exit); dt's own typed
    errors come out of it and are printed here as one line, without a traceback unless --debug.
    """
    from dtcli.ui.output import err_console
    from dtcli.ui.quiet import library_noise

    try:
        with library_noise("--debug" in sys.argv[1:]):
            app()
    except DtError as err:
        if _state["debug"]:
            raise
        from dtcli.redact import scrub

        err_console.print(scrub(f"error: {err}"), highlight=False, markup=False, soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
