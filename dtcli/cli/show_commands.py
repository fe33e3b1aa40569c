"""The read-only commands (no Spark): show dynamic tables, refresh-history, test-results, rows, graph;
explain."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.cli.app import Format, NoCache, ProjectDir, Target, Wide, app, check_format, show_app
from dtcli.errors import UsageError


@show_app.command("dynamic")
def show_dynamic(what: Annotated[str, typer.Argument(metavar="tables", help="The word 'tables'.")],
                 project_dir: ProjectDir = Path("."), target: Target = None,
                 like: Annotated[Optional[str], typer.Option("--like", help="SQL LIKE or glob pattern on the name.")] = None,
                 format: Format = "table", wide: Wide = False, no_cache: NoCache = False,
                 internal: Annotated[bool, typer.Option("--internal", help="Also list the internal tables each DT keeps under _dt/ (a top-N's rows...).")] = False) -> None:
    """One row per dynamic table: state, refresh mode, target lag, freshness (the lag now), the
    peak lag of the last hour ("over" past the target), rows, last refresh, next due, scheduler;
    as many as fit the terminal (--wide: every field). --internal also lists the internal
    tables a DT keeps (dropped with it).

    Example: dt show dynamic tables --like 'customer%' --format json
    """
    from dtcli import api
    from dtcli.api.watch import clock_from_env
    from dtcli.ui.output import print_fitted, print_json
    from dtcli.ui.show_view import table_columns, wide_columns

    if what != "tables":
        raise UsageError(f"unknown object '{what}'", hint="dt show dynamic tables")
    checked = api.check(project_dir, target, now=clock_from_env().now(), with_stats=True,
                        use_cache=not no_cache)
    rows = api.show_tables(checked, like, internal=internal)
    if check_format(format) == "json":
        print_json(rows)
        return
    print_fitted(wide_columns([{k: v for k, v in r.items() if k != "internal_tables"} for r in rows])
                 if wide else table_columns(checked.now), rows, wide=wide)
    if internal:
        from dtcli.ui.output import print_table

        kept = [{"dynamic table": r["name"], **t} for r in rows for t in r.get("internal_tables", [])]
        print_table(kept, ("dynamic table", "role", "version", "rows", "bytes", "path"),
                    title="internal tables" if kept else "internal tables: none")



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
    if check_format(format) == "json":
        print_json(rows)
    else:
        print_fitted(wide_columns(rows) if wide else history_columns(checked.now), rows, wide=wide)



@show_app.command("test-results")
def show_test_results(name: Annotated[Optional[str], typer.Argument(help="Only this DT, source or seed.")] = None,
                      project_dir: ProjectDir = Path("."), target: Target = None, format: Format = "table",
                      wide: Wide = False, no_cache: NoCache = False) -> None:
    """The last result of each data test and expectation, per table: status (pass, fail, warn,
    error; none when it never ran), failing rows, when, and what ran it (a refresh, which checks
    the rows it is about to commit, or dt test / dt build, over the whole table). Lists the
    checks the project defines now. No Spark.

    Example: dt show test-results orders --format json
    """
    from dtcli import api
    from dtcli.api.test_results import show_test_results as last_results
    from dtcli.api.watch import clock_from_env
    from dtcli.ui.output import print_fitted, print_json
    from dtcli.ui.show_view import test_result_columns, wide_columns

    checked = api.check(project_dir, target, now=clock_from_env().now(), use_cache=not no_cache)
    rows = last_results(checked, name)
    if check_format(format) == "json":
        print_json(rows)
    else:
        print_fitted(wide_columns(rows) if wide else test_result_columns(checked.now), rows, wide=wide)



@show_app.command("rows")
def show_rows(name: Annotated[str, typer.Argument(help="Dynamic table to preview.")],
              project_dir: ProjectDir = Path("."), target: Target = None,
              where: Annotated[Optional[str], typer.Option("--where", "-w", help="Only rows matching this SQL condition (the project's dialect).")] = None,
              limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="At most N rows (default 10).")] = 10,
              count: Annotated[bool, typer.Option("--count", help="Print frozen_rows and active_rows instead of rows.")] = False,
              format: Format = "table", no_cache: NoCache = False) -> None:
    """Preview a dynamic table's rows, with is_frozen: whether the row is in its frozen region
    (as of its last refresh). No Spark: the rows are read with deltalake's own engine.

    Example: dt show rows dt_orders --where "order_date >= '2025-01-01'" --limit 5
    """
    from dtcli import api
    from dtcli.ui.output import print_json, print_table

    found = api.show_rows(api.check(project_dir, target, use_cache=not no_cache, upstream_of=name), name, where=where, limit=limit, count=count)
    if check_format(format) == "json":
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
    fmt = check_format(format, ("tree", "mermaid", "dot", "json"))
    if fmt == "json":
        print_json({"nodes": graph.order, "edges": [list(e) for e in edges(project, graph)]})
    else:
        typer.echo(render(project, graph, fmt))



@app.command()
def explain(name: Annotated[str, typer.Argument(help="Dynamic table to explain.")],
            project_dir: ProjectDir = Path("."), target: Target = None, format: Format = "table",
            no_cache: NoCache = False) -> None:
    """How a table refreshes and why: mode, reason, per-operator strategy, inputs, lag. No Spark.

    Example: dt explain customer_revenue --format json
    """
    from dtcli import api
    from dtcli.artifacts.typed_json import to_json
    from dtcli.ui.explain_view import print_explain
    from dtcli.ui.output import print_json

    # with the inputs' row counts, so ADAPTIVE's estimate is the one a run would make (and the
    # one `dt docs` shows)
    data = api.explain(api.check(project_dir, target, check_sources=True, with_stats=True,
                                  use_cache=not no_cache, upstream_of=name), name)
    if check_format(format) == "json":
        print_json(to_json(data))
        return
    print_explain(data)
