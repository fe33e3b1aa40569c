"""One writer per warehouse: an advisory `fcntl` lock on `<warehouse>/_dt/lock`.

Delta's optimistic concurrency is not guaranteed on a local file system, and two runs planning
from the same frontier would refresh twice; so commands that write (run, refresh, drop, suspend,
resume) hold this lock from planning to the last commit. The kernel releases it when the process
dies, so a crash never leaves a stale lock behind. The file's content (pid, command, time) is
only there to make the "busy" message useful.

Warehouses on S3 cannot be flock-ed: there the lock is a lease object in the warehouse
(lease.py). Other object stores (abfss://, gs://) keep the lock file in the project's `target/`
folder, which serialises the runs started from one checkout.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from dtcli.errors import LockTimeout
from dtcli.model import Project
from dtcli.state import lease

POLL_SECONDS = 0.2


def lock_path(project: Project) -> Path:
    if "://" in project.warehouse:
        return project.target_dir / "warehouse.lock"
    return Path(project.warehouse) / "_dt" / "lock"


@contextmanager
def warehouse_lock(project: Project, command: str, wait_seconds: float = 0.0) -> Iterator[None]:
    """Hold the warehouse lock; wait up to `wait_seconds` for another dt process to finish."""
    if lease.supports(project.warehouse):
        with lease.warehouse_lease(project.warehouse, command, wait_seconds):
            yield
        return
    path = lock_path(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(0.0, wait_seconds)
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and wait_seconds > 0:
                    told = True   # a silent wait looks like a hang
                    sys.stderr.write(f"waiting up to {wait_seconds:g} s for the warehouse lock "
                                     f"({_holder(path) or path})\n")
                if time.monotonic() >= deadline:
                    holder = _holder(path)
                    raise LockTimeout(
                        f"another dt process holds the warehouse lock {path}"
                        + (f" ({holder})" if holder else "")
                        + (f"; waited {wait_seconds:g} s" if wait_seconds else ""),
                        hint="wait for it to finish, or pass --wait SECONDS to queue behind it") from None
                time.sleep(POLL_SECONDS)
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, `dt {command}` since {stamp}\n".encode(), 0)
        yield
    finally:
        os.close(fd)   # closing the descriptor releases the flock


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""
