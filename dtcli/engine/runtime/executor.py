"""Execute a plan with a given SparkSession: in the spark-submit driver, in tests, in notebooks.

Steps run in DAG order. Each input is bound as a temporary view at its pinned version (DTs
refreshed earlier in the run at the version this run committed), so every DT of a run reads one
snapshot. A failed step fails its downstream steps as UPSTREAM_FAILED and leaves every other
step alone; each finished step is appended to the refresh history at once.
"""

from __future__ import annotations

from collections.abc import Callable

from dtcli import events
from dtcli.engine.runtime import audit, commit, deletion_vectors, kept_aggregates, listed
from dtcli.engine.runtime.change_cache import ChangeCache
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.engine.runtime.pinned import PinnedReads, read_at
from dtcli.engine.runtime.progress import job_group
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS, at_file, condition_of, error_condition, error_message
from dtcli.engine.runtime.strategies import kind_of, strategy_for
from dtcli.model import (
    FAILED,
    FULL,
    REINITIALIZE,
    SKIPPED,
    SUCCEEDED,
    UPSTREAM_FAILED,
    Frontier,
    Plan,
    RefreshRecord,
    RefreshStep,
)
from dtcli.model.refresh_terms import DT_PROCESS_GONE, TEST
from dtcli.state import ledger


def bind_inputs(spark, step: RefreshStep, produced: dict[str, int],
                pinned: PinnedReads | None = None) -> dict[str, int]:
    """Each input as a temporary view of `spark` at its pinned version (through the run's
    shared reads, `pinned`, when given)."""
    versions: dict[str, int] = {}
    for inp in step.inputs:
        version = produced.get(inp.name, inp.version)
        if version is None:
            raise RuntimeError(f"input {inp.name} has no version to read (was it refreshed?)")
        read_at(pinned, spark, inp.path, version, table_id=inp.table_id).createOrReplaceTempView(inp.name)
        versions[inp.name] = int(version)
    return versions


def unbind_inputs(spark, step: RefreshStep) -> None:
    """Drop the step's input views; never raises (it runs after a failure too, whose error is
    the one to report)."""
    for inp in step.inputs:
        try:
            spark.catalog.dropTempView(inp.name)
        except SPARK_ERRORS:
            pass


def application_id(spark) -> str | None:
    try:
        return spark.sparkContext.applicationId
    except SPARK_ERRORS:
        return None


def _align_deletion_vectors(spark, step: RefreshStep, result: RefreshResult) -> None:
    """After the refresh committed: write the DT as its `deletion_vectors` setting now says.
    A failure here leaves the refresh committed (its rows are right) and says so."""
    want = bool(step.options.layout.deletion_vectors)
    try:
        deletion_vectors.align(spark, step.path, want)
        result.table_version = commit.last_commit(step.path)["version"]
    except Exception as exc:    # broad: after the commit, no failure may turn the refresh into a FAILED one
        note = f"refreshed, but turning deletion vectors {'on' if want else 'off'} failed: {error_message(exc)}"
        result.message = "; ".join(filter(None, [result.message, note]))


def _prune_internal(plan: Plan, step: RefreshStep) -> None:
    """After a recompute committed: the internal tables an earlier definition of the DT kept and
    this one does not are deleted (nothing reads them any more). Never fails the refresh."""
    from dtcli.state import internal

    spec, totals = step.options.top_n, step.options.totals
    keep = ({spec.state.role} if spec and spec.state else set()) | ({totals.state.role} if totals else set()) \
        | {k.state.role for k in step.options.kept or []}
    try:
        internal.prune(plan.warehouse, step.name, keep)
    except OSError:
        pass


