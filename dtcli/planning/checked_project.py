"""The checked project: everything a command needs to know before Spark runs, computed once
(planning/checked.py builds it).

Built from the loaded project (every file rendered and parsed once) and one snapshot of the
warehouse: the DAG, target lags, each DT's columns and types, its query qualified against its
inputs, its refresh analysis and its resolved refresh mode. Planning, explain, show, watch and
run all read this one object (like SQLMesh's `Context`); none of them loads or parses again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dtcli.data_tests import TableChecks
from dtcli.model import Column, Project
from dtcli.planning.backfill import BackfillSource
from dtcli.planning.custom import CustomCheck
from dtcli.planning.graph import Graph
from dtcli.planning.lag import LagResolution
from dtcli.planning.resolved_mode import ResolvedMode
from dtcli.planning.snapshot import Snapshot
from dtcli.sql.analysis import QueryAnalysis
from dtcli.sql.frozen import FrozenPredicate
from dtcli.sql.resolve import Resolved
from dtcli.unit_tests import UnitTest


@dataclass
class Checked:
    project: Project
    graph: Graph
    snapshot: Snapshot
    lags: LagResolution
    schemas: dict[str, tuple[Column, ...]]     # every input and DT -> its columns
    qualified: Qualified                       # DT -> its query with every column bound and rewritten by
                                               # sql/rules (None: left to Spark)
    analyses: dict[str, QueryAnalysis]
    modes: dict[str, ResolvedMode]
    hashes: dict[str, str] = field(default_factory=dict)   # DT -> definition hash
    frozen: dict[str, FrozenPredicate] = field(default_factory=dict)     # DTs with frozen_where
    backfills: dict[str, BackfillSource] = field(default_factory=dict)   # DTs about to be copied
    customs: dict[str, CustomCheck] = field(default_factory=dict)  # REFRESH USING tables
    # DTs, sources and seeds -> their data tests and expectations (planning/data_tests.py)
    data_tests: dict[str, TableChecks] = field(default_factory=dict)
    unit_tests: dict[str, list[UnitTest]] = field(default_factory=dict)   # DT -> its `unit_tests:`

    @property
    def now(self) -> datetime:
        return self.snapshot.taken_at

    @property
    def effective_lags(self) -> dict[str, int | None]:
        return self.lags.effective_seconds

    @property
    def warnings(self) -> dict[str, list[str]]:
        return dict(self.lags.warnings)

    def delta_sql(self, name: str) -> str | None:
        """The qualified query as Spark SQL, for the change-query compiler."""
        query = self.qualified.get(name)
        return query.sql(dialect="spark") if query is not None else None


class Qualified(Mapping):
    """DT -> its qualified query (None: left to Spark), unpickled from the check cache only when
    a command reads it (dtcli.lazy); `bound(name)` answers without reading the tree."""

    def __init__(self, resolutions: dict[str, Resolved | None]):
        self._resolutions = resolutions

    def __getitem__(self, name: str) -> Any:
        resolved = self._resolutions[name]
        return resolved.query if resolved is not None else None

    def __iter__(self):
        return iter(self._resolutions)

    def __len__(self) -> int:
        return len(self._resolutions)

    def bound(self, name: str) -> bool:
        return self._resolutions.get(name) is not None

    def rewrites(self, name: str) -> tuple:
        """What dt's rules (sql/rules) rewrote in the DT's query: explain lists them."""
        resolved = self._resolutions.get(name)
        return resolved.rewrites if resolved is not None else ()
