"""Killing `dt` never leaves a writer behind (real dt processes, real spark-submit, real Delta).

SIGKILL of dt's process group mid-run: its Spark application (in a session of its own) keeps
the warehouse lock it inherited, finishes the refresh in flight, starts no other, and exits;
a run started at once names that application (or, with --wait, waits for it). The commit log
of every DT shows the two runs never wrote at the same time, and the history has exactly one
row per committed refresh.

The random-moments fault test kills runs of a twelve-DT DAG (tests/e2e/fault_dag.py; two keep
an internal table, which commits before its DT in each refresh) at random
moments — dt alone, its process group, its spark-submit JVM, or everything it started — between
random change batches, runs again with --wait, and checks every DT against its recompute, the
history against the commit logs, and that no process of a killed run is left. Its last point is
aimed rather than random: everything the run started is killed after the top-N's internal table
committed and before the top-N did (its slow singular test holds the refresh there), and the
DT must be found behind its internal table, then brought up INCREMENTAL and right. The aimed
point's run is also the one that resumes after the point before it (once that run's processes
have ended): one dt run fewer, the history and the DTs checked after the last point. Long mode:
`DT_FAULT_KILLS=50 .venv/bin/python -m pytest -s tests/e2e/test_kill_safety.py -k random`
(`DT_FAULT_SEED` replays a schedule; `DT_FAULT_CHECK_EVERY=N` compares with the recompute
every N points only).

Ctrl-C keeps its behaviour: once, the refresh in flight commits and the rest is skipped; twice,
the application ends at once.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from dtcli.project import load_project
from dtcli.state import history
from tests.e2e import fault_dag
from tests.e2e.kill_helpers import commits_by_run, committed_refreshes, descendants, is_java, pids_gone
from tests.helpers import DT_BIN, assert_matches_recompute, dt_process, write_project

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

# The random-moments fault test: how many kill points, from which seed, checking every DT
# against its recompute every N points (and after the last). `make test` runs two: one at a
# random moment (the kill modes taken in turn from a random one) and the aimed last one; the long
# mode is e.g. DT_FAULT_KILLS=50.
KILLS = int(os.environ.get("DT_FAULT_KILLS", "2"))
SEED = int(os.environ.get("DT_FAULT_SEED", str(random.randrange(1 << 30))))
CHECK_EVERY = max(1, int(os.environ.get("DT_FAULT_CHECK_EVERY", "1")))
KILL_MODES = ("dt", "group", "jvm", "everything")
# a FAILED refresh a kill may leave (the application gone, or dt gone); never a write conflict
KILL_CODES = {"DT_PROCESS_GONE", "SPARK_APPLICATION_EXITED"}

TABLES = {
    "paid": "SELECT order_id, customer_id, amount FROM orders WHERE status = 'paid'",
    # refreshed right after `paid` (ties in DAG order go by name); its data test (NAP_TEST) is slow
    # on purpose: the kill lands while this refresh checks what it is about to commit
    "nap": "SELECT order_id, amount FROM {{ ref('paid') }} WHERE order_id = 1",
    "per_customer": "SELECT customer_id, COUNT(*) AS n, SUM(amount) AS total FROM {{ ref('paid') }} "
                    "GROUP BY customer_id",
    "ranked": "SELECT customer_id, total, RANK() OVER (PARTITION BY n ORDER BY total DESC) AS rnk "
              "FROM {{ ref('per_customer') }}",
}
# a singular test on `nap` that sleeps 4 s per row (nap has one) before it finds no failing row
# (reflect returns the text of what the method returned: never 'awake')
NAP_TEST = ("SELECT * FROM {{ ref('nap') }}\n"
            "WHERE reflect('java.lang.Thread', 'sleep', CAST(4000 AS BIGINT)) = 'awake'\n")
SEEDS = {"orders": "order_id,customer_id,status,amount\n" + "\n".join(
    f"{i},{i % 7},{'paid' if i % 3 else 'open'},{i}" for i in range(1, 60))}


def shop(root: Path) -> Path:
    root = write_project(root, TABLES, seeds=SEEDS)
    (root / "tests").mkdir()
    (root / "tests" / "nap_checked_slowly.sql").write_text(NAP_TEST)
    assert dt_process("seed", "-p", str(root)).returncode == 0
    return root


def start_dt(root: Path, *args: str) -> subprocess.Popen:
    """`dt run --all` as a CI job runs it: a process group of its own, output on a pipe."""
    return subprocess.Popen([str(DT_BIN), "run", "--all", "-p", str(root), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="200"),
                            start_new_session=True)


def test_sigkill_of_dt_process_group_leaves_no_second_writer(tmp_path, spark):
    root = shop(tmp_path / "shop")

    first = start_dt(root)
    for line in first.stdout:
        # `nap` has started (its "nap: FULL ..." line): its check sleeps 4 s, so the kill lands
        # inside it (killing at "paid: SUCCEEDED" raced the driver's check before starting nap)
        if line.startswith("nap: ") and line.rstrip().endswith("..."):
            os.killpg(first.pid, signal.SIGKILL)    # as CI cancels a job, or the OOM killer
            break
    first.wait()
    assert first.returncode == -signal.SIGKILL

    # at once: the lock is still held by the orphaned application, and the message names it
    refused = dt_process("run", "--all", "-p", str(root))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "is gone, but its Spark application" in refused.stderr, refused.stderr
    assert "spark-submit pid" in refused.stderr, refused.stderr

    started = time.monotonic()
    queued = start_dt(root, "--wait", "600")
    out = queued.communicate(timeout=900)[0]
    assert queued.returncode == 0, out
    print(f"the queued run took {time.monotonic() - started:.1f}s")

    project = load_project(root)
    runs = commits_by_run(project, TABLES)
    # Every DT's commits, in version order, come from one run and then the other, and nothing
    # the second run committed is older than anything the first run's application committed.
    assert len(runs) == 2, runs
    (old, old_commits), (new, new_commits) = runs
    assert max(c.timestamp for c in old_commits) < min(c.timestamp for c in new_commits)
    for name in TABLES:
        order = [c.run_id for c in sorted(old_commits + new_commits, key=lambda c: c.version) if c.name == name]
        assert order == sorted(order, key=lambda r: r != old), (name, order)
    # the orphan finished `nap` after dt died — its checks, then its one commit — and recorded
    # the refreshes it did not start
    assert [c.name for c in old_commits if c.name == "nap"] == ["nap"]
    napped = [r for r in history.read(project.warehouse, "nap") if r.run_id == old]
    assert [(r.state, [(t["name"], t["status"]) for t in r.data_tests]) for r in napped] == \
        [("SUCCEEDED", [("nap_checked_slowly", "pass")])], napped
    rows = history.read(project.warehouse)
    gone = [r for r in rows if r.run_id == old and r.state == "FAILED"]
    assert gone and all(r.state_code == "DT_PROCESS_GONE" and "is gone" in r.state_message for r in gone), gone
    # `per_customer` runs beside `nap` (both read only `paid`): the orphan either finished it or
    # never started it; `ranked` waits for it, so the kill always lands before `ranked` began
    assert "ranked" in {r.name for r in gone} and {r.name for r in gone} <= {"per_customer", "ranked"}, gone
    # exactly one history row per committed refresh
    committed = committed_refreshes(project, TABLES)
    succeeded = [(r.name, r.run_id) for r in rows if r.state == "SUCCEEDED" and r.refresh_action != "NO_DATA"]
    assert sorted(succeeded) == sorted(committed), (succeeded, committed)
    for name in TABLES:
        assert_matches_recompute(spark, project, name)


def kill_run(root: Path, mode: str, delay: float, log: Path) -> tuple[bool, list[int]]:
    """Start `dt run --all`, and after `delay` s kill: dt alone, its process group, its
    spark-submit JVM, or everything it started. Returns whether the run was still going, and
    the processes it had then (every one of them must end on its own)."""
    with open(log, "a") as out:
        proc = subprocess.Popen([str(DT_BIN), "run", "--all", "-p", str(root)], stdout=out, stderr=out,
                                env=dict(os.environ, COLUMNS="200"), start_new_session=True)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    jvms: list[int] = []
    while mode == "jvm" and proc.poll() is None and not jvms:
        jvms = [p for p in descendants(proc.pid) if _is_application_jvm(p)]
        time.sleep(0.05)
    if proc.poll() is not None:
        return False, []
    tree = descendants(proc.pid)
    if mode == "dt":
        os.kill(proc.pid, signal.SIGKILL)
    elif mode == "group":
        os.killpg(proc.pid, signal.SIGKILL)
    elif mode == "jvm":
        for pid in jvms:
            os.kill(pid, signal.SIGKILL)
    else:
        _kill_all(proc, tree)
    proc.wait(timeout=600)
    return True, tree


def _kill_all(proc, tree: list[int]) -> None:
    """SIGKILL the run's process group and every process it started (`tree`)."""
    os.killpg(proc.pid, signal.SIGKILL)
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _version(table: str) -> int | None:
    """The newest version in a local Delta table's log (None: no table yet)."""
    log = Path(table) / "_delta_log"
    versions = [int(f.name.split(".")[0]) for f in log.glob("*.json")] if log.is_dir() else []
    return max(versions, default=None)


