"""The Spark application never outlives the dt process that owns it.

A driver cannot rely on signals to learn that dt is gone: dt starts spark-submit in its own
session (so a terminal's Ctrl-C reaches dt only), and SIGKILL reaches nobody else. So the
driver watches its owner itself, from a daemon thread:

- dt's pid and start time (`--owner PID:START`): a recycled pid is not dt;
- a heartbeat file dt rewrites every few seconds (`--heartbeat PATH`), where the driver does
  not run on dt's machine (cluster deploy mode) and cannot see dt's pid;
- the warm application's socket closing (see serve.py), which the caller passes in as an event;
- the warehouse lock's renewal (a lease on an object store; a flock needs none).

Once the owner is gone the refresh in flight commits or not (one atomic commit either way), no
other refresh starts, and the rest of the plan is recorded FAILED with the reason. The parent
JVM dying is different: nothing can commit any more, and the driver exits at once, writing
nothing, because the lock the JVM held on the warehouse is no longer held (a history row it was
already appending still lands: dt waits for the driver to end before it records the refreshes
it did not hear about, launcher.await_driver).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from urllib.parse import urlparse

from dtcli.state import storage
from dtcli.state.owner import alive

POLL_SECONDS = 0.5
HEARTBEAT_EVERY = 5.0        # dt rewrites its heartbeat this often
HEARTBEAT_TIMEOUT = 60.0     # an unchanged heartbeat for this long: dt is gone (or cut off)
PARENT_GONE_EXIT = 3
RENEW_EVERY = 5.0            # seconds between renewals of the warehouse lock (a lease's term is longer)


class OwnerWatch:
    def __init__(self, owner: tuple[int, str | None] | None = None, *, heartbeat: str | None = None,
                 heartbeat_timeout: float = HEARTBEAT_TIMEOUT, closed: threading.Event | None = None,
                 renew: Callable[[], bool] = lambda: True, parent: int | None = None,
                 on_parent_gone: Callable[[], None] = lambda: os._exit(PARENT_GONE_EXIT),
                 on_gone: Callable[[str], None] = lambda reason: None,
                 poll: float = POLL_SECONDS, renew_every: float = RENEW_EVERY):
        self.owner, self.heartbeat, self.heartbeat_timeout = owner, heartbeat, heartbeat_timeout
        self.closed, self.renew, self.parent = closed, renew, parent
        self.on_parent_gone, self.on_gone, self.poll = on_parent_gone, on_gone, poll
        self.renew_every, self._renewed = renew_every, float("-inf")
        self._reason: str | None = None
        self._beat: tuple[str | None, float] = (None, time.monotonic())
        self._stop = threading.Event()

    def start(self) -> OwnerWatch:
        threading.Thread(target=self._loop, name="dt-owner-watch", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def gone(self) -> str | None:
        """Why no further refresh may start (the owner is gone), or None."""
        return self._reason

    def _loop(self) -> None:
        while not self._stop.is_set() and self._reason is None:
            self.check()
            self._stop.wait(self.poll)

    def check(self) -> str | None:
        if self.parent is not None and os.getppid() != self.parent:
            self.on_parent_gone()
        if self._reason is None:
            self._reason = self._why()
            if self._reason is not None:
                self.on_gone(self._reason)
        return self._reason

    def _why(self) -> str | None:
        if self.owner is not None and not alive(*self.owner):
            return f"dt (pid {self.owner[0]}) is gone; its Spark application started no further refresh"
        if self.closed is not None and self.closed.is_set():
            return "dt closed its connection to the Spark application (it is gone); no further refresh started"
        if self.heartbeat is not None and self._heartbeat_stale():
            return (f"dt stopped renewing its heartbeat {self.heartbeat} for {self.heartbeat_timeout:g} s"
                    " (it is gone); no further refresh started")
        if time.monotonic() - self._renewed < self.renew_every:
            return None
        self._renewed = time.monotonic()
        try:
            renewed = self.renew()
        except Exception as exc:   # broad: a lease that cannot be renewed, whyever, is as lost as an expired one
            renewed, exc_text = False, f": {exc}"
        else:
            exc_text = ""
        if not renewed:
            return f"the warehouse lock could not be renewed{exc_text}; no further refresh started"
        return None

    def _heartbeat_stale(self) -> bool:
        """By the driver's own clock: dt's and a cluster node's clocks need not agree."""
        content = read_heartbeat(self.heartbeat)
        last, since = self._beat
        now = time.monotonic()
        if content != last:
            self._beat = (content, now)
            return False
        return now - since > self.heartbeat_timeout


def read_heartbeat(path: str) -> str | None:
    try:
        if "://" not in path:
            with open(path, encoding="utf-8") as f:
                return f.read()
        if path.startswith(("s3a://", "s3://")):
            bucket, key = _bucket_key(path)
            return storage.s3_client(path).get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        from pyarrow import fs

        filesystem, inner = fs.FileSystem.from_uri(path)
        with filesystem.open_input_stream(inner) as f:
            return f.read().decode()
    except _store_errors():    # unreadable: a missing beat reads as stale
        return None


def write_heartbeat(path: str, text: str) -> None:
    if "://" not in path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)       # a reader never sees a half-written beat
        return
    if path.startswith(("s3a://", "s3://")):    # with the endpoint and keys deltalake uses
        bucket, key = _bucket_key(path)
        storage.s3_client(path).put_object(Bucket=bucket, Key=key, Body=text.encode())
        return
    from pyarrow import fs

    filesystem, inner = fs.FileSystem.from_uri(path)
    with filesystem.open_output_stream(inner) as f:
        f.write(text.encode())


def remove_heartbeat(path: str) -> None:
    """Best effort: a run that ended leaves no heartbeat behind (a missing beat reads as stale)."""
    try:
        if "://" not in path:
            os.remove(path)
            os.rmdir(os.path.dirname(path))      # the run's folder, when nothing else is in it
        elif path.startswith(("s3a://", "s3://")):
            bucket, key = _bucket_key(path)
            storage.s3_client(path).delete_object(Bucket=bucket, Key=key)
        else:
            from pyarrow import fs

            filesystem, inner = fs.FileSystem.from_uri(path)
            filesystem.delete_file(inner)
    except _store_errors():
        pass


def _store_errors() -> tuple[type[Exception], ...]:
    """What reading or removing a heartbeat raises when it cannot: the file system's error,
    pyarrow's for another store (one it does not support included), boto's for S3. Called in
    an `except` clause, so pyarrow and botocore are imported only once something was raised."""
    from pyarrow.lib import ArrowException

    return (OSError, ValueError, ArrowException, *storage.s3_errors())


def _bucket_key(path: str) -> tuple[str, str]:
    parsed = urlparse(path)
    return parsed.netloc, parsed.path.lstrip("/")


class Heartbeat:
    """dt's side: rewrite `path` every `every` seconds until stopped (a daemon thread, so it
    stops beating the moment dt dies, however it dies)."""

    def __init__(self, path: str, every: float = HEARTBEAT_EVERY):
        self.path, self.every = path, every
        self._stop = threading.Event()

    def __enter__(self) -> Heartbeat:
        write_heartbeat(self.path, f"0 {os.getpid()}\n")
        threading.Thread(target=self._loop, name="dt-heartbeat", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        remove_heartbeat(self.path)     # the application has exited: nobody reads it any more

    def _loop(self) -> None:
        beat = 0
        while not self._stop.wait(self.every):
            beat += 1
            try:
                write_heartbeat(self.path, f"{beat} {os.getpid()}\n")
            except OSError:
                pass      # a missed beat is tolerated for HEARTBEAT_TIMEOUT seconds
