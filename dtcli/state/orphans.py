"""Orphaned DTs (tables dt built whose .sql file has since been removed), and dropping DTs.

Orphans are discovered from the warehouse, not the project: a Delta table directly under
`<warehouse>/` whose log carries a dt frontier is a DT. Removing a file never drops data by
itself; `dt drop NAME` does, after confirmation; it also drops a DT still defined, which the next
`dt run` then creates anew.
"""

from __future__ import annotations

from pathlib import Path

from dtcli.errors import UsageError, suggest
from dtcli.model import Project
from dtcli.state import history, internal, scheduling, storage
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


def droppable(project: Project, name: str) -> str:
    """The path of the DT `dt drop NAME` would delete, or a usage error saying why there is none."""
    key = name.lower()
    found = orphans(project)
    defined = key in project.tables or key in project.disabled
    if not defined and key not in found:
        raise UsageError(f"no dynamic table named '{name}' in {project.warehouse}",
                         hint=suggest(key, [*found, *project.tables]) or "see `dt show dynamic tables`")
    path = project.table_path(key)
    if defined and open_table(path) is None:
        raise UsageError(f"{key} has not been created yet: there is nothing to drop")
    return path


def drop(project: Project, name: str) -> str:
    """Delete a DT's data, its internal tables, its refresh history and its scheduling state: an orphan for good, a
    defined DT (to recreate it, e.g. from a backfill) until the next `dt run` creates it again."""
    key = name.lower()
    path = droppable(project, name)
    # Metadata first: if we crash in between, the table is still found as an orphan and a second
    # `dt drop` finishes the job; the reverse order could leave history of a table that is gone.
    hist = open_table(history.history_path(project.warehouse))
    if hist is not None:
        hist.delete(f"name = '{key}'")
    scheduling.forget(project.warehouse, key)
    # its internal tables before the DT: a crash in between leaves the DT, which a second
    # `dt drop` finds again (or, still defined, a refresh reinitializes: its state is gone)
    internal.remove(project.warehouse, key)
    storage.remove_tree(path)
    return path
