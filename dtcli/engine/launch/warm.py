"""A warm Spark application for `dt run --watch`: one spark-submit for many passes.

A cold `dt run` pays a JVM start, Spark's start-up and a cold JIT on every pass: on a small
change that is most of the pass. `WarmEngine.launch` is a `contract.Launcher`, as
`launcher.launch` is (so `api.run` takes either), but keeps the application between plans: each plan's path is sent
over a loopback socket the driver connects to (`driver.py --serve`, see serve.py), and its
events are read from the driver's stdout until "done". When dt dies, the kernel closes the
socket and the driver stops after its refresh in flight.

- Started when a pass first needs Spark (a pass of NO_DATA only starts nothing);
- restarted when it died (a crash, the cluster killed it) or when the project's Spark settings
  changed between passes (a new jar or conf needs a new application);
- its JVM maps the driver's class archive (`spark.class_archive`) when one exists as it starts,
  but never writes one: the archive is written as a JVM exits, and this one exits at a watch's
  end or idle timeout, where 18 s more would only delay the user. An archive that appears while
  it runs (a plain `dt run` beside the watch wrote it) is not a change of its settings: the
  restart check compares the command without the archive's option;
- stopped by the driver itself after `idle_timeout` seconds without a plan, freeing a cluster's
  executors between sparse refreshes, and by `close()` when the watch ends. dt restarts it a
  little before that timeout rather than race the driver's exit.

Ctrl-C behaves as in a plain run: the first asks the driver to stop after the refresh in flight
(the plan's stop file), the second ends the application. Each refresh stays one atomic commit.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import time
from pathlib import Path

from dtcli.engine.launch.launcher import (
    LaunchResult,
    await_driver,
    class_archive_of,
    driver_conf,
    handle,
    launch,
    lock_fds,
    noting_application,
    owner_args,
    submit_command,
    submit_env,
    write_plan,
)
from dtcli.engine.protocol import STOP_FILE, TOKEN_ENV
from dtcli.events import Events, PlanStarted, RunEvent, Started, Stopping
from dtcli.model import Plan, Project
from dtcli.redact import scrub_file
from dtcli.state.lock import Held

DEFAULT_IDLE_TIMEOUT = 300.0   # seconds: a few minutes, so a cluster is freed between sparse passes
RESTART_MARGIN = 5.0           # restart ourselves this long before the driver's own idle exit


class WarmEngine:
    def __init__(self, idle_timeout: float = DEFAULT_IDLE_TIMEOUT):
        self.idle_timeout = idle_timeout
        self.starts = 0                      # applications started so far (tests, benchmarks)
        self._proc: subprocess.Popen | None = None
        self._command: list[str] | None = None
        self._log = None
        self._log_path: Path | None = None
        self._idle_since = 0.0
        self._conn: socket.socket | None = None
        self._listener: socket.socket | None = None
        self._token = ""
        self._sharing: Held | None = None    # the lock whose description the application shares
        self._app_id: str | None = None
        self._driver: str | None = None     # its driver's process, as its Started event names it

    def launch(self, project: Project, plan: Plan, on_event: Events, lock: Held | None = None) -> LaunchResult:
        """Run the plan in the warm application (a `contract.Launcher`); `lock`: this pass's
        warehouse lock, which a newly started application inherits and shares between passes."""
        if project.spark_conf.get("spark.submit.deployMode") == "cluster":
            # the driver runs on the cluster and cannot reach dt's loopback socket: one
            # application per pass, as a plain `dt run`
            return launch(project, plan, on_event, lock)
        plan_path = write_plan(project, plan)
        settings, started = self.commands(project)
        if not self._usable(settings):
            self.close()
            self._start(project, settings, plan_path.parent, started, lock)
        if lock is not None:
            lock.note(spark_submit_pid=self._proc.pid, application_id=self._app_id)
        on_event = self._noting(lock, on_event)
        assert self._proc is not None and self._proc.stdout is not None
        result = LaunchResult(returncode=-1, log_path=self._log_path, started=True)   # it serves
        try:
            if self._conn is None:
                self._conn = self._accept()
            self._conn.sendall(f"{plan_path}\n".encode())
        except OSError:
            pass      # it died: reading its stdout ends at once, and the steps are lost
        interrupted = False
        while True:
            try:
                for line in self._proc.stdout:
                    handle(line, result, self._log, on_event)
                    if result.done:
                        break
                break
            except KeyboardInterrupt:
                if interrupted:
                    self.close(kill=True)
                    raise
                interrupted = True
                (plan_path.parent / STOP_FILE).write_text("stop requested\n")
                on_event(Stopping())
        if result.done:
            result.returncode = 0
            self._idle_since = time.monotonic()
        else:       # the application ended mid-plan: api.execute records the lost steps
            result.returncode = self._proc.wait()
            self.close()
            await_driver(self._driver)      # once its driver writes nothing more
        result.interrupted = interrupted    # reported by the caller, with what did and did not run
        return result

    @staticmethod
    def commands(project: Project) -> tuple[list[str], list[str]]:
        """(the command the restart check compares, the command an application is started
        with): the same but for the class archive's option, which only the second has."""
        conf = driver_conf(project)
        archive = class_archive_of(project, write=False, conf=conf)
        return (submit_command(project, None, conf=conf),
                submit_command(project, None, archive=archive, conf=conf))

    def _noting(self, lock: Held | None, on_event: Events) -> Events:
        noted = noting_application(lock, on_event)

        def seen(event: RunEvent) -> None:
            if isinstance(event, PlanStarted):
                self._app_id = event.application_id
            elif isinstance(event, Started):
                self._driver = event.driver or None
            noted(event)
        return seen

    def _usable(self, settings: list[str]) -> bool:
        if self._proc is None or self._proc.poll() is not None or settings != self._command:
            return False
        margin = min(RESTART_MARGIN, self.idle_timeout / 2)
        return time.monotonic() - self._idle_since < self.idle_timeout - margin

    def _start(self, project: Project, settings: list[str], run_dir: Path, started: list[str],
               lock: Held | None) -> None:
        """`settings`: the command the restart check compares; `started`: the same with the class
        archive's option (what is run)."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._token = secrets.token_hex(16)
        address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        command = started + ["--serve", address, f"{self.idle_timeout:g}", f"dt:{project.name}",
                              *owner_args(project, "warm")]
        self._log_path = run_dir / "spark-submit.log"
        self._log = open(self._log_path, "w", encoding="utf-8")   # noqa: SIM115 (closed in close())
        # Its own session, as in launcher.launch: Ctrl-C reaches dt only. It inherits the
        # warehouse lock's description, which stays open (unlocked between passes) while the
        # application lives, and is locked again by the next pass: a dt killed mid-pass leaves
        # the lock held until the refresh in flight is over.
        self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=self._log, text=True, cwd=project.root, start_new_session=True,
                                      env={**submit_env(), TOKEN_ENV: self._token}, pass_fds=lock_fds(lock))
        if lock is not None:
            lock.share()
        self._sharing, self._app_id, self._driver = lock, None, None
        self._command = settings
        self.starts += 1

    def _accept(self) -> socket.socket:
        """The driver's connection (it connects before building its session), checked by token."""
        self._listener.settimeout(0.5)
        while self._proc is not None and self._proc.poll() is None:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(30)
            hello = conn.makefile("r", encoding="utf-8").readline().strip()
            conn.settimeout(None)
            if secrets.compare_digest(hello, self._token):
                self._listener.close()
                self._listener = None
                return conn
            conn.close()
        raise OSError("the Spark application exited before it connected")

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def close(self, kill: bool = False) -> None:
        """End the application: closing its connection lets it finish and exit; `kill` ends it now."""
        proc, self._proc = self._proc, None
        conn, self._conn = self._conn, None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if proc is not None:
            try:
                if kill or conn is None:     # (not connected yet: it would wait for a plan)
                    proc.terminate()
                else:
                    conn.close()
                proc.wait(timeout=None if kill else 120)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if conn is not None:
            conn.close()
        if self._log is not None:
            self._log.close()
            self._log = None
            if self._log_path is not None:
                scrub_file(self._log_path)    # Spark's stderr went straight to the file
        sharing, self._sharing = self._sharing, None
        if sharing is not None:
            sharing.unshare()     # the application is gone: nobody shares the lock
