"""dt's OpenLineage events, built with the openlineage-python client's classes.

Per refresh, one run of the job that is the DT (namespace: `openlineage.namespace`, else
OPENLINEAGE_NAMESPACE, else the project's name; name: the DT's metastore name with `catalog:`,
else its name): START when the engine starts it, then COMPLETE, FAIL (with the error) or ABORT
(a refresh that never started: skipped by a stop, or its upstream failed); a NO_DATA refresh,
which needs no engine, emits START and COMPLETE at the moment it is recorded, so every refresh in
refresh history is a run in the lineage backend. The refreshes' parent is a run of the job named
after the project: the `dt run` / `dt refresh` itself, started when it planned and ended with it.

Run ids are UUIDs derived from dt's own ids (dtcli/api/lineage_ids.py); run_results.json
gives each refresh's as `openlineage_run_id`.

Every text that may quote a setting (SQL, messages) goes through `redact.scrub`, as every other
output of dt does.
"""

from __future__ import annotations

from datetime import datetime, timezone

import attr
from openlineage.client.event_v2 import InputDataset, Job, JobEvent, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    RunFacet,
    documentation_job,
    error_message_run,
    job_type_job,
    lifecycle_state_change_dataset,
    nominal_time_run,
    output_statistics_output_dataset,
    parent_run,
    processing_engine_run,
    sql_job,
)
from openlineage.client.generated.base import JobFacet, OutputDatasetFacet

from dtcli import __version__
from dtcli.api.lineage_datasets import Datasets
from dtcli.api.lineage_ids import refresh_uuid, run_uuid
from dtcli.model import (
    CREATION,
    FAILED,
    INCREMENTAL,
    NO_DATA,
    SKIPPED,
    SUCCEEDED,
    UPSTREAM_FAILED,
    Plan,
    RefreshRecord,
    RefreshStep,
)
from dtcli.planning.checked import Checked
from dtcli.planning.column_lineage import column_lineage
from dtcli.redact import scrub
from dtcli.sql.lineage import ColumnLineage

# Who produced the events, and where dt's own facets are defined (the JSON Schema shipped in
# dtcli/api/lineage_facets/dt.json): URNs, as dt has no public home to point at yet.
PRODUCER = f"urn:dtcli:{__version__}"
FACET_SCHEMA = "urn:dtcli:openlineage:facets:1-0-0:dt.json"
INTEGRATION = "DT"
_END_STATE = {SUCCEEDED: RunState.COMPLETE, FAILED: RunState.FAIL, SKIPPED: RunState.ABORT,
              UPSTREAM_FAILED: RunState.ABORT}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@attr.define
class DtRefreshRunFacet(RunFacet):
    dt_run_id: str
    action: str
    trigger: str
    refresh_mode: str
    strategy: str | None = attr.field(default=None)
    reason: str | None = attr.field(default=None)
    reinit_reason: str | None = attr.field(default=None)
    state: str | None = attr.field(default=None)
    state_code: str | None = attr.field(default=None)
    state_message: str | None = attr.field(default=None)
    data_timestamp: str | None = attr.field(default=None)
    target_lag_sec: int | None = attr.field(default=None)
    inputs_with_changed_data: list[str] = attr.field(factory=list)
    statistics: dict[str, int] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return f"{FACET_SCHEMA}#/$defs/DtRefreshRunFacet"


@attr.define
class DtRunRunFacet(RunFacet):
    dt_run_id: str
    project: str
    data_timestamp: str
    target: str | None = attr.field(default=None)
    refreshes: list[str] = attr.field(factory=list)
    succeeded: int | None = attr.field(default=None)
    failed: int | None = attr.field(default=None)
    skipped: int | None = attr.field(default=None)
    interrupted: bool | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return f"{FACET_SCHEMA}#/$defs/DtRunRunFacet"


