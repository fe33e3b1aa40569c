"""The typed parts a plan is built of: each step's layout, frozen regions, backfill, estimate and
lag target (model.StepOptions holds them), and the run's metastore work and name look-ups
(model.Plan). Built whole by planning/plan.py, frozen, and carried to the Spark driver as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from dtcli.config_keys import BackfillSpec, TableConfig


@dataclass(frozen=True)
class Layout:
    """How a recompute writes the DT and what its Delta table is set to (docs/configuration.md,
    "Layout"), from its config; and whether the table as it is differs from what is set."""

    partition_by: list[str] | None = None
    cluster_by: list[str] | None = None
    sort_by: list[str] | None = None          # the order a recompute writes the rows in
    max_rows_per_file: int = TableConfig.max_rows_per_file
    small_table_rows: int = TableConfig.small_table_rows   # engine/runtime/rewrite.py
    deletion_vectors: bool = TableConfig.deletion_vectors
    # the column names need Delta's column mapping (`delta.columnMapping.mode = 'name'`)
    column_mapping: bool = False
    comment: str | None = None
    comment_outdated: bool = False            # the table's comment differs from the config's
    deletion_vectors_outdated: bool = False   # the table's setting differs from the config's


@dataclass(frozen=True)
class Regions:
    """Frozen regions (planning/frozen.py): the predicate (for the frontier), and at this
    refresh's data timestamp the active and frozen regions as Spark SQL."""

    where: str | None = None
    active: str | None = None
    frozen: str | None = None


@dataclass(frozen=True)
class BackfillCopy:
    """The table a new DT is copied from, pinned at one Delta version (planning/backfill.py)."""

    name: str                     # as configured: a table name, or its path
    path: str
    version: int


@dataclass(frozen=True)
class Backfill:
    spec: BackfillSpec | None = None          # the `backfill` config as written: the frontier keeps it
    copy: BackfillCopy | None = None          # at creation: what the DT is copied from


@dataclass(frozen=True)
class Estimate:
    """Why this action, and the sizes ADAPTIVE decides on (and learns from)."""

    action_reason: str | None = None
    change_rows: int | None = None
    input_rows: int | None = None


@dataclass(frozen=True)
class LagTarget:
    """The lag the refresh runs under and when it should complete (planning/completion.py)."""

    target_lag_sec: int | None = None
    completion_target: str | None = None


@dataclass(frozen=True)
class Registration:
    """A DT to register as a table in the metastore after the run's refreshes (planning/catalog.py)."""

    name: str
    qualified_name: str
    path: str
    previous: str | None = None   # the name it was registered under before (moved): removed
    retry: str | None = None      # why the last attempt failed: this run retries
    # a comment edited while no input changed (a NO_DATA step commits nothing): set by the catalog work
    comment_changed: bool = False
    comment: str | None = None


@dataclass(frozen=True)
class Unregistration:
    """A dropped DT's table to remove from the metastore."""

    name: str
    qualified_name: str
    path: str | None = None


@dataclass(frozen=True)
class SourceLookup:
    """A source declared by table name, asked of the metastore: before planning (api/names.py),
    or again by a run that reads it (`recheck`: only a different answer is recorded)."""

    name: str
    table: str
    recheck: bool = False
    location: str | None = None   # the answer dt plans from now
    table_id: str | None = None
