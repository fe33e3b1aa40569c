"""One writer per warehouse: an advisory `fcntl` lock on `<warehouse>/_dt/lock`, held until the
last process that can commit to the warehouse has exited.

Delta's optimistic concurrency is not guaranteed on a local file system, and two runs planning
from the same frontier would refresh twice; so commands that write (run, refresh, drop, suspend,
resume) hold this lock from planning to the last commit. A flock belongs to an open file
description, not to a process: the launcher passes the locked descriptor on to spark-submit
(`Held.fd`), so when dt is killed the lock stays held until its Spark application has exited
too, and the next run waits for that application (`--wait`) or names it. The kernel releases
the lock when the last holder dies, so a crash never leaves a stale lock behind. The file's
content (who holds it: dt's pid, its spark-submit's pid, the application id) is only there to
make the "busy" message useful.

Warehouses on S3 cannot be flock-ed: there the lock is a lease object in the warehouse
(lease.py) that dt renews, and the Spark driver it launched renews too until the application
ends, so a killed dt's application stays covered until it stops and the lease then expires.
Other object stores (abfss://, gs://) keep the lock file in the project's `target/` folder,
which serialises the runs started from one checkout.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict

from dtcli.errors import LockTimeout
from dtcli.model import Project
from dtcli.state import lease
from dtcli.state.owner import alive, start_time

POLL_SECONDS = 0.2


def lock_path(project: Project) -> Path:
    if "://" in project.warehouse:
        return project.target_dir / "warehouse.lock"
    return Path(project.warehouse) / "_dt" / "lock"


class Holder(TypedDict, total=False):
    """What the lock file says about who holds the lock (JSON), for the "busy" message."""

    dt_pid: int
    dt_start: str | None          # the process's start time: a recycled pid is not the holder
    command: str                  # "dt run", "dt drop x", ...
    since: str
    spark_submit_pid: int
    application_id: str
    lease: str                    # an S3 lease's URI (the lock is a lease there)
    text: str                     # a lock file written by an older dt, as it reads


@dataclass
class Held:
    """The lock as this process holds it: `fd` is what a child must inherit to keep holding it.
    It is handed down explicitly (api → launcher): nothing looks it up."""

    path: Path
    fd: int | None
    holder: Holder = field(default_factory=Holder)
    taker: WarehouseLock | None = field(default=None, repr=False, compare=False)

    def note(self, **facts: str | int | None) -> None:
        """Add to what the lock file says about its holder (spark-submit's pid, the app id)."""
        self.holder.update({k: v for k, v in facts.items() if v is not None})
        if self.fd is not None:
            text = json.dumps(self.holder, sort_keys=True) + "\n"
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text.encode(), 0)

    def share(self) -> None:
        """Keep the lock's description open after the lock scope ends, unlocked: a long-lived
        child (the warm application of `dt run --watch`) holds it, and the next scope of the same
        `WarehouseLock` locks that description again, so the child holds that lock too while it
        commits."""
        if self.fd is not None and self.taker is not None:
            self.taker.keep(self.path, self.fd)

    def unshare(self) -> None:
        """The child that shared the description is gone: nobody needs it kept open."""
        if self.taker is not None:
            self.taker.release_kept()


def warehouse_lock(project: Project, command: str, wait_seconds: float = 0.0):
    """Hold the warehouse lock; wait up to `wait_seconds` for another run (or the Spark
    application of a run whose dt is gone) to finish. Yields a `Held`. A fresh taker: for
    scopes that share nothing with a child that outlives them (see `WarehouseLock`)."""
    return WarehouseLock().hold(project, command, wait_seconds)