def kill_between_commits(root: Path, project, log: Path) -> list[int]:
    """Start `dt run --all` and kill everything it started as soon as top_skus's internal table
    has committed: its singular test sleeps on the `nap` row before the DT's commit, so the kill
    lands in between. Returns the processes the run had (every one of them must end)."""
    from dtcli.state import internal

    state = internal.path(project.warehouse, "top_skus", "top_n_rows")
    state_before, dt_before = _version(state), _version(project.table_path("top_skus"))
    with open(log, "a") as out:
        # --wait: a lock the previous point's kill left behind (its processes have all ended)
        proc = subprocess.Popen([str(DT_BIN), "run", "--all", "--wait", "900", "-p", str(root)],
                                stdout=out, stderr=out,
                                env=dict(os.environ, COLUMNS="200"), start_new_session=True)
    while _version(state) == state_before:
        assert proc.poll() is None, "the run ended before top_skus's internal table committed"
        time.sleep(0.02)
    tree = descendants(proc.pid)
    _kill_all(proc, tree)
    proc.wait(timeout=600)
    # the kill landed in the window: the DT is where it was, its internal table one commit ahead
    assert _version(project.table_path("top_skus")) == dt_before, "top_skus committed before the kill"
    assert _version(state) == state_before + 1
    return tree


