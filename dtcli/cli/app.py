"""The `dt` Typer applications and the options its commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.errors import UsageError

app = typer.Typer(
    help="dt: dynamic tables for Apache Spark and Delta Lake.\n\n"
         "Example: dt init shop && cd shop && dt seed && dt run && dt show dynamic tables",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode=None)
show_app = typer.Typer(help="Show dynamic tables, refresh history, test results, rows or the DAG (no Spark).\n\n"
                            "Example: dt show dynamic tables --format json", no_args_is_help=True)
app.add_typer(show_app, name="show")
import_app = typer.Typer(help="Turn another tool's definitions into table files (no Spark).\n\n"
                              "Example: dt import snowflake dynamic_tables.sql", no_args_is_help=True)
app.add_typer(import_app, name="import")

_state = {"debug": False}

ProjectDir = Annotated[Path, typer.Option("--project-dir", "-p", help="Project folder (default: current directory).")]
Target = Annotated[Optional[str], typer.Option("--target", "-t", help="Target from dt_project.yml targets:.")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Check every table and read every Delta log afresh: "
                                       "neither read nor write target/check_cache.pickle and "
                                       "target/state_cache.pickle (also DT_NO_CACHE=1).")]
Format = Annotated[str, typer.Option("--format", "-f", help="table or json.")]
RunFormat = Annotated[str, typer.Option("--format", "-f", help="table (a summary line) or json (target/run_results.json on stdout; progress on stderr).")]


Wait = Annotated[float, typer.Option("--wait", help="Seconds to wait for another dt process, or the Spark "
                                                     "application of a dt that was killed, holding the "
                                                     "warehouse lock (default: fail at once).")]
Threads = Annotated[Optional[int], typer.Option("--threads", min=1, help="Refreshes to run side by side, each once "
                                                                        "the tables it reads are refreshed (default: "
                                                                        "`threads:` of dt_project.yml, else 4).")]
Wide = Annotated[bool, typer.Option("--wide", "-w", help="Every field as a column (lines may be wider than the terminal).")]


@app.callback()
def _main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False) -> None:
    _state["debug"] = debug



def check_format(value: str, allowed: tuple[str, ...] = ("table", "json")) -> str:
    if value not in allowed:
        raise UsageError(f"--format must be one of {', '.join(allowed)}, not '{value}'")
    return value

