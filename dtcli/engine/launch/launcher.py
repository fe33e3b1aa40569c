"""Run a plan in one spark-submit application and stream its progress back (no pyspark import).

spark-submit inherits the warehouse lock's descriptor and learns who its owner is (dt's pid, a
heartbeat in cluster mode): a killed dt leaves no application writing unlocked, and the
application stops starting refreshes once dt is gone (see owner_watch.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from dtcli.engine.launch import class_archive, secret_conf
from dtcli.engine.launch import jars as jarlib
from dtcli.engine.launch.contract import LaunchResult
from dtcli.engine.launch.spark_conf import catalog_conf, jit_options, session_conf
from dtcli.engine.owner_watch import Heartbeat
from dtcli.engine.protocol import EVENT_PREFIX, STOP_FILE
from dtcli.errors import ConfigError
from dtcli.events import (
    Done,
    Events,
    NotStarted,
    PlanStarted,
    RefreshFinished,
    RunEvent,
    Started,
    Stopping,
    from_wire,
)
from dtcli.model import Plan, Project, join_path
from dtcli.redact import scrub, scrub_file
from dtcli.state import owner, reconcile
from dtcli.state.lock import Held
from dtcli.state.storage import uses_s3a


def spark_home() -> Path:
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    return jarlib.pyspark_jars_dir().parent


def submit_command(project: Project, plan_path: Path | None, *driver_args: str,
                   actions: list[str] | None = None,
                   archive: class_archive.ClassArchive | None = None,
                   conf: dict[str, str] | None = None) -> list[str]:
    """spark-submit running driver.py on one plan (with `plan_path` None: the warm application's
    `driver_args`), followed by the owner options (`owner_args`); `actions`: the plan's refresh
    actions, which choose how the JVM compiles (`spark.jit`); `archive`: the driver's class
    archive to map or write (`class_archive_of`); `conf`: `driver_conf(project)` when the caller
    has it already."""
    submit = spark_home() / "bin" / "spark-submit"
    if not submit.exists():
        raise ConfigError(f"spark-submit not found at {submit}", hint="set SPARK_HOME or reinstall pyspark")
    conf = dict(conf) if conf is not None else driver_conf(project)
    conf.update(jit_options(project.spark_jit, project.spark_master, conf, actions))
    if archive is not None:
        java = conf.get("spark.driver.extraJavaOptions", "")
        conf["spark.driver.extraJavaOptions"] = f"{java} {archive.java_options}".strip()
    cmd = [str(submit), "--master", project.spark_master, "--name", f"dt:{project.name}"]
    # secrets go in a private properties file: a command line is visible to every user (ps)
    cmd += secret_conf.properties_args(conf)
    for key, value in sorted(secret_conf.public(conf).items()):
        cmd += ["--conf", f"{key}={value}"]
    driver = Path(__file__).parents[1] / "runtime" / "driver.py"     # a path, not an import: it runs in Spark
    return cmd + [str(driver), *([str(plan_path)] if plan_path is not None else []), *driver_args]


def driver_conf(project: Project) -> dict[str, str]:
    """The application's Spark settings: dt's, the project's, the catalog's, the jars."""
    return session_conf({**project.spark_conf, **catalog_conf(project)},
                        jarlib.resolve(project.jars, s3=uses_s3a(project)))


def class_archive_of(project: Project, write: bool = True,
                     conf: dict[str, str] | None = None) -> class_archive.ClassArchive | None:
    """The driver's class archive (`spark.class_archive`): the one to map, or (`write`) the one
    this run writes at exit when there is none yet."""
    conf = conf if conf is not None else driver_conf(project)
    return class_archive.for_driver(project.spark_class_archive, conf, spark_home(),
                                    [j for j in conf.get("spark.jars", "").split(",") if j], write=write)


def submit_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("SPARK_HOME", str(spark_home()))
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env


def write_plan(project: Project, plan: Plan) -> Path:
    """The plan's file under target/runs/<run id>/ (its stop file goes beside it)."""
    run_dir = project.target_dir / "runs" / plan.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_path = run_dir / "plan.json"
    plan_path.write_text(plan.to_json(), encoding="utf-8")
    reconcile.note_owner(run_dir)     # who to ask whether the run is still alive (reconcile.py)
    return plan_path


def owner_args(project: Project, run_id: str) -> list[str]:
    """How the driver recognises that this dt process is gone (see owner_watch.py): its pid and
    start time; in cluster deploy mode, where the driver cannot see dt's processes, a heartbeat
    file in the warehouse as well."""
    args = ["--owner", owner.token()]
    if cluster_mode(project):
        args += ["--heartbeat", heartbeat_path(project, run_id)]
    return args


def cluster_mode(project: Project) -> bool:
    return project.spark_conf.get("spark.submit.deployMode") == "cluster"