def _is_application_jvm(pid: int) -> bool:
    """spark-submit's application JVM, not the launcher JVM that spark-class runs first to build
    its command line (its arguments name SparkSubmit too): killing that one makes spark-submit
    exit before any application started, a run that failed to start rather than one killed."""
    line = _cmdline(pid)
    return is_java(pid) and "org.apache.spark.deploy.SparkSubmit" in line and "org.apache.spark.launcher.Main" not in line


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def check_history(project, names) -> None:
    rows = history.read(project.warehouse)
    for r in rows:
        if r.state == "FAILED":
            assert r.state_code in KILL_CODES, f"{r.name} failed for another reason: {r.state_message}"
        assert "CONCURRENT" not in (r.state_message or "").upper(), r.state_message
        if r.state == "SUCCEEDED" and r.refresh_trigger != "CREATION":
            # incremental mode: FULL or REINITIALIZE after creation would be a fallback
            assert r.refresh_action in ("INCREMENTAL", "NO_DATA"), \
                f"{r.name} refreshed {r.refresh_action} in run {r.run_id}: {r.state_message}"
    committed = Counter(committed_refreshes(project, names))
    recorded = Counter((r.name, r.run_id) for r in rows if r.state == "SUCCEEDED" and r.refresh_action != "NO_DATA")
    assert recorded == committed, f"history rows {recorded - committed} / commits {committed - recorded}"
    runs = commits_by_run(project, names)
    for (a, before), (b, after) in zip(runs, runs[1:]):
        assert max(c.timestamp for c in before) <= min(c.timestamp for c in after), \
            f"runs {a} and {b} wrote at the same time"


def check_internal_tables(project, names) -> None:
    """After a run that finished: each internal table is at the input versions its DT reflects,
    and the DT records the internal table's version it was computed from."""
    from dtcli.state import internal
    from dtcli.state.delta_log import table_info

    for name in names:
        for role in internal.existing(project.warehouse, name):
            dt_info = table_info(project.table_path(name), with_stats=False)
            state = table_info(internal.path(project.warehouse, name, role), with_stats=False)
            assert dt_info.frontier.state_versions[role] == state.version, (name, dt_info.frontier, state.version)
            assert state.frontier.source_versions == dt_info.frontier.source_versions, (name, state.frontier)


