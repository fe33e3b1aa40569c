"""Plain data shared by every layer: project definitions, plans and refresh records.

Nothing here imports Spark; plans and records are JSON-serialisable so that the CLI process
and the spark-submit driver exchange them as files and lines. Each concept has its module:
refresh_terms (actions, triggers, states), definitions (a project as loaded), frontier,
strategy_specs and plan (what a run does), refresh_record (what it did).
"""

# A face kept on purpose: ~150 modules and tests across every layer import these names from
# `dtcli.model` (and branches in flight do too); names fewer than four import are imported from
# their own module instead.
from dtcli.model.definitions import Column, LineageSpec, Project, SourceDef, TableDef, join_path
from dtcli.model.frontier import Frontier
from dtcli.model.plan import Plan, RefreshStep, StepOptions
from dtcli.model.refresh_record import RefreshRecord
from dtcli.model.refresh_terms import (
    ADAPTIVE,
    CREATION,
    CUSTOM_INCREMENTAL,
    FAILED,
    FULL,
    INCREMENTAL,
    MANUAL,
    NO_DATA,
    REINITIALIZE,
    SCHEDULED,
    SKIPPED,
    SUCCEEDED,
    UPSTREAM_FAILED,
)
from dtcli.model.strategy_specs import CustomSpec, InternalTable, KeptAggregate, TopNSpec, TotalsSpec

__all__ = [
    "ADAPTIVE", "CREATION", "CUSTOM_INCREMENTAL", "FAILED", "FULL", "INCREMENTAL", "MANUAL", "NO_DATA",
    "REINITIALIZE", "SCHEDULED", "SKIPPED", "SUCCEEDED", "UPSTREAM_FAILED",
    "Column", "CustomSpec", "Frontier", "InternalTable", "KeptAggregate", "LineageSpec", "Plan", "Project",
    "RefreshRecord", "RefreshStep", "SourceDef", "StepOptions", "TableDef", "TopNSpec", "TotalsSpec", "join_path",
]