class WarehouseLock:
    """Takes the warehouse lock scope after scope (`hold`), for one owner: the passes of a
    `dt run --watch` take one each. Between scopes it keeps at most one description open that
    a living child shares (`Held.share`), and locks that same description in the next scope:
    a flock belongs to the open description, so the child holds each pass's lock too, and keeps
    it until its refresh in flight is over when dt is killed mid-pass."""

    def __init__(self) -> None:
        self._kept: tuple[str, int] | None = None    # (lock path, description) a living child shares
        self._holding: set[str] = set()              # lock paths one of this taker's scopes holds now

    def hold(self, project: Project, command: str, wait_seconds: float = 0.0):
        """Hold the warehouse lock (a context manager yielding a `Held`)."""
        if lease.supports(project.warehouse):
            return self._leased(project, command, wait_seconds)
        return self._flock(project, command, wait_seconds)

    def keep(self, path: Path, fd: int) -> None:
        self._kept = (str(path), fd)

    def release_kept(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None and kept[0] not in self._holding:
            os.close(kept[1])        # (a scope holding it closes it as it ends)

    def _kept_fd(self, key: str) -> int | None:
        return self._kept[1] if self._kept is not None and self._kept[0] == key else None

    @contextmanager
    def _leased(self, project: Project, command: str, wait_seconds: float) -> Iterator[Held]:
        """The S3 lease, seen as a `Held` with nothing for a child to inherit: the driver renews
        the lease itself (lease.renew_in_driver)."""
        key = str(lock_path(project))
        with lease.warehouse_lease(project.warehouse, command, wait_seconds) as taken:
            self._holding.add(key)
            try:
                yield Held(lock_path(project), None, {"lease": taken.uri, "command": f"dt {command}"}, self)
            finally:
                self._holding.discard(key)

    @contextmanager
    def _flock(self, project: Project, command: str, wait_seconds: float) -> Iterator[Held]:
        path = lock_path(project)
        key = str(path)
        fd = self._kept_fd(key)
        if key in self._holding and fd is not None:   # the shared description would lock twice
            raise _busy(path, 0.0)
        path.parent.mkdir(parents=True, exist_ok=True)
        if fd is None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(0.0, wait_seconds)
        told = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not told and wait_seconds > 0:
                        told = True   # a silent wait looks like a hang
                        sys.stderr.write(f"waiting up to {wait_seconds:g} s for the warehouse lock "
                                         f"({describe(read_holder(path)) or path})\n")
                    if time.monotonic() >= deadline:
                        raise _busy(path, wait_seconds) from None
                    time.sleep(POLL_SECONDS)
        except BaseException:
            if self._kept_fd(key) != fd:
                os.close(fd)
            raise
        lock = Held(path, fd, taker=self)
        lock.note(dt_pid=os.getpid(), dt_start=start_time(os.getpid()), command=f"dt {command}",
                  since=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        self._holding.add(key)
        try:
            yield lock
        finally:
            self._holding.discard(key)
            if self._kept_fd(key) == fd:
                fcntl.flock(fd, fcntl.LOCK_UN)   # the child keeps the description, not the lock
            else:
                os.close(fd)   # a child that inherited it keeps the lock until it exits


def renewer(warehouse: str, holder: dict[str, str | None] | None = None) -> Callable[[], bool]:
    """What the driver calls every few seconds while it runs: False means the lock is lost
    and no further refresh may start. A flock needs no renewal; an S3 lease is renewed by the
    driver's own lease thread, which this asks."""
    if lease.supports(warehouse):
        return lambda: not lease.driver_lease_lost()
    return lambda: True


def _busy(path: Path, waited: float) -> LockTimeout:
    holder = describe(read_holder(path))
    return LockTimeout(
        f"another dt process holds the warehouse lock {path}" + (f" ({holder})" if holder else "")
        + (f"; waited {waited:g} s" if waited else ""),
        hint="wait for it to finish, or pass --wait SECONDS to queue behind it")


def read_holder(path: Path) -> Holder:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return {}
    try:
        holder = json.loads(text)
    except ValueError:
        return {"text": text} if text else {}       # written by an older dt
    return holder if isinstance(holder, dict) else {}


def describe(holder: Holder) -> str:
    """Who holds the lock, in words: a dt process, or the application of a dt that is gone."""
    if not holder:
        return ""
    if "text" in holder:
        return holder["text"]
    pid = holder.get("dt_pid")
    app = ", ".join(filter(None, [
        f"spark-submit pid {holder['spark_submit_pid']}" if holder.get("spark_submit_pid") else "",
        f"application {holder['application_id']}" if holder.get("application_id") else ""]))
    since = f" since {holder['since']}" if holder.get("since") else ""
    if pid and not alive(int(pid), holder.get("dt_start")):
        return (f"`{holder.get('command', 'dt')}` (pid {pid}) is gone, but its Spark application"
                f" ({app or 'still starting'}) is still finishing its refresh{since}")
    return f"pid {pid}, `{holder.get('command', 'dt')}`{since}" + (f"; {app}" if app else "")