class EventBuilder:
    """The events of one project (and one plan, for run events); each DT's column lineage is
    worked out once."""

    def __init__(self, checked: Checked, namespace: str, plan: Plan | None = None):
        self.checked, self.project, self.plan, self.namespace = checked, checked.project, plan, namespace
        self.datasets = Datasets(self.project, checked.schemas, PRODUCER)
        self._lineage: dict[str, ColumnLineage | None] = {}

    # -- jobs ---------------------------------------------------------------------------------

    def job_name(self, name: str) -> str:
        return self.project.qualified_name(name) or name

    def job(self, name: str) -> Job:
        table = self.project.tables[name]
        facets: dict[str, JobFacet] = {
            "jobType": job_type_job.JobTypeJobFacet(processingType="BATCH", integration=INTEGRATION,
                                                    jobType="DYNAMIC_TABLE", producer=PRODUCER),
            "sql": sql_job.SQLJobFacet(query=scrub(table.sql), dialect=self.project.dialect, producer=PRODUCER),
        }
        if table.config.comment:
            facets["documentation"] = documentation_job.DocumentationJobFacet(
                description=scrub(table.config.comment), producer=PRODUCER)
        return Job(namespace=self.namespace, name=self.job_name(name), facets=facets)

    def run_job(self) -> Job:
        return Job(namespace=self.namespace, name=self.project.name, facets={
            "jobType": job_type_job.JobTypeJobFacet(processingType="BATCH", integration=INTEGRATION,
                                                    jobType="RUN", producer=PRODUCER)})

    # -- datasets -----------------------------------------------------------------------------

    def lineage(self, name: str) -> ColumnLineage | None:
        if name not in self._lineage:
            self._lineage[name] = column_lineage(self.checked, name)
        return self._lineage[name]

    def inputs(self, names: list[str], versions: dict[str, int | None]) -> list[InputDataset]:
        out = []
        for name in names:
            namespace, path = self.datasets.of(name)
            out.append(InputDataset(namespace=namespace, name=path,
                                    facets=self.datasets.facets(name, version=versions.get(name))))
        return out

    def output(self, name: str, *, version: int | None = None, record: RefreshRecord | None = None,
               action: str | None = None, trigger: str | None = None) -> OutputDataset:
        """The DT as this refresh writes it; a creation CREATEs it, a recompute (FULL,
        REINITIALIZE) OVERWRITEs it, an incremental refresh changes rows in place."""
        namespace, path = self.datasets.of(name)
        facets = self.datasets.facets(name, version=version)
        lineage = self.lineage(name)
        if lineage is not None:
            facets["columnLineage"] = self.datasets.column_lineage(lineage)
        if action is not None and action != NO_DATA and (action != INCREMENTAL or trigger == CREATION):
            change = (lifecycle_state_change_dataset.LifecycleStateChange.CREATE if trigger == CREATION
                      else lifecycle_state_change_dataset.LifecycleStateChange.OVERWRITE)
            facets["lifecycleStateChange"] = lifecycle_state_change_dataset.LifecycleStateChangeDatasetFacet(
                lifecycleStateChange=change, producer=PRODUCER)
        output_facets: dict[str, OutputDatasetFacet] = {}
        if record is not None and record.state == SUCCEEDED:
            output_facets["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=record.num_inserted_rows + record.num_updated_rows, producer=PRODUCER)
        return OutputDataset(namespace=namespace, name=path, facets=facets, outputFacets=output_facets)

    # -- runs ---------------------------------------------------------------------------------

    def _parent(self) -> parent_run.ParentRunFacet:
        plan = self.plan
        run = run_uuid(plan.run_id)
        return parent_run.ParentRunFacet(
            run=parent_run.Run(runId=run), job=parent_run.Job(namespace=self.namespace, name=self.project.name),
            root=parent_run.Root(run=parent_run.RootRun(runId=run),
                                 job=parent_run.RootJob(namespace=self.namespace, name=self.project.name)),
            producer=PRODUCER)

    def _run_facets(self, step: RefreshStep, record: RefreshRecord | None) -> dict[str, RunFacet]:
        plan = self.plan
        facet = DtRefreshRunFacet(
            dt_run_id=plan.run_id, action=record.refresh_action if record else step.action,
            trigger=step.trigger, refresh_mode=step.refresh_mode,
            strategy=record.refresh_strategy if record else None,
            reason=_text(record.refresh_action_reason if record else step.options.estimate.action_reason),
            reinit_reason=_text(record.reinit_reason if record else step.reinit_reason),
            state=record.state if record else None, state_code=record.state_code if record else None,
            state_message=_text(record.state_message) if record else None,
            data_timestamp=(record.data_timestamp if record else None) or plan.data_timestamp,
            target_lag_sec=step.options.lag.target_lag_sec,
            inputs_with_changed_data=list(record.inputs_with_changed_data) if record else [],
            statistics=({**record.statistics, "num_updated_rows": record.num_updated_rows} if record else {}),
            producer=PRODUCER)
        facets: dict[str, RunFacet] = {
            "parent": self._parent(),
            "dt_refresh": facet,
            "nominalTime": nominal_time_run.NominalTimeRunFacet(nominalStartTime=plan.data_timestamp,
                                                               producer=PRODUCER),
            "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
                version=_spark_version(), name="spark", openlineageAdapterVersion=__version__, producer=PRODUCER),
        }
        if record is not None and record.state == FAILED:
            facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
                message=_text(record.state_message) or record.state_code or "the refresh failed",
                programmingLanguage="SQL", producer=PRODUCER)
        return facets

    def refresh_started(self, step: RefreshStep, at: str | None = None,
                        produced: dict[str, int] | None = None) -> RunEvent:
        """`produced`: the versions upstream DTs committed earlier in the run (what this one reads)."""
        versions = {i.name: i.version if i.version is not None else (produced or {}).get(i.name)
                    for i in step.inputs}
        version = self._table_version(step.name) if step.action == NO_DATA else None
        return RunEvent(eventType=RunState.START, eventTime=at or _now(),
                        run=Run(runId=refresh_uuid(self.plan.run_id, step.name),
                                facets=self._run_facets(step, None)),
                        job=self.job(step.name), inputs=self.inputs([i.name for i in step.inputs], versions),
                        outputs=[self.output(step.name, version=version, action=step.action, trigger=step.trigger)],
                        producer=PRODUCER)

    def refresh_ended(self, step: RefreshStep, record: RefreshRecord) -> RunEvent:
        """COMPLETE, FAIL or ABORT, with what the refresh read (the versions it recorded) and wrote."""
        versions: dict[str, int | None] = {i.name: i.version for i in step.inputs}
        versions.update(record.source_versions)
        version = record.table_version
        if version is None and record.state == SUCCEEDED:      # NO_DATA: the table as it is
            version = self._table_version(step.name)
        return RunEvent(eventType=_END_STATE.get(record.state, RunState.OTHER),
                        eventTime=record.refresh_end_time or _now(),
                        run=Run(runId=refresh_uuid(self.plan.run_id, step.name),
                                facets=self._run_facets(step, record)),
                        job=self.job(step.name), inputs=self.inputs([i.name for i in step.inputs], versions),
                        outputs=[self.output(step.name, version=version, record=record, action=record.refresh_action,
                                             trigger=step.trigger)],
                        producer=PRODUCER)

    def run_event(self, state: RunState, *, command: str | None = None, records: list[RefreshRecord] = (),
                  interrupted: bool | None = None) -> RunEvent:
        """The dt run itself: START once it planned, COMPLETE / FAIL / ABORT when it ends."""
        plan = self.plan
        ended = state != RunState.START
        facet = DtRunRunFacet(
            dt_run_id=plan.run_id, project=self.project.name, data_timestamp=plan.data_timestamp,
            target=self.project.target, refreshes=_refreshes(plan, records),
            succeeded=sum(r.state == SUCCEEDED for r in records) if ended else None,
            failed=sum(r.failed for r in records) if ended else None,
            skipped=sum(r.state == SKIPPED for r in records) if ended else None,
            interrupted=interrupted, producer=PRODUCER)
        return RunEvent(eventType=state, eventTime=_now(),
                        run=Run(runId=run_uuid(plan.run_id), facets={
                            "dt_run": facet,
                            "nominalTime": nominal_time_run.NominalTimeRunFacet(nominalStartTime=plan.data_timestamp,
                                                                               producer=PRODUCER)}),
                        job=self.run_job(), producer=PRODUCER)

    def job_event(self, name: str) -> JobEvent:
        """A DT as a job with its inputs and output, no run (`dt docs generate --openlineage`):
        the project's lineage for a backend before anything ran."""
        table = self.project.tables[name]
        return JobEvent(eventTime=_now(), job=self.job(name), inputs=self.inputs(list(table.inputs), {}),
                        outputs=[self.output(name)], producer=PRODUCER)

    def _table_version(self, name: str) -> int | None:
        info = self.checked.snapshot.tables.get(name)
        return info.version if info is not None else None


def _text(value: str | None) -> str | None:
    return scrub(value) if value else value


def _spark_version() -> str:
    """pyspark's version, read from its metadata (importing pyspark would start nothing, but the
    dt process has no need of it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyspark")
    except PackageNotFoundError:
        return "unknown"


def _refreshes(plan, records: list[RefreshRecord]) -> list[str]:
    """The run's refreshes: its steps, but a watch pass's spare (Plan.spare) only once it ran."""
    ran = {r.name for r in records}
    return [s.name for s in plan.steps if s.name not in plan.spare or s.name in ran]
