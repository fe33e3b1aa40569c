"""Orphaned DTs: tables dt built whose .sql file has since been removed from the project.

They are discovered from the warehouse, not the project: a Delta table directly under
`<warehouse>/` whose log carries a dt frontier is a DT. Removing a file never drops data by
itself; `dt drop NAME` does, after confirmation.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from dtcli.errors import UsageError, suggest
from dtcli.model import Project
from dtcli.state import history, scheduling
from dtcli.state.delta_log import open_table, read_frontier


def orphans(project: Project) -> list[str]:
    """Names of the DTs in a local warehouse that the project no longer defines (object stores
    are not listed). Defined DTs are skipped before their logs are opened: callers have them."""
    root = Path(project.warehouse)
    if "://" in project.warehouse or not root.is_dir():
        return []
    source_paths = {str(Path(s.path).resolve()) for s in project.sources.values() if "://" not in s.path}
    found = []
    for child in sorted(root.iterdir()):
        if child.name.startswith(("_", ".")) or not (child / "_delta_log").is_dir():
            continue
        if child.name in project.tables or child.name in project.disabled \
                or str(child.resolve()) in source_paths:
            continue
        table = open_table(str(child))
        if table is not None and read_frontier(table)[0] is not None:
            found.append(child.name)
    return found


def drop(project: Project, name: str) -> str:
    """Delete an orphaned DT's data, its refresh history and its scheduling state."""
    key = name.lower()
    if key in project.tables:
        raise UsageError(f"{key} is still defined in {project.tables[key].file}",
                         hint="delete its .sql file first; to rebuild it instead, run "
                              f"`dt run --select {key} --full-refresh`")
    found = orphans(project)
    if key not in found:
        raise UsageError(f"no orphaned dynamic table named '{name}' in {project.warehouse}",
                         hint=suggest(key, found) or "see `dt show dynamic tables`")
    path = Path(project.table_path(key))
    # Metadata first: if we crash in between, the table is still found as an orphan and a second
    # `dt drop` finishes the job; the reverse order could leave history of a table that is gone.
    hist = open_table(history.history_path(project.warehouse))
    if hist is not None:
        hist.delete(f"name = '{key}'")
    scheduling.forget(project.warehouse, key)
    shutil.rmtree(path)
    return str(path)