def execute_plan(spark, plan: Plan, emit: events.Events = lambda event: None,
                 write_history: bool = True,
                 should_stop: Callable[[], bool | str] = lambda: False,
                 before_write: Callable[[], object] = lambda: None) -> list[RefreshRecord]:
    """Run the plan's Spark steps, up to `plan.threads` at a time (each in a session of its own:
    its input views and settings are its own), a step once every upstream step of the plan has
    finished. The plan's spares (`Plan.spare`) start last, each only while a step that is not
    one still runs and a core would be idle (`spare_slots`); those not started by the time every
    other step finished are dropped without a record. `should_stop` is asked before each
    refresh starts: True for a user's Ctrl-C (the rest is SKIPPED), or why dt is gone (the rest
    is FAILED with that reason). Records are written to the history and announced
    as each refresh finishes; they are returned in plan order."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    steps = plan.spark_steps
    run = _Run(spark, plan, emit)
    threads = max(1, min(int(plan.threads or 1), len(steps) or 1))
    emit(events.PlanStarted([s.name for s in steps], run.app, plan.run_id))
    spare = {name: i for i, name in enumerate(plan.spare)}
    pending, running, finished = _start_order(steps, spare), {}, set()
    slots = spare_slots(threads)
    stopping: bool | str = False
    if steps or plan.resolutions:
        from dtcli.engine.runtime.catalog import resolve_names, unreachable

        run.unavailable = unreachable(spark)
        if plan.resolutions:
            resolve_names(spark, plan, emit, run.unavailable)
    in_plan = {s.name for s in steps}

    def finish(step: RefreshStep, record: RefreshRecord) -> None:
        if record.state != SUCCEEDED:
            run.failed.add(step.name)
        if write_history and step.action != TEST:     # `dt test` reports; it refreshes nothing
            before_write()      # the driver exits here if its JVM (holding the lock) is gone
            ledger.append(plan.warehouse, [record])
        run.records[step.name] = record
        finished.add(step.name)
        emit(events.RefreshFinished(record))

    try:
        free = side_sessions(spark, threads) if threads > 1 else [spark]
        session_of: dict = {}
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dt-refresh") as pool:
            while pending or running:
                for step in list(pending):
                    if len(running) >= threads:
                        break
                    if any(u in in_plan and u not in finished for u in [*step.upstream, *(step.options.after or ())]):
                        continue        # an upstream step still runs: this one reads what it commits
                    if step.name in spare and not _room_for_spare(pending, running, spare, slots):
                        continue
                    pending.remove(step)
                    stopping = stopping or should_stop()
                    record = run.not_run(step, stopping)
                    if record is not None and step.name in spare:
                        continue        # a spare that cannot run now is simply due in the next pass
                    if record is not None:
                        finish(step, record)
                        continue
                    emit(events.RefreshStarted(step.name, step.action))
                    session = free.pop()
                    future = pool.submit(run.refresh, session, step)
                    running[future], session_of[future] = step, session
                if not running:
                    if all(s.name in spare for s in pending):
                        pending.clear()     # every other step finished: the pass ends here
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    free.append(session_of.pop(future))
                    finish(running.pop(future), future.result())
    finally:
        run.pinned.clear()      # the snapshots and rows the run's reads held go with it
        run.changes.clear()     # and the changes it kept on the driver
        listed.forget()         # and the file lists of the tables it wrote
    records = [run.records[s.name] for s in steps if s.name in run.records]
    if plan.registrations or plan.unregistrations:
        from dtcli.engine.runtime.catalog import publish

        publish(spark, plan, records, emit)     # after the commits: never undoes one
    return records


def _start_order(steps: list[RefreshStep], spare: dict[str, int]) -> list[RefreshStep]:
    """The steps in plan order, the spares after them in their own order."""
    return [s for s in steps if s.name not in spare] + sorted((s for s in steps if s.name in spare),
                                                              key=lambda s: spare[s.name])


def spare_slots(threads: int) -> int:
    """How many refreshes may run before a spare is let in: the threads, or the driver's cores
    when fewer. A thread without a refresh is not an idle machine: on 2 cores, two refreshes
    already keep both busy, and a third only slows the two (measured on the 22 TPC-H DTs at
    SF0.1: spares on every free thread made the passes longer, not the lags shorter)."""
    import os

    return max(1, min(threads, os.cpu_count() or 1))


def _room_for_spare(pending: list[RefreshStep], running: dict, spare: dict[str, int], slots: int) -> bool:
    """Whether a spare may start now: only while a step that is not a spare still runs (a spare
    never holds a pass open by itself), and in a slot no such step is left to take once its
    upstream finishes (a spare never delays a step that fitted the pass)."""
    if not any(step.name not in spare for step in running.values()):
        return False
    waiting = sum(step.name not in spare for step in pending)
    return len(running) + waiting < slots


def side_sessions(spark, count: int) -> list:
    """Sessions of their own (temporary views, job group) for refreshes that run side by side:
    made once per application and reused by every run it executes. Sessions made per refresh
    stay reachable inside Spark after their refresh (measured: 90 live sessions after 80
    refreshes of two DTs in one application, 37 with these), which a long `--watch`
    application or a run of a thousand refreshes would keep for good."""
    made = getattr(spark, "_dt_side_sessions", None)
    if made is None:
        made = []
        spark._dt_side_sessions = made
    while len(made) < count:
        made.append(spark.newSession())
    return list(made[:count])


class _Run:
    """What the steps of one plan share: the versions the run committed, the failures."""

    def __init__(self, spark, plan: Plan, emit: events.Events):
        from threading import Lock

        self.plan, self.emit = plan, emit
        self.app = application_id(spark)
        self.query_id = f"{self.app}/{plan.run_id}" if self.app else plan.run_id
        self.produced: dict[str, int] = {}
        self.failed: set[str] = set()
        self.records: dict[str, RefreshRecord] = {}
        self.lock = Lock()
        self.unavailable: str | None = None     # why no refresh can start (the metastore is down)
        # inputs read once per (table, version) for every step
        self.pinned = PinnedReads(written=frozenset(s.path for s in plan.spark_steps))
        self.changes = ChangeCache()    # and their changes once per (table, versions)

    def not_run(self, step: RefreshStep, stopping: bool | str) -> RefreshRecord | None:
        """The record of a refresh that does not start (the run stops, an upstream failed)."""
        start = ledger.now()
        blocked = [u for u in step.upstream if u in self.failed]
        if self.unavailable:
            return ledger.refreshed(self.plan, step, FAILED, start, message=self.unavailable,
                                    code=ledger.METASTORE_UNREACHABLE)
        if isinstance(stopping, str):   # dt is gone: nobody will record this refresh but us
            return ledger.refreshed(self.plan, step, FAILED, start, message=stopping, code=DT_PROCESS_GONE)
        if stopping:                    # its downstream must not run on a stale input either
            return ledger.refreshed(self.plan, step, SKIPPED, start, message="the run was stopped before this refresh")
        if blocked:
            return ledger.refreshed(self.plan, step, UPSTREAM_FAILED, start,
                           message=f"upstream dynamic table {blocked[0]} failed in this run")
        return None

    def refresh(self, spark, step: RefreshStep) -> RefreshRecord:
        """One refresh, in `spark` (the run's session, or one of its own when steps run side by
        side), its Spark jobs under the step's job group (progress counts them by it)."""
        plan, start = self.plan, ledger.now()
        versions: dict[str, int] = {}
        spark.sparkContext.setJobGroup(job_group(plan.run_id, step.name), f"dt refresh {step.name}")
        try:
            if step.action == TEST:
                return self._test(spark, step, start)
            with self.lock:
                produced = dict(self.produced)
            versions = bind_inputs(spark, step, produced, self.pinned)
            frontier = Frontier(versions, step.definition_hash, plan.data_timestamp, plan.run_id,
                                step.action, step.refresh_mode, step.options.regions.where,
                                step.options.backfill.spec,
                                source_ids=step.options.source_ids)
            ctx = RefreshContext(spark, plan, step, versions, frontier, self.pinned, self.changes)
            # the strategy's kind (engine/strategies kind_of); its commit is audited by the DT's
            # data tests and expectations first (engine/runtime/audit.py)
            with audit.auditing(ctx) as auditor:
                result = kept_aggregates.refresh(ctx, strategy_for(kind_of(step)))
                tests = [r.to_dict() for r in auditor.outcome] if auditor else None
            if step.options.layout.comment_outdated and not result.table_replaced:
                commit.set_comment(spark, step.path, step.options.layout.comment)
                result.table_version = commit.last_commit(step.path)["version"]
            if step.options.layout.deletion_vectors_outdated:
                _align_deletion_vectors(spark, step, result)
            if step.action in (FULL, REINITIALIZE) or result.fallback_action:
                _prune_internal(plan, step)
            if result.table_version is not None:
                with self.lock:
                    self.produced[step.name] = result.table_version
            record = ledger.refreshed(plan, step, SUCCEEDED, start, result, versions=versions,
                             query_id=self.query_id)
            record.data_tests = tests
            return record
        except audit.AuditFailed as exc:      # nothing was committed: the DT is as it was
            record = ledger.refreshed(plan, step, FAILED, start, versions=versions, message=str(exc),
                             code=exc.getCondition(), query_id=self.query_id)
            record.data_tests = [r.to_dict() for r in exc.results]
            return record
        except Exception as exc:      # broad: the step's boundary, any failure is its FAILED record
            message = error_message(exc)
            return ledger.refreshed(plan, step, FAILED, start, versions=versions, message=at_file(step, message),
                           code=condition_of(message) or error_condition(exc), query_id=self.query_id)
        finally:
            unbind_inputs(spark, step)
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)

    def _test(self, spark, step: RefreshStep, start: str) -> RefreshRecord:
        """A `dt test` step: the table's data tests over all of it (engine/runtime/table_tests.py)."""
        from dtcli.data_tests import TEST_FAILED
        from dtcli.engine.runtime.table_tests import test_table

        results, failed = test_table(spark, step)
        record = ledger.refreshed(self.plan, step, FAILED if failed else SUCCEEDED, start, message=failed,
                         code=TEST_FAILED if failed else None, query_id=self.query_id)
        record.data_tests = [r.to_dict() for r in results]
        return record
