"""Without a JVM: the warehouse lock is handed to spark-submit (it outlives a killed dt and is
named in the busy message), and the driver's owner watch sees dt go however it goes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from dtcli.engine.launch.launcher import lock_fds
from dtcli.engine.owner_watch import Heartbeat, OwnerWatch
from dtcli.errors import LockTimeout
from dtcli.state.lock import WarehouseLock, read_holder, warehouse_lock
from dtcli.state.owner import alive, start_time

# A stand-in for dt: takes the lock, starts a long-lived child ("spark-submit") that inherits it,
# says both pids, then waits to be killed.
FAKE_DT = """
import os, subprocess, sys, time
from types import SimpleNamespace
from dtcli.state.lock import warehouse_lock
from dtcli.engine.launch.launcher import lock_fds
project = SimpleNamespace(warehouse=sys.argv[1], target_dir=None)
with warehouse_lock(project, "run") as held:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True, pass_fds=lock_fds(held))
    held.note(spark_submit_pid=child.pid, application_id="local-123")
    print(os.getpid(), child.pid, flush=True)
    time.sleep(60)
"""


def _project(tmp_path):
    return SimpleNamespace(warehouse=str(tmp_path / "wh"), target_dir=tmp_path / "target")


def test_a_killed_dt_leaves_the_lock_with_its_application_until_that_exits(tmp_path):
    project = _project(tmp_path)
    fake = subprocess.Popen([sys.executable, "-c", FAKE_DT, project.warehouse], stdout=subprocess.PIPE, text=True)
    dt_pid, app_pid = map(int, fake.stdout.readline().split())
    try:
        with pytest.raises(LockTimeout) as busy, warehouse_lock(project, "run"):   # dt alive: named
            pass
        assert f"pid {dt_pid}, `dt run`" in str(busy.value) and "local-123" in str(busy.value)

        fake.send_signal(signal.SIGKILL)
        fake.wait()
        with pytest.raises(LockTimeout) as busy, warehouse_lock(project, "run"):   # its application holds it
            pass
        message = str(busy.value)
        assert f"(pid {dt_pid}) is gone" in message and f"spark-submit pid {app_pid}" in message, message
        assert "application local-123" in message

        threading.Timer(0.5, os.kill, [app_pid, signal.SIGKILL]).start()
        started = time.monotonic()
        with warehouse_lock(project, "run", wait_seconds=30) as held:   # --wait: until it exits
            assert time.monotonic() - started >= 0.4
            assert held.holder["dt_pid"] == os.getpid()
        assert read_holder(tmp_path / "wh" / "_dt" / "lock")["dt_pid"] == os.getpid()
    finally:
        for pid in (dt_pid, app_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_lock_held_by_this_process_and_released_is_free_again(tmp_path):
    project = _project(tmp_path)
    with warehouse_lock(project, "run"):
        pass
    with warehouse_lock(project, "refresh") as held:
        assert held.holder["command"] == "dt refresh"


def test_a_watch_locks_the_description_its_application_shares_pass_after_pass(tmp_path):
    """`dt run --watch`: one WarehouseLock for every pass; the warm application inherits the
    first pass's description, which stays open (unlocked) between passes and is locked again by
    the next, so the application holds the lock while a pass runs and other commands get in
    between passes."""
    project = _project(tmp_path)
    taker = WarehouseLock()
    with taker.hold(project, "run") as first:
        app = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True, pass_fds=lock_fds(first))
        first.share()
    try:
        with warehouse_lock(project, "suspend d"):            # between passes: free
            pass
        with taker.hold(project, "run") as second:
            assert second.fd == first.fd                      # the description the application has
            with pytest.raises(LockTimeout), warehouse_lock(project, "run"):
                pass
        first.unshare()                                       # the application is gone
    finally:
        app.kill()
        app.wait()
    with warehouse_lock(project, "run") as held:
        assert held.holder["command"] == "dt run"


def _dead_process() -> tuple[int, str | None]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    who = (proc.pid, start_time(proc.pid))
    proc.kill()
    proc.wait()
    return who


def _until(predicate, seconds: float = 5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    return predicate()


def test_owner_watch_sees_the_owner_die():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    gone = []
    watch = OwnerWatch((proc.pid, start_time(proc.pid)), poll=0.05, on_gone=gone.append).start()
    try:
        time.sleep(0.2)
        assert watch.gone() is None
        proc.kill()
        proc.wait()
        reason = _until(watch.gone)
        assert reason and reason.startswith(f"dt (pid {proc.pid}) is gone")
        assert gone == [reason]
    finally:
        watch.stop()


def test_a_recycled_pid_is_not_the_owner():
    me = os.getpid()
    assert alive(me, start_time(me)) and not alive(me, "0")
    assert OwnerWatch((me, "0")).check().startswith(f"dt (pid {me}) is gone")
    assert OwnerWatch((me, start_time(me))).check() is None
    assert not alive(*_dead_process())


def test_a_stale_heartbeat_means_the_owner_is_gone(tmp_path):
    path = str(tmp_path / "run" / "heartbeat")
    with Heartbeat(path, every=0.05):
        watch = OwnerWatch(heartbeat=path, heartbeat_timeout=0.5, poll=0.05).start()
        time.sleep(1.0)
        assert watch.gone() is None             # beating: alive, however long it runs
    assert not (tmp_path / "run").exists()      # a run that ended leaves no heartbeat behind
    reason = _until(watch.gone)                 # stopped beating (dt died)
    assert reason and "stopped renewing its heartbeat" in reason
    missing = OwnerWatch(heartbeat=str(tmp_path / "never"), heartbeat_timeout=0.2, poll=0.05).start()
    assert _until(missing.gone)


def test_a_closed_connection_or_a_lost_lease_stop_it_and_a_dead_parent_ends_it():
    closed = threading.Event()
    watch = OwnerWatch(closed=closed)
    assert watch.check() is None
    closed.set()
    assert "closed its connection" in watch.check()
    assert "could not be renewed" in OwnerWatch(renew=lambda: False).check()
    ended = []
    OwnerWatch(parent=os.getppid() + 1, on_parent_gone=lambda: ended.append(True)).check()
    assert ended == [True]


def test_a_lost_s3_lease_stops_the_driver_starting_refreshes(tmp_path, monkeypatch):
    from dtcli.state import lease, lock

    renew = lock.renewer("s3a://lake/wh")
    assert renew() is True                                     # no lease taken in this driver
    monkeypatch.setattr(lease, "_driver_lease", SimpleNamespace(lost=True))
    watch = OwnerWatch(renew=renew, renew_every=0)
    assert "could not be renewed" in watch.check()
    assert lock.renewer(str(tmp_path))() is True               # a flock: nothing to renew
