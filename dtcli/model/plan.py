"""A plan: the refresh steps of one run, each with its typed options, and the catalog work after
them. JSON-serialisable: the `dt` process writes it and the spark-submit driver runs it."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from dtcli.config_keys import ColumnDecl
from dtcli.data_tests import AuditSpec
from dtcli.json_types import JsonObject
from dtcli.model.frontier import Frontier
from dtcli.model.refresh_terms import NO_DATA
from dtcli.model.strategy_specs import CustomSpec, KeptAggregate, TopNSpec, TotalsSpec
from dtcli.plan_parts import (
    Backfill,
    BackfillCopy,
    Estimate,
    LagTarget,
    Layout,
    Regions,
    Registration,
    SourceLookup,
    Unregistration,
)


@dataclass
class StepInput:
    name: str
    kind: str                     # source | dynamic_table | internal (a DT's kept aggregate)
    path: str
    version: int | None           # pinned version; None for a DT refreshed earlier in the same run
    table_id: str | None = None   # its Delta table id at that version (None: not known yet)


@dataclass(frozen=True)
class StepOptions:
    """What a step carries beyond its action, for the engine, the history and the renderers,
    built whole by the planner; each default is the one a table without that config gets."""

    previous_rows: int | None = 0             # rows of the DT before this refresh (None: unknown)
    source_ids: dict[str, str] | None = None  # Delta table id of each source (replaced sources)
    file: str | None = None                   # the table file (error messages)
    delta_sql: str | None = None              # the query with columns bound to their inputs
    # the columns of each input an incremental refresh reads (and checks); None: all
    read_columns: dict[str, list[str]] | None = None
    read_by_tables: bool = False              # another DT of the project reads this one
    columns: list[ColumnDecl] | None = None   # `columns:` config (names and types)
    # the output names dt gave the query's unaliased expressions (as Spark names them,
    # sql/spark_names.py): the result's columns are renamed to them by position
    names: list[str] | None = None
    layout: Layout = field(default_factory=Layout)
    regions: Regions = field(default_factory=Regions)
    backfill: Backfill = field(default_factory=Backfill)
    estimate: Estimate = field(default_factory=Estimate)
    lag: LagTarget = field(default_factory=LagTarget)
    custom: CustomSpec | None = None          # custom incremental tables only
    audit: AuditSpec | None = None            # what the refresh checks before it commits
    # DTs of the plan its checks read (a relationships target, a singular test's other tables):
    # it starts after their refreshes finish, reading what they commit, without depending on them
    after: list[str] | None = None
    top_n: TopNSpec | None = None             # an incremental top-N (strategies/top_n.py)
    # an aggregate over running totals (strategies/aggregate_totals.py)
    totals: TotalsSpec | None = None
    # an internal table of running totals: maintained from its own rows, GROUP BY or not
    running_totals: bool = False
    # aggregates inside the query kept as running totals (engine/runtime/kept_aggregates.py)
    kept: list[KeptAggregate] | None = None

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> StepOptions:
        values = dict(raw or {})
        backfill = values.get("backfill") or {}
        values["layout"] = Layout(**values.get("layout") or {})
        values["regions"] = Regions(**values.get("regions") or {})
        values["backfill"] = Backfill(spec=backfill.get("spec"),
                                      copy=BackfillCopy(**backfill["copy"]) if backfill.get("copy") else None)
        values["estimate"] = Estimate(**values.get("estimate") or {})
        values["lag"] = LagTarget(**values.get("lag") or {})
        values["custom"] = CustomSpec.from_dict(values.get("custom"))
        values["audit"] = AuditSpec.from_dict(values.get("audit"))
        values["top_n"] = TopNSpec.from_dict(values.get("top_n"))
        values["totals"] = TotalsSpec.from_dict(values.get("totals"))
        values["kept"] = [KeptAggregate.from_dict(k) for k in values["kept"]] if values.get("kept") else None
        return cls(**values)


@dataclass
class RefreshStep:
    """One DT's refresh as planned: data, so `--dry-run` can print it and the driver run it."""

    name: str
    path: str
    action: str                   # NO_DATA | INCREMENTAL | FULL | REINITIALIZE
    trigger: str                  # CREATION | SCHEDULED | MANUAL
    sql: str                      # Spark SQL, table names as logical names (bound as views)
    inputs: list[StepInput]
    definition_hash: str
    refresh_mode: str             # resolved: INCREMENTAL | FULL
    refresh_mode_reason: str | None = None
    reinit_reason: str | None = None
    previous: Frontier | None = None         # frontier of the DT before this refresh
    upstream: list[str] = field(default_factory=list)   # DTs of this plan it depends on
    options: StepOptions = field(default_factory=StepOptions)


@dataclass
class Plan:
    run_id: str
    project: str
    warehouse: str
    data_timestamp: str           # ISO-8601 UTC: the snapshot moment every step reflects
    source_versions: dict[str, int]
    steps: list[RefreshStep]
    threads: int = 1              # refreshes run side by side (each once its upstream finished)
    # catalog work done after the refreshes (see dtcli/planning/catalog.py)
    registrations: list[Registration] = field(default_factory=list)
    unregistrations: list[Unregistration] = field(default_factory=list)
    # sources declared by table name to look up in the metastore first
    resolutions: list[SourceLookup] = field(default_factory=list)
    # steps of a watch pass started, in this order, only while a step not listed here runs and a
    # core would sit idle; one never started leaves no record (planning/pass_budget.py)
    spare: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        raw = json.loads(text)
        steps = []
        for s in raw.pop("steps"):
            s["inputs"] = [StepInput(**i) for i in s["inputs"]]
            s["previous"] = Frontier.from_dict(s.get("previous"))
            s["options"] = StepOptions.from_dict(s.get("options"))
            steps.append(RefreshStep(**s))
        raw["registrations"] = [Registration(**r) for r in raw.get("registrations") or []]
        raw["unregistrations"] = [Unregistration(**r) for r in raw.get("unregistrations") or []]
        raw["resolutions"] = [SourceLookup(**r) for r in raw.get("resolutions") or []]
        return cls(steps=steps, **raw)

    @property
    def spark_steps(self) -> list[RefreshStep]:
        return [s for s in self.steps if s.action != NO_DATA]

    @property
    def needs_spark(self) -> bool:
        """Refreshes to run, or tables to (un)register in the metastore."""
        return bool(self.spark_steps or self.registrations or self.unregistrations or self.resolutions)
