"""What a strategy is given to refresh one DT, and what it hands back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dtcli.model import Frontier, Plan, RefreshStep

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dtcli.engine.runtime.change_cache import ChangeCache
    from dtcli.engine.runtime.pinned import PinnedReads


@dataclass
class RefreshContext:
    spark: SparkSession
    plan: Plan
    step: RefreshStep
    input_versions: dict[str, int]     # version each input is read at in this refresh
    frontier: Frontier                 # what the DT will reflect once this refresh commits
    pinned: PinnedReads | None = None  # the run's tables read at pinned versions (engine/runtime/pinned.py)
    changes: ChangeCache | None = None  # the run's input changes, read once (engine/runtime/change_cache.py)
    # inputs whose rows are computed row by row from a table's (a kept aggregate's values over its
    # totals, engine/runtime/kept_aggregates.py): input -> the function of a DataFrame of the table's
    # columns (and `carry` columns, passed through) giving the input's; its versions and change too
    derived: dict[str, Callable] = field(default_factory=dict)


@dataclass
class RefreshResult:
    inserted: int = 0
    deleted: int = 0
    copied: int = 0
    updated: int = 0                   # rows a MERGE updated in place (custom tables)
    table_version: int | None = None
    strategy: str | None = None        # how an INCREMENTAL refresh applied its change
    table_replaced: bool = False       # the table was written anew (its comment with it)
    # a strategy that did another action than planned (INCREMENTAL -> FULL or REINITIALIZE)
    # says which and why
    fallback_action: str | None = None
    message: str | None = None
    reinit_reason: str | None = None
