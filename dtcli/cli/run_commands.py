"""The commands that refresh: run (once, or --watch) and refresh; each writes target/run_results.json."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.cli.app import NoCache, ProjectDir, RunFormat, Target, Threads, Wait, app, check_format
from dtcli.errors import EXIT_REFRESH_FAILED, UsageError


@app.command()
def run(project_dir: ProjectDir = Path("."), target: Target = None,
        select: Annotated[Optional[list[str]], typer.Option("--select", "-s", help="dbt-style selectors: name, +name (with upstream), name+ (with downstream), tag:x, path:tables/staging; repeatable.")] = None,
        all_tables: Annotated[bool, typer.Option("--all", help="Refresh every selected table now, ignoring target lag.")] = False,
        full_refresh: Annotated[bool, typer.Option("--full-refresh", help="Recompute the selected tables FULL now (implies --all).")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan as JSON; run nothing.")] = False,
        watch: Annotated[bool, typer.Option("--watch", help="Keep scheduling: run a pass whenever a table falls due, until Ctrl-C.")] = False,
        max_ticks: Annotated[Optional[int], typer.Option("--max-ticks", min=1, help="With --watch: stop after N scheduling passes.")] = None,
        idle_timeout: Annotated[Optional[float], typer.Option("--idle-timeout", min=1, help="With --watch: stop the warm Spark application after this many seconds without work (default 300); the next pass with work starts a new one.")] = None,
        threads: Threads = None, wait: Wait = 0.0, format: RunFormat = "table", no_cache: NoCache = False) -> None:
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

    fmt = check_format(format)
    if max_ticks is not None and not watch:
        raise UsageError("--max-ticks only applies with --watch")
    if idle_timeout is not None and not watch:
        raise UsageError("--idle-timeout only applies with --watch")
    if watch and dry_run:
        raise UsageError("--watch and --dry-run cannot be combined")
    args = {"select": select or [], "all": all_tables, "full_refresh": full_refresh}
    if watch:
        return _watch(project_dir, target, select, wait, max_ticks, fmt, args, idle_timeout, threads, no_cache)
    checked = api.check(project_dir, target, check_sources=True, now=clock_from_env().now(),
                        with_stats=True, look_up_names=not dry_run, on_event=_said, use_cache=not no_cache)
    _set_threads(checked, threads)
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
    _exit(result)



def _utcnow():
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)



def _report(checked, result, command: str, args: dict, started, fmt: str, *, lines: bool = False,
            prefix: str = "", warn_about=None) -> None:
    """Write target/run_results.json; print it (--format json) or a one-line summary. With
    JSON on stdout, the summary goes to stderr with the progress. `lines`: one compact JSON
    document per line (--watch). A warning for each refreshed DT that cannot meet its target
    lag (`warn_about`: only these)."""
    from dtcli import api
    from dtcli.artifacts.typed_json import to_json
    from dtcli.ui.output import err_console, print_json
    from dtcli.ui.run_view import print_summary

    doc = to_json(api.write_run_results(checked, result, command=command, args=args, started_at=started))
    for name in warn_about if warn_about is not None else result.behind:
        err_console.print(f"warning: {result.behind[name]}", highlight=False, markup=False, soft_wrap=True)
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



def _set_threads(checked, threads: Optional[int]) -> None:
    if threads is not None:
        checked.project.threads = threads


def _watch(project_dir: Path, target: Optional[str], select: Optional[list[str]], wait: float,
           max_ticks: Optional[int], fmt: str, args: dict, idle_timeout: Optional[float],
           threads: Optional[int], no_cache: bool = False) -> None:
    from dtcli import api
    from dtcli.api.watch import BehindWarnings, clock_from_env, watch
    from dtcli.ui.output import console, err_console
    from dtcli.ui.run_view import RunView

    clock, failures = clock_from_env(), []
    progress = RunView()
    out = err_console if fmt == "json" else console
    state = {"started": _utcnow(), "checked": None}

    behind = BehindWarnings()

    def on_pass(n, result, wake) -> None:
        progress.close()
        new = behind.after(result)
        _report(state["checked"], result, "run", {**args, "watch": True}, state["started"], fmt,
                lines=True, prefix=f"pass {n} at {result.plan.data_timestamp[:19]}: ", warn_about=new)
        failures.extend(r for r in result.records if r.failed)
        out.print(f"next pass at {wake.isoformat()[:19]}" if wake else "no table is scheduled; stopping",
                  highlight=False)

    def check(now):       # called at the start of each pass
        state["started"] = _utcnow()
        state["checked"] = api.check(project_dir, target, check_sources=True, now=now, with_stats=True,
                                     look_up_names=True, on_event=_said, use_cache=not no_cache)
        _set_threads(state["checked"], threads)
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
            threads: Threads = None, wait: Wait = 0.0, format: RunFormat = "table", no_cache: NoCache = False) -> None:
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

    fmt = check_format(format)
    checked = api.check(project_dir, target, check_sources=True, now=clock_from_env().now(),
                        with_stats=True, look_up_names=not dry_run, on_event=_said, use_cache=not no_cache)
    _set_threads(checked, threads)
    if dry_run:
        return print_plan(api.plan_run(checked, [checked.project.table_key(name)], trigger=MANUAL))
    started = _utcnow()
    progress = RunView()
    try:
        result = api.refresh(checked, name, progress, wait=wait, on_plan=progress.plan)
    finally:
        progress.close()
    _report(checked, result, "refresh", {"name": name}, started, fmt)
    _exit(result)


def _exit(result) -> None:
    """A run stopped by the user exits as an interrupted program does (after its results were
    written); one whose Spark application could not start is one error; one with a failed
    refresh exits 1."""
    if result.not_started:
        from dtcli.ui.output import err_console

        err_console.print(f"error: the Spark application did not start, so no refresh ran: "
                          f"{result.not_started}\n  fix: correct the setting or environment it names "
                          f"(the target's spark: settings in dt_project.yml); the whole log: {result.log_path}",
                          highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_REFRESH_FAILED)
    if result.interrupted:
        from dtcli.cli import interrupted_exit_code

        raise typer.Exit(interrupted_exit_code())
    if result.failed:
        raise typer.Exit(EXIT_REFRESH_FAILED)


def _said(event) -> None:
    """What looking source table names up in the metastore says (before a run plans)."""
    from dtcli.events import LookingUp, NameResolved

    if isinstance(event, LookingUp):
        typer.echo(f"looking up {', '.join(event.tables)} in the metastore (a Spark application)", err=True)
    elif isinstance(event, NameResolved) and event.location:
        typer.echo(f"{event.table} is the Delta table at {event.location}", err=True)
