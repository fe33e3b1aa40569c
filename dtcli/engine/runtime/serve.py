"""The warm application's loop (`driver.py --serve`): one SparkSession, many plans.

`dt run --watch` keeps one Spark application for all its passes (see `engine/launch/warm.py`, its
other end). The driver connects to a socket dt listens on (spark-submit does not pass its stdin
on to a Python application), proves it is the application dt started with a token from its
environment, and then reads one plan path per line; it runs each plan as `driver.py PLAN.json`
would, with the same events on stdout, ending in "done".

The connection is also how the driver knows its owner is alive: the kernel closes dt's end
however dt ends (SIGKILL included). On EOF the driver lets the refresh in flight commit (or
abandon it: commits are atomic), starts no other, and exits. After `idle_timeout`
seconds without a plan it exits too, so a cluster's resources are freed between sparse passes;
dt starts a new application when the next pass needs Spark.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from dtcli.engine.protocol import IDLE_EXIT, OWNER_GONE, STOP_FILE, TOKEN_ENV
from dtcli.events import Events, Exited


def connect(address: str):
    """The line stream from dt: connect to HOST:PORT and introduce ourselves with the token."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.settimeout(None)
    sock.sendall((os.environ.get(TOKEN_ENV, "") + "\n").encode())
    return sock.makefile("r", encoding="utf-8")


class PlanInbox:
    """Plan paths from dt, read by a daemon thread so that the owner's death (EOF) is seen
    while a plan runs, not only between plans."""

    def __init__(self, stream):
        self._stream = stream
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.owner_gone = threading.Event()
        threading.Thread(target=self._read, name="dt-plan-inbox", daemon=True).start()

    def _read(self) -> None:
        for line in self._stream:
            if line.strip():
                self._lines.put(line.strip())
        self.owner_gone.set()
        self._lines.put(None)

    def next(self, timeout: float) -> str | None:
        """The next plan path; None when the owner is gone or nothing came within `timeout`."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return None


def serve(inbox: PlanInbox, idle_timeout: float, emit: Events,
          run_plan: Callable[..., int]) -> int:
    """Run plans as they arrive until the owner goes away or none comes for `idle_timeout` s.
    `run_plan(path, should_stop)` executes one plan in the warm session."""
    while True:
        path = inbox.next(idle_timeout)
        if path is None or inbox.owner_gone.is_set():   # a plan its dead owner sent: not started
            reason = OWNER_GONE if inbox.owner_gone.is_set() else IDLE_EXIT
            emit(Exited(reason))
            return 0
        stop_file = Path(path).with_name(STOP_FILE)
        run_plan(Path(path), lambda stop_file=stop_file: inbox.owner_gone.is_set() or stop_file.exists())
