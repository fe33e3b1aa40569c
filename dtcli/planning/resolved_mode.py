"""The refresh mode a DT resolves to, and what resolving it reads (planning/refresh_mode.py
resolves every DT's in DAG order; each kind of table gives its own, planning/kinds)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlglot import exp

from dtcli.model import ADAPTIVE, CUSTOM_INCREMENTAL, INCREMENTAL, Column, Project
from dtcli.sql.analysis import QueryAnalysis


@dataclass(frozen=True)
class ResolvedMode:
    mode: str                 # ADAPTIVE | INCREMENTAL | FULL | CUSTOM_INCREMENTAL
    reason: str | None = None
    # the change compiler's refusal of a query every operator of which the analyzer accepts (a
    # shape, not one construct: two outer joins in one SELECT...): explain lists it as a row
    shape_reason: str | None = None

    @property
    def incremental(self) -> bool:
        """A refresh of this DT may apply the change instead of recomputing."""
        return self.mode in (INCREMENTAL, ADAPTIVE, CUSTOM_INCREMENTAL)


@dataclass
class ModeScope:
    """What resolving one DT's refresh mode reads (planning/refresh_mode.py)."""

    project: Project
    source_cdf: dict[str, bool]                # source -> its change data feed is on
    analysed: dict[str, QueryAnalysis]
    qualified: Mapping[str, exp.Expression | None]   # DT -> its qualified query (None: left to Spark)
    compiler_reason: Callable[[str], str | None]
    schemas: dict[str, tuple[Column, ...]]
    modes: dict[str, ResolvedMode]             # the DTs upstream, resolved
