"""What every kind of dynamic table answers, and the values it answers with.

A query table's rows follow from its query, so dt derives its columns, its refresh mode and
its change; a custom incremental table (REFRESH USING) declares its columns and applies the
changes of its CHANGES() inputs by its own statement, so its history cannot be recomputed.
Every place where the two differ asks the table's kind (registry.kind_of) instead of testing
which one it is. The engine needs no kind: it runs the strategy of the step's refresh mode
(CUSTOM_INCREMENTAL is the custom kind's, engine/runtime/strategies)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dtcli.artifacts.explain import CustomSection
from dtcli.data_tests import Expectation
from dtcli.model import Column, CustomSpec, Project, TableDef
from dtcli.planning.check_cache import CheckCache
from dtcli.planning.checked_project import Checked
from dtcli.planning.custom import CustomCheck
from dtcli.planning.resolved_mode import ModeScope, ResolvedMode
from dtcli.planning.snapshot import Snapshot
from dtcli.sql.analysis import QueryAnalysis
from dtcli.sql.frozen import FrozenPredicate
from dtcli.sql.lineage import ColumnLineage
from dtcli.sql.resolve import Resolved
from dtcli.sql.table_statement import TableStatement
from dtcli.unit_tests import UnitTest


@dataclass
class CheckScope:
    """What checking one DT reads of the project checked so far (planning/checked.py)."""

    project: Project
    snapshot: Snapshot
    cache: CheckCache
    hashes: dict[str, str]                     # DT -> its definition hash
    schemas: dict[str, tuple[Column, ...]]     # inputs and the DTs before it -> their columns
    unsure: set[str]                           # DTs whose column names only Spark will know


@dataclass
class TableCheck:
    """One DT, checked: its columns and analysis, and what its kind found on the way."""

    columns: tuple[Column, ...]
    analysis: QueryAnalysis
    resolved: Resolved | None = None           # its query with every column bound (None: left to Spark)
    cache_key: str | None = None               # the resolution's check-cache key (the compiler's verdict's too)
    names_unsure: bool = False                 # only Spark will know its column names for sure
    predicate: FrozenPredicate | None = None   # its checked `frozen_where`
    custom: CustomCheck | None = None          # a custom table's statement, checked


class TableKind(Protocol):
    """One kind of dynamic table: how its file is read, checked, refreshed and explained."""

    name: str                 # TableDef.kind
    # its rows cannot be recomputed from its inputs: its own rule (`own_action`) decides each
    # refresh, never dt's rules for a changed definition, frozen rows or --full-refresh
    keeps_history: bool

    def read(self, sql: str, name: str, file: str, dialect: str, known: dict[str, str], *,
             quote: bool) -> TableStatement:
        """The table file's statement, inputs resolved to `known` project names."""

    def check(self, scope: CheckScope, table: TableDef) -> TableCheck:
        """Its config, columns and statement checked against the project, before Spark runs."""

    def check_expectation(self, table: TableDef, expectation: Expectation) -> None:
        """An error for an expectation this kind of table cannot honour."""

    def check_unit_tests(self, table: TableDef, cases: list[UnitTest]) -> None:
        """An error when this kind of table cannot be unit tested."""

    def mode(self, scope: ModeScope, table: TableDef) -> ResolvedMode:
        """Its refresh mode, from its config and what its statement allows."""

    def redefined_now(self, checked: Checked, name: str) -> bool:
        """Whether a changed definition is applied at the next run, whatever the schedule."""

    def changed_inputs(self, table: TableDef, changed: list[str]) -> list[str]:
        """Of the inputs that moved since its frontier, those that make it refresh."""

    def own_action(self, checked: Checked, name: str, changed: list[str],
                   full_refresh: bool) -> tuple[str, str | None]:
        """The refresh action and its reason, for a kind that `keeps_history`."""

    def custom_spec(self, checked: Checked, name: str) -> CustomSpec | None:
        """The statement the engine runs for it (None: the engine runs its query)."""

    def given_names(self, checked: Checked, name: str) -> list[str] | None:
        """The names dt gives the result's columns (None: as the statement names them)."""

    def write_order(self, checked: Checked, name: str) -> list[str] | None:
        """The columns a recompute writes its rows in order of (None: any order)."""

    def explain(self, checked: Checked, name: str) -> tuple[CustomSection | None, list[str]]:
        """explain's section of this kind (None: none), and the warnings a user can act on."""

    def internal_tables(self, checked: Checked, name: str) -> list[dict]:
        """The internal tables it keeps, as explain and `show --internal` list them."""

    def column_lineage(self, checked: Checked, name: str, names: list[str]) -> ColumnLineage | None:
        """Each of its columns' input columns (`names`: its columns); None: not known before Spark."""
