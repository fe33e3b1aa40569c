"""The library facade the CLI (and notebooks) call: one checked project per command.

`check` loads the project (every table file rendered and parsed once), reads one snapshot of
the warehouse from Delta logs and derives everything planning needs; every other call takes
that `Checked` object. Nothing here starts a JVM except `run`/`refresh`, and only when a plan
has Spark work (one spark-submit application).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from dtcli.api.lifecycle import drop, resume, suspend
from dtcli.api.runs import (
    Events,
    RunResult,
    ScheduledPlan,
    execute,
    no_data_records,
    plan_run,
    plan_scheduled,
    refresh,
    run,
    spark_submit,
)
from dtcli.api.show import show_history, show_rows, show_tables
from dtcli.artifacts.explain import ExplainReport
from dtcli.artifacts.run_results import RunResults
from dtcli.model import Project
from dtcli.planning.check_cache import CheckCache, disabled_by_env
from dtcli.planning.checked import Checked
from dtcli.planning.checked import check as _check
from dtcli.planning.explain import explain as _explain
from dtcli.planning.snapshot import take_snapshot
from dtcli.project import load_project

__all__ = ["Checked", "Events", "RunResult", "ScheduledPlan", "check", "drop", "execute", "explain", "import_snowflake",
           "init", "load", "no_data_records", "plan_run", "plan_scheduled", "refresh", "resume",
           "run", "seed", "show_history", "show_rows", "show_tables", "spark_submit", "suspend",
           "write_run_results"]


def load(project_dir: str | Path = ".", target: str | None = None, *,
         check_sources: bool = False) -> Project:
    """The project as loaded (rendered, parsed, resolved), without reading the warehouse."""
    return load_project(project_dir, target, check_sources=check_sources)


def check(project_dir: str | Path | Project = ".", target: str | None = None, *,
          now: datetime | None = None, with_stats: bool = False,
          check_sources: bool = False, look_up_names: bool = False,
          on_event=lambda event: None, use_cache: bool = True,
          upstream_of: str | None = None) -> Checked:
    """Load (unless given a loaded project), snapshot and check the project: names, cycles,
    columns and types, lags, refresh modes. Raises the first problem, with file and line.

    `look_up_names` (a run): sources declared by a table name dt does not know a location for
    are first looked up in the metastore, in a Spark application (dtcli.api.names).
    `use_cache` False (`--no-cache`; DT_NO_CACHE=1 too): nothing read from or written to
    target/check_cache.pickle (dtcli.planning.check_cache).
    `upstream_of` (`explain NAME`, `show rows NAME`): check only that DT and the ones it reads;
    problems elsewhere in the project surface in `validate` and `run`."""
    cache = None
    if isinstance(project_dir, Project):
        project = project_dir
    else:
        cache = CheckCache(Path(project_dir).resolve(), enabled=use_cache)
        project = load_project(project_dir, target, check_sources=check_sources and not look_up_names,
                               cache=cache)
        if look_up_names:
            from dtcli.api import names
            from dtcli.project.loader import check_source_paths

            if names.look_up(project, on_event=on_event):
                project = load_project(project_dir, target, cache=cache)   # with the locations just found
            if check_sources:
                check_source_paths(project)
    only = None
    if upstream_of is not None:
        from dtcli.planning.graph import Graph

        only = Graph.of(project).upstream_closure({project.table_key(upstream_of)})
    snapshot = take_snapshot(project, only, with_stats=with_stats, now=now,
                             use_cache=use_cache and not disabled_by_env())
    return _check(project, snapshot, use_cache=use_cache,
                  only=only, cache=cache)


def explain(checked: Checked, name: str) -> ExplainReport:
    """`dt explain NAME` (dtcli.artifacts.typed_json.to_json gives its JSON)."""
    from dtcli.state import history, reconcile

    reconcile.settle(checked.project, checked.snapshot.tables)
    return _explain(checked, name, history.recent(checked.project.warehouse))


def write_run_results(checked: Checked, result: RunResult, *, command: str, args: dict,
                      started_at: datetime) -> RunResults:
    """Write target/run_results.json for a finished `run`/`refresh`; returns the document
    (dtcli.artifacts.typed_json.to_json gives its JSON)."""
    from dtcli.api import run_results

    doc = run_results.document(checked.project, result, command=command, args=args, started_at=started_at)
    run_results.write(checked.project, doc)
    return doc


def seed(project_dir: str | Path = ".", target: str | None = None,
         names: list[str] | None = None) -> list:
    """`dt seed`: load seeds/*.csv as Delta sources (no JVM)."""
    from dtcli.project.seed import seed as load_seeds

    return load_seeds(load_project(project_dir, target), names)


def import_snowflake(project_dir: str | Path, script: str | Path, *, force: bool = False):
    """`dt import snowflake`: CREATE DYNAMIC TABLE statements into tables/ files (no JVM)."""
    from dtcli.project.snowflake_import import import_script

    return import_script(Path(project_dir), Path(script), force=force)


def init(directory: Path, name: str | None = None):
    """`dt init`: a new project from the template."""
    from dtcli.project.scaffold import init_project

    return init_project(directory, name)
