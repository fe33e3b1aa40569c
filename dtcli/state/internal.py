"""Where a DT's internal tables live, and what their logs say (no JVM).

A DT whose cheap upkeep needs an intermediate result (the rows under a top-N, ...) keeps it as
an internal table: a Delta table at `<warehouse>/_dt/internal/<dt>/<role>`, with a frontier of
its own in its commits, refreshed in the DT's refresh just before the DT (whose frontier records
the internal table's version it read: `Frontier.state_versions`). Being under `_dt/`, it is
never taken for a DT (orphans.py skips `_` folders); `dt drop` removes the DT's folder here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dtcli.model import join_path
from dtcli.state import storage
from dtcli.state.delta_log import table_info


def folder(warehouse: str, dt: str) -> str:
    return join_path(warehouse, "_dt", "internal", dt)


def path(warehouse: str, dt: str, role: str) -> str:
    return join_path(folder(warehouse, dt), role)


@dataclass(frozen=True)
class InternalState:
    """An internal table as its log has it (None fields: not created yet)."""

    dt: str
    role: str
    path: str
    version: int | None
    rows: int | None
    bytes: int | None
    source_versions: dict[str, int] | None     # what its rows reflect

    def to_dict(self) -> dict[str, object]:
        return {"dt": self.dt, "role": self.role, "path": self.path, "version": self.version,
                "rows": self.rows, "bytes": self.bytes, "source_versions": self.source_versions}


def state_of(dt: str, role: str, where: str) -> InternalState:
    info = table_info(where)
    if info is None:
        return InternalState(dt, role, where, None, None, None, None)
    return InternalState(dt, role, where, info.version, info.rows, info.bytes,
                         info.frontier.source_versions if info.frontier else None)


def existing(warehouse: str, dt: str) -> list[str]:
    """Roles of the internal tables a DT has on disk (local warehouses; [] on object stores,
    which are not listed)."""
    base = Path(folder(warehouse, dt))
    if "://" in warehouse or not base.is_dir():
        return []
    return sorted(child.name for child in base.iterdir() if (child / "_delta_log").is_dir())


def remove(warehouse: str, dt: str) -> None:
    """Delete every internal table of a DT (with `dt drop`)."""
    where = folder(warehouse, dt)
    if storage.is_remote(where) or Path(where).is_dir():
        storage.remove_tree(where)


def prune(warehouse: str, dt: str, keep: set[str]) -> list[str]:
    """Delete the internal tables of a DT that its definition no longer keeps (after a
    recompute committed without them); returns their roles."""
    gone = [role for role in existing(warehouse, dt) if role not in keep]
    for role in gone:
        storage.remove_tree(path(warehouse, dt, role))
    return gone
