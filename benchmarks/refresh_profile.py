"""Where a refresh's time goes: its Spark jobs, their stages, and the driver's time between them.

    .venv/bin/python benchmarks/refresh_profile.py --sf 1                  # (a) (b) (c) after the recent batch
    .venv/bin/python benchmarks/refresh_profile.py --sf 1 --tables b --jobs  # and every job of each refresh
    .venv/bin/python benchmarks/refresh_profile.py --sf 0.01 --full        # FULL of the same DTs beside it
    .venv/bin/python benchmarks/refresh_profile.py -p PROJECT --select q06 --full   # a project's DTs after a change
    .venv/bin/python benchmarks/refresh_profile.py --event-log DIR -p PROJECT   # a `dt run` that wrote an event log
    .venv/bin/python benchmarks/refresh_profile.py -p PROJECT --select q09 --jfr /tmp/jfr  # the driver's CPU by phase

A small change should cost a refresh little more than the change itself and one commit; what it
costs beyond that is fixed cost: Spark jobs that rebuild table state or collect small results,
and driver time between jobs (analysing and planning queries, Delta's log, Python). This reports
per refresh its wall time, the Spark jobs it ran (jobs are told apart by the job group each
refresh runs under, Delta's own included), the stages and tasks that ran (skipped stages left
out), the time inside jobs (the union of their intervals) and the driver's time outside them.

Benchmark mode (the default) drives the engine in-process, as run.py does: the benchmark DTs
created at the scale factor, one change batch committed, then per repetition each DT restored
and refreshed as a scheduled run would (INCREMENTAL), optionally followed by a FULL of the same
DT at the same versions. The jobs come from the application's status store. A warm-up over
SF0.01 runs first (not reported), so the figures are of a warm JVM; `--no-warmup` for a cold one.

Project mode (`-p PROJECT`) does the same for the DTs of any project whose sources changed
since its last `dt run` (the warehouse is restored before each refresh and at the end).

Event-log mode reads a Spark event log (`spark.eventLog.enabled: true` and
`spark.eventLog.dir` in the project's `spark.conf`, then `dt run`) and the project's refresh
history, and reports each refresh of that application the same way: a real `dt run`, fresh JVM,
refreshes side by side.

`--engine DIR` imports dtcli from another checkout (for before/after figures in one session of
measurements: run the two alternately, and compare the counts; times only as ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENGINE = [str(HERE.parent)]       # the checkout dtcli is imported from (--engine)


@dataclass
class Job:
    job_id: int
    start: float          # seconds since the epoch
    end: float
    stages: int           # stages that ran (skipped ones left out)
    tasks: int
    label: str

    @property
    def seconds(self) -> float:
        return max(self.end - self.start, 0.0)


@dataclass
class RefreshProfile:
    name: str
    action: str
    strategy: str | None
    start: float
    end: float
    jobs: list[Job] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return self.end - self.start

    def in_jobs(self) -> float:
        """Seconds inside at least one Spark job (jobs of a refresh may overlap: its table
        state is built on a side thread)."""
        total, reach = 0.0, self.start
        for job in sorted(self.jobs, key=lambda j: j.start):
            begin, finish = max(job.start, reach), min(job.end, self.end)
            if finish > begin:
                total += finish - begin
            reach = max(reach, job.end)
        return total

    message: str | None = None

    def summary(self) -> dict:
        jobs = sorted(self.jobs, key=lambda j: j.start)
        first = (jobs[0].start - self.start) if jobs else self.wall
        last = (self.end - max(j.end for j in jobs)) if jobs else 0.0
        return {"name": self.name, "action": self.action, "strategy": self.strategy,
                "wall": round(self.wall, 2), "jobs": len(jobs),
                "stages": sum(j.stages for j in jobs), "tasks": sum(j.tasks for j in jobs),
                "in_jobs": round(self.in_jobs(), 2), "driver": round(self.wall - self.in_jobs(), 2),
                "before_first_job": round(first, 2), "after_last_job": round(last, 2),
                "delta_state_jobs": sum("Compute snapshot" in j.label or "state" in j.label.lower()
                                        for j in jobs),
                "message": self.message}


def _iso(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _group(run_id: str, name: str) -> str:
    return f"dt:{run_id}:{name}"      # dtcli.engine.runtime.progress.job_group


# ---- call sites ---------------------------------------------------------------------------

def label_jobs_by_caller(spark) -> None:
    """Name each Spark job after the dtcli line that started it. Spark names a job after its
    caller's frame, which from Python is py4j's reflection (or, for queries that Spark 4 runs on
    its own threads, a thread pool's frame); so before a Java call from a dtcli function the
    thread's call site is set to that function's file and line (only when it changed: a Java call
    of its own). Jobs started on Spark's and Delta's threads inherit it."""
    import threading

    from py4j import java_gateway

    jsc, local = spark.sparkContext._jsc, threading.local()
    original = java_gateway.JavaMember.__call__
    root = str(HERE.parent) + "/"

    def caller() -> str | None:
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if "/dtcli/" in name:
                return f"{name.replace(root, '')}:{frame.f_lineno} {frame.f_code.co_name}"
            frame = frame.f_back
        return None

    def call(self, *args):
        if not getattr(local, "busy", False):
            site = caller()
            if site is not None and site != getattr(local, "site", None):
                local.busy, local.site = True, site
                try:
                    jsc.setCallSite(site)
                finally:
                    local.busy = False
        return original(self, *args)

    java_gateway.JavaMember.__call__ = call


# ---- the application's status store (in-process) -----------------------------------------

def store_jobs(spark, groups: set[str]) -> dict[str, list[Job]]:
    """Jobs of the given job groups from the live status store (after its events are in)."""
    jsc = spark.sparkContext._jsc.sc()
    jsc.listenerBus().waitUntilEmpty()
    store = jsc.statusStore()
    found: dict[str, list[Job]] = {g: [] for g in groups}
    it = store.jobsList(None).iterator()
    while it.hasNext():
        j = it.next()
        group = j.jobGroup().get() if j.jobGroup().isDefined() else None
        if group not in found:
            continue
        start = j.submissionTime().get().getTime() / 1000 if j.submissionTime().isDefined() else 0.0
        end = j.completionTime().get().getTime() / 1000 if j.completionTime().isDefined() else start
        described = j.description().get() if j.description().isDefined() else ""
        found[group].append(Job(int(j.jobId()), start, end,
                                int(j.stageIds().size()) - int(j.numSkippedStages()),
                                int(j.numTasks()) - int(j.numSkippedTasks()),
                                _label(str(j.name()), str(described))))
    return found


def _label(name: str, description: str) -> str:
    """`collect at dtcli/engine/runtime/materialize.py:40` [+ Delta's own description of the job]."""
    where = name.replace(str(HERE.parent) + "/", "")
    delta = description.split(": ", 2)[-1] if description.startswith("Delta:") else ""
    return f"{where} [{delta}]" if delta else where


def profiles_of(spark, records) -> list[RefreshProfile]:
    groups = {_group(r.run_id, r.name): r for r in records}
    jobs = store_jobs(spark, set(groups))
    return [RefreshProfile(r.name, r.refresh_action, r.refresh_strategy, _iso(r.refresh_start_time),
                           _iso(r.refresh_end_time), jobs[g], r.state_message) for g, r in groups.items()]


# ---- an event log (a spark-submit application) --------------------------------------------

def _event_files(path: Path) -> list[Path]:
    """The event log of one application: a file, or the newest application of a directory
    (Spark 4 writes each as a folder `eventlog_v2_<app>` of `events_<n>_<app>` files)."""
    if path.is_file():
        return [path]
    newest = max(path.iterdir(), key=lambda p: p.stat().st_mtime)
    if newest.is_file():
        return [newest]
    files = [p for p in newest.iterdir() if p.name.startswith("events_")]
    if any(p.suffix in (".zstd", ".lz4", ".snappy", ".lzf") for p in files):
        raise SystemExit("the event log is compressed: write it with spark.eventLog.compress: false")
    return sorted(files, key=lambda p: int(p.name.split("_")[1]))


def event_log_jobs(path: Path) -> dict[str, list[Job]]:
    """Jobs per job group from a Spark event log (see `_event_files`)."""
    starts: dict[int, dict] = {}
    ran: dict[int, tuple[int, int]] = {}      # stage id -> (1, tasks) once it completed
    jobs: dict[str, list[Job]] = {}
    for line in (line for f in _event_files(path) for line in f.read_text(encoding="utf-8").splitlines()):
        event = json.loads(line)
        kind = event.get("Event")
        if kind == "SparkListenerJobStart":
            starts[event["Job ID"]] = event
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            ran[info["Stage ID"]] = (1, int(info.get("Number of Tasks", 0)))
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in starts:
            begin = starts.pop(event["Job ID"])
            props = begin.get("Properties") or {}
            group = props.get("spark.jobGroup.id")
            if not group:
                continue
            stages = [ran.get(s["Stage ID"], (0, 0)) for s in begin.get("Stage Infos", [])]
            label = _label(props.get("callSite.short", ""), props.get("spark.job.description", ""))
            jobs.setdefault(group, []).append(Job(
                int(event["Job ID"]), begin["Submission Time"] / 1000, event["Completion Time"] / 1000,
                sum(s[0] for s in stages), sum(s[1] for s in stages), label))
    return jobs


def from_event_log(log_path: Path, project_dir: Path) -> list[RefreshProfile]:
    """The refreshes of the event log's application, with the history's times and actions."""
    from dtcli.project.loader import load_project
    from dtcli.state import history

    jobs = event_log_jobs(log_path)
    runs = {g.split(":")[1] for g in jobs}
    warehouse = load_project(project_dir).warehouse
    out = []
    for r in history.read(warehouse):
        group = _group(r.run_id, r.name)
        if r.run_id in runs and r.refresh_action != "NO_DATA":
            out.append(RefreshProfile(r.name, r.refresh_action, r.refresh_strategy,
                                      _iso(r.refresh_start_time), _iso(r.refresh_end_time),
                                      jobs.get(group, [])))
    return sorted(out, key=lambda p: p.start)


# ---- report -------------------------------------------------------------------------------

COLUMNS = ("name", "action", "strategy", "wall", "jobs", "stages", "tasks", "in_jobs", "driver",
           "before_first_job", "after_last_job", "delta_state_jobs")


def table(rows: list[dict]) -> str:
    head = "| DT | action [strategy] | wall (s) | jobs | stages | tasks | in jobs (s) | driver (s) " \
           "| before 1st job (s) | after last job (s) | table-state jobs |"
    out = [head, "|" + "---|" * 2 + "---:|" * 9]
    for r in rows:
        out.append(f"| {r['name']} | {r['action']} [{r['strategy'] or '-'}] | {r['wall']:.2f} | {r['jobs']} "
                   f"| {r['stages']} | {r['tasks']} | {r['in_jobs']:.2f} | {r['driver']:.2f} "
                   f"| {r['before_first_job']:.2f} | {r['after_last_job']:.2f} | {r['delta_state_jobs']} |")
    return "\n".join(out)


def job_lines(p: RefreshProfile) -> str:
    out = [f"  {p.name} ({p.action}, {p.wall:.2f}s):"]
    for j in sorted(p.jobs, key=lambda j: j.start):
        out.append(f"    +{j.start - p.start:6.2f}s {j.seconds:5.2f}s  job {j.job_id:<5} "
                   f"{j.stages} st {j.tasks:>3} tasks  {j.label}")
    return "\n".join(out)


def report(profiles: list[RefreshProfile], with_jobs: bool, title: str) -> list[dict]:
    rows = [p.summary() for p in profiles]
    print(f"\n{title}\n\n{table(rows)}")
    for r in rows:
        if r.get("message"):
            print(f"  {r['name']}: {r['message']}")
    if with_jobs:
        print()
        for p in profiles:
            print(job_lines(p))
    return rows


# ---- benchmark mode -----------------------------------------------------------------------

def _session(args, conf: dict | None = None):
    from dtcli.engine.launch.session import local_session

    extra = dict(item.split("=", 1) for item in args.conf)
    if args.jfr:            # the driver's CPU by phase (driver_phases.py)
        import driver_phases

        args.jfr.mkdir(parents=True, exist_ok=True)
        java = " ".join(filter(None, [driver_phases.java_options(args.jfr.resolve()),
                                      extra.get("spark.driver.extraJavaOptions")]))
        extra["spark.driver.extraJavaOptions"] = java
    spark = local_session(extra={**(conf or {}), "spark.driver.memory": args.driver_memory,
                                 "spark.sql.shuffle.partitions": args.shuffle_partitions, **extra})
    if args.callers:
        label_jobs_by_caller(spark)
    return spark


def _profiled(spark, run, project_dir: Path, name: str, full: bool, title: str, args) -> list[dict]:
    started = time.time()
    run.refresh(spark, project_dir, name, full=full)
    ended = time.time()
    records = _last_records(project_dir, name)
    rows = [{**r, "forced_full": full} for r in report(profiles_of(spark, records), args.jobs, title)]
    for r in rows:
        args.windows.append((f"{r['name']} {'FULL' if full else r['action']} #{len(args.windows) + 1}",
                             started, ended))
    return rows


def _driver_phases(spark, args) -> None:
    """With `--jfr`: the driver's CPU per timed refresh, by phase (driver_phases.py)."""
    if not args.jfr or not args.windows:
        return
    import driver_phases

    recording = driver_phases.dump(spark, args.jfr.resolve())
    print("\nDriver CPU by phase (JFR samples of the driver's threads, executors left out; seconds):\n")
    print(driver_phases.report(driver_phases.by_window(recording, args.windows)))


def benchmark(args) -> list[dict]:
    """The benchmark DTs of run.py, after one of its change batches."""
    import run
    from batches import change_batch

    run.PROFILE = False                 # no cProfile: it would slow the driver down
    tables = tuple(t for t in run.TABLES if t.key in args.tables)
    for sf in ({0.01} if args.warmup else set()) | {args.sf}:
        run.tpch_data.ensure(sf, log=run.log)
    spark = _session(args)
    quiet = (lambda m: None)    # noqa: E731
    out: list[dict] = []
    try:
        scales = ([0.01] if args.warmup else []) + [args.sf]
        for n, sf in enumerate(scales):
            warm = args.warmup and n == 0
            p = run.prepare(spark, sf, tables, say=quiet if warm else run.log)
            change = change_batch(spark, sf, p.pristine, p.sources,
                                  max(3, round(1500 * sf)) if warm else args.change_orders,
                                  say=quiet if warm else run.log, kind=args.batch)
            before = p.root / "warehouse.before-refresh"
            run.copy_tree(p.warehouse, before)
            for rep in range(1 if warm else args.repeat):
                for t in tables:
                    for full in ([False, True] if args.full else [False]):
                        # the whole warehouse: the refresh history too, which ADAPTIVE learns from
                        run.copy_tree(before, p.warehouse)
                        run.clear_delta_cache(spark)
                        title = (f"{run.sf_label(sf)} {args.batch} batch (orders ~{change['orders_changed']:,}), "
                                 f"repetition {rep + 1}, {'FULL' if full else 'scheduled'} refresh of {t.name}")
                        if warm:
                            run.refresh(spark, p.project_dir, t.name, full=full)
                            continue
                        out += [{**r, "sf": sf, "repetition": rep + 1}
                                for r in _profiled(spark, run, p.project_dir, t.name, full, title, args)]
        _driver_phases(spark, args)
    finally:
        spark.stop()
    return out


def project(args) -> list[dict]:
    """The selected DTs of a project whose sources changed since its last run: per repetition,
    each refreshed from the warehouse as it is now (restored before every refresh), and with
    `--full` recomputed FULL beside it. A first round is not reported (`--no-warmup`: it is)."""
    import run

    from dtcli.project.loader import load_project

    run.PROFILE = False
    project_dir = args.project_dir.resolve()
    loaded = load_project(project_dir)
    names = args.select or sorted(loaded.tables)
    warehouse = Path(loaded.warehouse)
    before = warehouse.with_name(f"{warehouse.name}.before-profile-{os.getpid()}")
    run.copy_tree(warehouse, before)
    spark = _session(args, dict(loaded.spark_conf))
    out: list[dict] = []
    try:
        for rep in range(args.repeat + (1 if args.warmup else 0)):
            warm = args.warmup and rep == 0
            for name in names:
                for full in ([False, True] if args.full else [False]):
                    run.copy_tree(before, warehouse)
                    run.clear_delta_cache(spark)
                    if warm:
                        run.refresh(spark, project_dir, name, full=full)
                        continue
                    title = f"{project_dir.name}: {'FULL' if full else 'scheduled'} refresh of {name}, " \
                            f"repetition {rep + (0 if args.warmup else 1)}"
                    out += [{**r, "repetition": rep} for r in _profiled(spark, run, project_dir, name, full,
                                                                         title, args)]
        _driver_phases(spark, args)
    finally:
        spark.stop()
        run.copy_tree(before, warehouse)
        import shutil

        shutil.rmtree(before, ignore_errors=True)
    if args.full:
        print("\n" + pairs(out))
    return out


def _last_records(project_dir: Path, name: str):
    from dtcli.project.loader import load_project
    from dtcli.state import history

    return history.read(load_project(project_dir).warehouse, name, limit=1)


def pairs(rows: list[dict]) -> str:
    """Per DT, the best INCREMENTAL (or scheduled) refresh against the best FULL."""
    best: dict[tuple[str, bool], dict] = {}
    for r in rows:
        key = (r["name"], r["forced_full"])
        if key not in best or r["wall"] < best[key]["wall"]:
            best[key] = r
    out = ["| DT | scheduled: action (s, jobs) | FULL (s, jobs) | scheduled ÷ FULL |", "|---|---|---|---:|"]
    for name in dict.fromkeys(r["name"] for r in rows):
        a, f = best.get((name, False)), best.get((name, True))
        if a and f:
            out.append(f"| {name} | {a['action']} {a['wall']:.2f} s, {a['jobs']} | {f['wall']:.2f} s, {f['jobs']} "
                       f"| {a['wall'] / f['wall']:.2f}× |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    parser.add_argument("--tables", nargs="+", choices=["a", "b", "c"], default=["a", "b", "c"])
    parser.add_argument("--batch", choices=["recent", "spread"], default="recent")
    parser.add_argument("--change-orders", type=int,
                        help="orders changed (a third new, deleted, repriced; default 0.1%% of the "
                             "scale factor's orders)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="also a FULL of each DT, same versions")
    parser.add_argument("--jobs", action="store_true", help="list every job of each refresh")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false")
    parser.add_argument("--no-callers", dest="callers", action="store_false",
                        help="do not name jobs after the dtcli line that started them (one Java call "
                             "per change of line: a little driver time)")
    parser.add_argument("--shuffle-partitions", default="8")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--engine", type=Path, help="import dtcli from this checkout")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the session (e.g. spark.eventLog.enabled=true)")
    parser.add_argument("--event-log", type=Path, help="report a `dt run`'s event log instead")
    parser.add_argument("-p", "--project-dir", type=Path,
                        help="profile this project's DTs (whose sources changed since its last run) "
                             "instead of the benchmark's")
    parser.add_argument("--select", nargs="+", help="with --project-dir: these DTs (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--jfr", type=Path, metavar="DIR",
                        help="record the driver with Java Flight Recorder (into DIR) and report its "
                             "CPU per refresh by phase: analysis, planning, codegen, task "
                             "serialization, Delta's state, scans and commits (driver_phases.py)")
    args = parser.parse_args(argv)
    args.windows = []           # (label, start, end) of each timed refresh, for --jfr
    ENGINE[0] = str(args.engine.resolve() if args.engine else HERE.parent)
    sys.path.insert(0, ENGINE[0])
    sys.path.insert(1, str(HERE))
    import run  # noqa: F401  (it puts this checkout first on the path: the engine's goes first again)

    sys.path.insert(0, ENGINE[0])

    started = time.perf_counter()
    print(f"load average before: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.event_log:
        rows = report(from_event_log(args.event_log, args.project_dir or Path(".")), args.jobs,
                      f"refreshes of {args.event_log}")
    elif args.project_dir:
        rows = project(args)
    else:
        args.sf = int(args.sf) if float(args.sf).is_integer() else args.sf
        args.change_orders = args.change_orders or max(3, round(1500 * args.sf))
        rows = benchmark(args)
        if args.full:
            print("\n" + pairs(rows))
    print(f"\nload average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.perf_counter() - started:.0f}s in all")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