def heartbeat_path(project: Project, run_id: str) -> str:
    return join_path(project.warehouse, "_dt", "runs", run_id, "heartbeat")


def lock_fds(lock: Held | None) -> tuple[int, ...]:
    """The warehouse lock's descriptor, for spark-submit to inherit: the lock then stays held
    until the application exits, even when dt is killed first."""
    return (lock.fd,) if lock is not None and lock.fd is not None else ()


def noting_application(lock: Held | None, on_event: Events) -> Events:
    """Pass events on; write the application's id into the lock file once the driver says it."""
    def seen(event: RunEvent) -> None:
        if isinstance(event, PlanStarted) and lock is not None:
            lock.note(application_id=event.application_id)
        on_event(event)
    return seen


def launch(project: Project, plan: Plan, on_event: Events, lock: Held | None = None) -> LaunchResult:
    """The cold launcher (a `contract.Launcher`): one spark-submit application for the plan,
    holding `lock` (the caller's warehouse lock) until it exits."""
    plan_path = write_plan(project, plan)
    run_dir = plan_path.parent
    log_path = run_dir / "spark-submit.log"
    env = submit_env()
    result = LaunchResult(returncode=-1, log_path=log_path)
    on_event = noting_application(lock, on_event)
    beating = Heartbeat(heartbeat_path(project, plan.run_id)) if cluster_mode(project) else nullcontext()
    with open(log_path, "w", encoding="utf-8") as log, beating:
        # Its own session: a terminal's Ctrl-C reaches dt only, which asks the driver to stop
        # between refreshes; a second Ctrl-C ends the application (commits stay atomic).
        conf = driver_conf(project)
        archive = class_archive_of(project, conf=conf)
        command = submit_command(project, plan_path, *owner_args(project, plan.run_id),
                                 actions=[step.action for step in plan.steps], archive=archive, conf=conf)
        proc = subprocess.Popen(command,
                                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                                env=env, cwd=project.root, start_new_session=True,
                                pass_fds=lock_fds(lock))
        if lock is not None:
            lock.note(spark_submit_pid=proc.pid)
        assert proc.stdout is not None
        interrupted = False
        while True:
            try:
                for line in proc.stdout:
                    handle(line, result, log, on_event)
                break
            except KeyboardInterrupt:
                if interrupted:
                    proc.terminate()
                    proc.wait()
                    raise
                interrupted = True
                (run_dir / STOP_FILE).write_text("stop requested\n")
                on_event(Stopping())
        result.returncode = proc.wait()
    if not result.done and not cluster_mode(project):     # (a cluster's driver is not ours to see)
        await_driver(result.driver)
    if archive is not None:
        archive.settle(result.returncode)
    secret_conf.forget()
    scrub_file(log_path)     # Spark's stderr went straight to the file
    result.interrupted = interrupted    # reported by the caller, with what did and did not run
    return result


# How long dt waits for the driver's Python process to end once its JVM has: the driver's watch
# sees its parent gone within a poll (owner_watch.POLL_SECONDS) and exits.
DRIVER_EXIT_WAIT = 30.0


def await_driver(driver: str | None, timeout: float = DRIVER_EXIT_WAIT) -> None:
    """After the application ended mid-plan: wait until its driver's Python process (`PID:START`,
    from its Started event) has ended too. Its JVM killed, the driver can still be appending a
    refresh's history row whose event never reached dt; api.execute reads the history for the
    steps it did not hear about, and must read it once nothing else writes there."""
    who = owner.parse(driver)
    deadline = time.monotonic() + timeout
    while who is not None and owner.alive(*who) and time.monotonic() < deadline:
        time.sleep(0.05)


def handle(line: str, result: LaunchResult, log, on_event: Events) -> None:
    if not line.startswith(EVENT_PREFIX):
        log.write(scrub(line))
        return
    event = from_wire(json.loads(line[len(EVENT_PREFIX):]))
    if event is None:
        return
    if isinstance(event, RefreshFinished):
        result.records.append(event.record)
    elif isinstance(event, Done):
        result.done = True
    elif isinstance(event, Started):
        result.started = True
        result.driver = event.driver or None
    elif isinstance(event, NotStarted):
        result.not_started = event.message
    on_event(event)


def last_error(log_path: Path | None) -> str | None:
    """The last line of a spark-submit log that states an error (Spark's `[CONDITION] message`
    first, else an exception's or the launcher's message): what a user would look for in it."""
    import re

    try:
        lines = Path(log_path).read_text(encoding="utf-8", errors="replace").splitlines() if log_path else []
    except OSError:
        return None
    condition = re.compile(r"(\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\] .*)$")
    stated = re.compile(r"^(?:[\w.$]+(?:Exception|Error)|Error|error): (.+)$")
    for pattern in (condition, stated):
        for line in reversed(lines):
            found = pattern.search(line.strip())
            if found:
                return found.group(1).strip()
    return None