def test_random_kills_never_leave_a_writer_behind(tmp_path, spark):
    rng = random.Random(SEED)
    print(f"\nDT_FAULT_SEED={SEED} DT_FAULT_KILLS={KILLS} DT_FAULT_CHECK_EVERY={CHECK_EVERY}")
    root = fault_dag.make_project(tmp_path / "shop")
    names = list(fault_dag.TABLES)
    changes = fault_dag.Changes(root, rng)
    started = time.monotonic()
    created = dt_process("run", "-p", str(root))
    assert created.returncode == 0, created.stdout + created.stderr
    took = time.monotonic() - started
    project = load_project(root)
    interrupted = Counter()
    first = rng.randrange(len(KILL_MODES))   # modes in turn: a few points still cover several
    for point in range(1, KILLS + 1):
        batch = changes.batch()
        if point == KILLS:      # aimed: between the top-N's internal table's commit and its own
            batch.append(changes.nap_lines())
            mode, delay, hit = "between top_skus's commits", 0.0, True
            tree = kill_between_commits(root, project, tmp_path / "killed.log")
        else:
            mode, delay = KILL_MODES[(first + point) % len(KILL_MODES)], rng.uniform(0.0, took * 1.1)
            hit, tree = kill_run(root, mode, delay, tmp_path / "killed.log")
        interrupted[mode if hit else "finished first"] += 1
        if rng.random() < 0.5:
            batch += changes.batch()          # sources move on while the orphan finishes
        print(f"point {point}: kill {mode} at {delay:.1f}s ({'hit' if hit else 'after the run ended'}); "
              f"{', '.join(batch)}")
        if point == KILLS - 1:
            # the aimed point's run, which starts once this run's processes have ended, is what
            # resumes after this kill (one dt run fewer); both are checked after the last point
            assert pids_gone(tree, 300), f"point {point}: a process of the killed run is still running"
            continue
        again = dt_process("run", "--all", "--wait", "900", "-p", str(root))
        assert again.returncode == 0, (point, mode, batch, again.stdout + again.stderr)
        assert pids_gone(tree, 120), f"point {point}: a process of the killed run is still running"
        check_history(project, names)
        check_internal_tables(project, names)
        if point % CHECK_EVERY == 0 or point == KILLS:
            for name in names:
                assert_matches_recompute(spark, project, name)
    print(f"kill points: {KILLS}; {dict(interrupted)}; {time.monotonic() - started:.0f}s")


@pytest.mark.parametrize("presses", [1, 2, "SIGTERM"])
def test_ctrl_c_once_lets_the_refresh_commit_twice_ends_the_application(tmp_path, presses):
    """Today's Ctrl-C, through the real process: once, the refreshes in flight (`nap`, and
    `per_customer` when it had started beside it) commit and the rest is skipped; twice, the
    application ends at once and `nap` does not commit: the second press comes 2.5 s into `nap`,
    inside the 4 s its data test takes unless its query alone took longer, so a kill while a
    refresh checks what it is about to commit leaves the DT as it was (here: not created). Either
    way nothing of the run is left running and the lock is free when dt has exited."""
    from dtcli.state.delta_log import table_info
    from dtcli.state.lock import warehouse_lock

    root = shop(tmp_path / "shop")
    run = start_dt(root)
    tree: list[int] = []
    for line in run.stdout:
        nap_started = line.startswith("nap: ") and line.rstrip().endswith("...")
        if (presses == 2 and nap_started) or (presses != 2 and line.startswith("paid: SUCCEEDED")):
            tree = descendants(run.pid)
            if presses == "SIGTERM":                     # a CI job's timeout: stops as Ctrl-C once
                os.kill(run.pid, signal.SIGTERM)
            for _ in range(presses if presses != "SIGTERM" else 0):
                os.kill(run.pid, signal.SIGINT)          # what a terminal sends dt's group
                time.sleep(2.5 if presses == 2 else 0.3)
            break
    out = run.stdout.read()
    assert run.wait(timeout=600) == (143 if presses == "SIGTERM" else 130), out
    assert tree and pids_gone(tree, 30), "a process of the interrupted run is still running"
    project = load_project(root)
    with warehouse_lock(project, "test"):           # free at once: no application holds it
        pass
    nap = table_info(project.table_path("nap"))
    if presses != 2:
        states = {r.name: r.state for r in history.read(project.warehouse)}
        # `nap` is in flight when the stop arrives, unless (on a loaded machine) the stop
        # reached the driver before `nap` began: then it is skipped, and was never created
        assert states.get("nap") in {"SUCCEEDED", "SKIPPED"}, states
        assert (nap is not None and nap.frontier is not None) if states["nap"] == "SUCCEEDED" else nap is None
        # run_results.json, the summary and the exit code tell the story the history tells
        results = json.loads((root / "target" / "run_results.json").read_text())
        assert results["success"] is False and results["interrupted"] is True
        assert {r["name"]: r["state"] for r in results["results"]} == states
        skipped = sum(s == "SKIPPED" for s in states.values())
        assert f"stopped by the user: {len(states) - skipped} succeeded, 0 failed, {skipped} skipped" in out
        assert states.pop("per_customer") in {"SUCCEEDED", "SKIPPED"}, states
        assert states.pop("nap") in {"SUCCEEDED", "SKIPPED"}, states
        assert states == {"paid": "SUCCEEDED", "ranked": "SKIPPED"}, states
    else:
        assert nap is None
        assert "nap" not in {r.name for r in history.read(project.warehouse) if r.state == "SUCCEEDED"}
