"""`dt test` and `dt build`: data tests over whole tables, and a run followed by them.

`dt test` runs every data test of the selected DTs, sources and seeds over each table as it is
now (planning/test_plan.py), in one Spark application, and writes no table: its results go to
target/run_results.json, the terminal and `_dt/test_results` (state/test_results.py). `dt build`
is dbt's build in dt's terms: the tests of the sources and seeds the selection reads first, the
DTs downstream of one whose error-severity test failed held back (UPSTREAM_FAILED, not
refreshed); then the run, whose refreshes audit what they commit (engine/runtime/audit.py); then the
tests of the DTs it refreshed or that it left as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from dtcli.api.runs import RunResult, run, spark_submit
from dtcli.data_tests import CheckResultDict
from dtcli.engine.launch.contract import Launcher
from dtcli.events import Events
from dtcli.model import SUCCEEDED, Plan, RefreshRecord
from dtcli.model.refresh_terms import FAILURE_STATES
from dtcli.planning import selectors
from dtcli.planning.checked import Checked
from dtcli.planning.test_plan import build_test_plan
from dtcli.state import ledger, test_results


@dataclass
class TestResult:
    plan: Plan
    records: list[RefreshRecord] = field(default_factory=list)    # one per table tested
    not_created: list[str] = field(default_factory=list)          # selected DTs with no table yet
    log_path: str | None = None
    interrupted: bool = False
    not_started: str | None = None

    @property
    def failed(self) -> bool:
        """An error-severity test failed (or could not run)."""
        return any(r.state in FAILURE_STATES for r in self.records)

    @property
    def results(self) -> list[CheckResultDict]:
        return [t for r in self.records for t in r.data_tests or ()]


def test(checked: Checked, names: list[str] | None = None, *, on_event: Events = lambda e: None,
         launcher: Launcher = spark_submit, command: str = "test") -> TestResult:
    """Run the selected tables' data tests (`names`: selectors; a source's or seed's name selects
    it; none: everything) over the tables as they are. Their results are kept in the warehouse's
    `_dt/test_results` (one commit, no JVM) for `dt show test-results`."""
    planned = build_test_plan(checked, names)
    result = TestResult(planned.plan, not_created=planned.not_created)
    if not planned.plan.steps:
        return result
    launched = launcher(checked.project, planned.plan, on_event, None)   # it writes no table: no lock
    result.log_path = str(launched.log_path) if launched.log_path else None
    result.interrupted = launched.interrupted
    result.records = list(launched.records)
    done = {r.name for r in result.records}
    lost = [s for s in planned.plan.steps if s.name not in done]
    if lost:
        from dtcli.api.runs import _not_started

        result.not_started = _not_started(launched) if not result.records else None
        why = result.not_started or f"the Spark application exited before this table's tests ran; see {result.log_path}"
        stamp = ledger.now()
        result.records += [ledger.exited(s, planned.plan.run_id, why, stamp) for s in lost]
    test_results.append(checked.project.warehouse, test_results.rows_of(result.records, command))
    return result


@dataclass
class BuildResult:
    sources: TestResult | None          # the sources' and seeds' tests, before the run
    run: RunResult
    tables: TestResult | None           # the DTs' tests, after it
    held: dict[str, str] = field(default_factory=dict)     # DT -> the failed source test holding it back

    @property
    def failed(self) -> bool:
        return self.run.failed or any(t is not None and t.failed for t in (self.sources, self.tables)) \
            or bool(self.held)


def build(checked: Checked, names: list[str] | None = None, *, all_tables: bool = False,
          full_refresh: bool = False, wait: float = 0.0, on_event: Events = lambda e: None,
          on_plan=lambda plan: None, launcher: Launcher = spark_submit) -> BuildResult:
    """Test the sources the selection reads, run the selection (without the DTs a failed source
    test holds back), then test the selected DTs."""
    project, graph = checked.project, checked.graph
    selected = selectors.select(project, graph, names)
    upstream = graph.upstream_closure(selected)
    read = sorted({i for n in upstream for i in project.tables[n].inputs if i in project.sources})
    sources = test(checked, read, on_event=on_event, launcher=launcher, command="build") if read else None
    held: dict[str, str] = {}
    for record in (sources.records if sources else ()):
        if record.state in FAILURE_STATES:
            down = {n for n in selected if record.name in _sources_of(project, graph, n)}
            for name in down:
                held.setdefault(name, f"a data test of {record.name} failed: {record.state_message}")
    rest = sorted(selected - set(held))
    result = run(checked, None if not held and names is None else rest, all_tables=all_tables,
                 full_refresh=full_refresh, wait=wait, on_event=on_event, on_plan=on_plan,
                 launcher=launcher) if rest else RunResult(Plan("", project.name, project.warehouse, "", {}, []))
    stamp = ledger.now()
    for name in graph.ordered(set(held)):
        result.records.append(ledger.held_back(name, result.plan.run_id, held[name], stamp))
    refreshed = {r.name: r.state for r in result.records}
    tested = [n for n in graph.ordered(set(rest)) if refreshed.get(n, SUCCEEDED) == SUCCEEDED]
    checked.snapshot.refresh(project, datetime.now(timezone.utc))      # the DTs the run created
    tables = test(checked, tested, on_event=on_event, launcher=launcher, command="build") if tested else None
    return BuildResult(sources, result, tables, held)


def _sources_of(project, graph, name: str) -> set[str]:
    return {i for n in graph.upstream_closure({name}) for i in project.tables[n].inputs if i in project.sources}
