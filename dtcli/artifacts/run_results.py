"""`target/run_results.json`, typed: what one `dt run` / `refresh` / `build` / `test` / `test --unit`
did, shaped after dbt's run_results.json (metadata, results with timing and a message, elapsed
time, args) with dt's names for what a refresh is. Built by dtcli/api/run_results.py; the key
names are the ones CI jobs read, so a field here is never renamed without a new schema_version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dtcli.artifacts.typed_json import JSON, optional_field
from dtcli.artifacts.versions import ArtifactKind

SCHEMA_VERSION = 1


@dataclass
class Metadata:
    """Which dt wrote the file, when, and for which command, project and target."""

    dt_version: str
    schema_version: int
    generated_at: str
    invocation_id: str
    command: str                       # run, refresh, build, test, "test --unit"
    project: str
    project_version: str | None
    target: str | None


@dataclass
class Timing:
    name: str                          # refresh, or execute (a test)
    started_at: str | None
    completed_at: str | None


@dataclass
class Statistics:
    num_inserted_rows: int
    num_deleted_rows: int
    num_copied_rows: int


@dataclass
class CheckResult:
    """One data test's or expectation's result, as dbt spells a test's (status pass | fail | warn
    | error), with a few of the failing rows it found (`samples`)."""

    unique_id: str | None
    name: str | None
    status: str | None
    failures: int | None
    message: str | None
    kind: str | None                   # test | expectation
    test: str | None                   # not_null, unique, ..., singular, expectation
    table: str | None
    column: str | None
    action: str | None                 # fail | warn | drop
    samples: list[dict[str, JSON]] | None


@dataclass
class DataTestResult(CheckResult):
    """A result of `dt test` (and of `dt build`'s tests): a check with its table's timing. A
    table whose tests did not run at all is one `error` result without unique_id."""

    timing: list[Timing] = field(default_factory=list)


@dataclass
class RefreshResult:
    """One DT the run planned: the refresh's outcome, as `dt show refresh-history` names it."""

    name: str
    state: str
    refresh_action: str
    refresh_trigger: str
    timing: list[Timing]
    execution_time: float | None
    statistics: Statistics
    state_message: str | None
    state_code: str | None
    reinit_reason: str | None
    data_timestamp: str | None
    query_id: str | None
    openlineage_run_id: str | None
    table_version: int | None
    inputs_with_changed_data: list[str]
    source_versions: dict[str, int]
    target_lag_sec: float | None
    completion_target: str | None
    data_tests: list[CheckResult]


@dataclass
class RunSummary:
    succeeded: int
    failed: int
    skipped: int
    not_refreshed: int
    data_tests: dict[str, int]         # status -> checks


@dataclass
class NotRefreshed:
    name: str
    reason: str


@dataclass
class Suspension:
    """A DT this run suspended (its scheduled refreshes failed five times in a row)."""

    name: str
    reason: str | None
    downstream: list[str]


@dataclass
class RunResults:
    """`dt run`, `dt refresh` and `dt build`: one result per DT the run planned (NO_DATA ones
    included), in the order they finished; `dt build` adds its tests' results (`data_tests`)."""

    metadata: Metadata
    run_id: str
    data_timestamp: str | None
    success: bool
    interrupted: bool
    elapsed_time: float
    args: dict[str, JSON]
    results: list[RefreshResult]
    summary: RunSummary
    not_refreshed: list[NotRefreshed]
    suspended: list[Suspension]
    spark_log: str | None
    data_tests: list[DataTestResult] | None = optional_field()


@dataclass
class DataTestSummary:
    data_tests: dict[str, int]


@dataclass
class DataTestResults:
    """`dt test`: one result per data test, DTs not created yet named in `not_created`."""

    metadata: Metadata
    run_id: str
    success: bool
    interrupted: bool
    elapsed_time: float
    args: dict[str, JSON]
    results: list[DataTestResult]
    summary: DataTestSummary
    not_created: list[str]
    spark_log: str | None


@dataclass
class UnitTestResult:
    """One unit test case (`unique_id` unit_test.<project>.<table>.<name>): the rows expected
    and found, by column name."""

    unique_id: str
    name: str
    table: str
    status: str                        # pass | fail | error
    failures: int
    message: str | None
    given_after: bool
    refresh_action: str | None
    columns: list[str]
    expected: list[dict[str, JSON]]
    actual: list[dict[str, JSON]]
    missing: list[dict[str, JSON]]
    unexpected: list[dict[str, JSON]]


@dataclass
class UnitSummary:
    unit_tests: dict[str, int]


@dataclass
class UnitTestResults:
    """`dt test --unit`: one result per unit test case."""

    metadata: Metadata
    run_id: str
    success: bool
    interrupted: bool
    elapsed_time: float
    args: dict[str, JSON]
    results: list[UnitTestResult]
    summary: UnitSummary


Document = RunResults | DataTestResults | UnitTestResults


def _type_of(doc: dict) -> type:
    command = (doc.get("metadata") or {}).get("command")
    return {"test": DataTestResults, "test --unit": UnitTestResults}.get(command, RunResults)


RUN_RESULTS = ArtifactKind(
    name="run_results", version=SCHEMA_VERSION, root=Document, version_at=("metadata", "schema_version"),
    description="target/run_results.json: what one dt run, refresh, build, test or test --unit did "
                "(metadata.command says which); see README.md, In CI, and docs/configuration.md.",
    type_of=_type_of)
