"""One writer per warehouse on S3: a lease object, `<warehouse>/_dt/lease.json`.

An object store has no `flock`, and a crashed holder cannot release anything; so the lock is a
lease. It is taken by creating the object with a conditional put (`If-None-Match: *`: S3 creates
it only if it does not exist, atomically), holds an owner id and an expiry ~60 s ahead, and is
renewed every ~20 s by each process working for that owner: dt itself, and the Spark driver it
launched (which learns the owner from DT_LEASE, so a refresh outliving a killed dt stays
covered until the driver ends). A lease past its expiry was left by a dead holder: the next dt
takes it over with a put conditional on the object's ETag (`If-Match`), so of two dt processes
racing for a stale lease only one wins. Release deletes it, again only if it is still ours.

Expiry is compared with the local clock: machines sharing a warehouse must agree on the time
to well within the lease's 60 s (NTP does). This serialises dt's runs only; what it means for
other writers of the same tables is in docs/deployment.md.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from urllib.parse import urlparse

from dtcli.errors import LockTimeout
from dtcli.model import join_path
from dtcli.state import storage

TTL_SECONDS = 60.0
RENEW_SECONDS = 20.0
POLL_SECONDS = 1.0
LEASE_ENV = "DT_LEASE"    # "<lease uri> <owner id>": handed to the Spark driver dt launches
_PRECONDITION = ("PreconditionFailed", "412", "ConditionalRequestConflict")


def supports(warehouse: str) -> bool:
    return warehouse.startswith(("s3a://", "s3://"))


def lease_uri(warehouse: str) -> str:
    return join_path(warehouse, "_dt", "lease.json")


def _refused(err: Exception) -> bool:
    code = str(getattr(err, "response", {}).get("Error", {}).get("Code", ""))
    return code in _PRECONDITION


def _missing(err: Exception) -> bool:
    return str(getattr(err, "response", {}).get("Error", {}).get("Code", "")) in ("NoSuchKey", "404")


class Lease:
    """The lease on one warehouse, for one owner id."""

    def __init__(self, uri: str, owner: str | None = None, holder: str = ""):
        parsed = urlparse(uri)
        self.uri, self.bucket, self.key = uri, parsed.netloc, parsed.path.lstrip("/")
        self.owner = owner or uuid.uuid4().hex
        self.holder = holder          # who, for the "busy" message: pid, host, command, since
        self.client = storage.s3_client(uri)
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _body(self) -> bytes:
        return json.dumps({"owner": self.owner, "holder": self.holder,
                           "expires": time.time() + TTL_SECONDS}).encode()

    def _read(self) -> tuple[dict, str] | None:
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except storage.s3_errors() as err:
            if _missing(err):
                return None
            raise
        try:
            return json.loads(got["Body"].read()), got["ETag"]
        except ValueError:
            return {"expires": 0}, got["ETag"]    # unreadable: treat as stale

    def try_acquire(self) -> dict | None:
        """Take the lease if it is free or stale; else the current holder's content."""
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.key, Body=self._body(), IfNoneMatch="*")
            return None
        except storage.s3_errors() as err:
            if not _refused(err):
                raise
        found = self._read()
        if found is None:
            return self.try_acquire()          # released in between
        content, etag = found
        if float(content.get("expires", 0)) > time.time():
            return content
        try:    # a dead holder's lease: take it over, unless another dt did first
            self.client.put_object(Bucket=self.bucket, Key=self.key, Body=self._body(), IfMatch=etag)
            return None
        except storage.s3_errors() as err:
            if not _refused(err):
                raise
            found = self._read()
            return found[0] if found else {"holder": "another dt process"}

    def renew(self) -> bool:
        """Push the expiry forward if the lease is still ours (False: it was taken over)."""
        for _ in range(3):       # dt and its driver renew the same owner: retry a lost race
            found = self._read()
            if found is None or found[0].get("owner") != self.owner:
                return False
            try:
                self.client.put_object(Bucket=self.bucket, Key=self.key, Body=self._body(), IfMatch=found[1])
                return True
            except storage.s3_errors() as err:
                if not _refused(err):
                    raise
        return False

    def keep_renewed(self) -> None:
        def loop() -> None:
            while not self._stop.wait(RENEW_SECONDS):
                try:
                    if not self.renew():
                        self.lost = True
                        sys.stderr.write(f"dt: the warehouse lease {self.uri} ended or was taken over\n")
                        return
                except Exception as err:   # broad: a blip may pass; a dead renewer lets the lease expire mid-refresh
                    sys.stderr.write(f"dt: could not renew the warehouse lease: {type(err).__name__}\n")

        self._thread = threading.Thread(target=loop, name="dt-lease", daemon=True)
        self._thread.start()

    def stop_renewing(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def release(self) -> None:
        self.stop_renewing()
        found = self._read()
        if found is not None and found[0].get("owner") == self.owner:
            try:
                self.client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=found[1])
            except storage.s3_errors() as err:
                if not _refused(err):
                    raise


@contextmanager
def warehouse_lease(warehouse: str, command: str, wait_seconds: float = 0.0) -> Iterator[Lease]:
    """Hold the warehouse's lease; wait up to `wait_seconds` for another dt process to finish."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    lease = Lease(lease_uri(warehouse), holder=f"pid {os.getpid()} on {socket.gethostname()}, "
                                               f"`dt {command}` since {stamp}")
    deadline = time.monotonic() + max(0.0, wait_seconds)
    told = False
    while True:
        holder = lease.try_acquire()
        if holder is None:
            break
        if not told and wait_seconds > 0:
            told = True
            sys.stderr.write(f"waiting up to {wait_seconds:g} s for the warehouse lease "
                             f"({holder.get('holder') or lease.uri})\n")
        if time.monotonic() >= deadline:
            raise LockTimeout(f"another dt process holds the warehouse lease {lease.uri}"
                              + (f" ({holder['holder']})" if holder.get("holder") else "")
                              + (f"; waited {wait_seconds:g} s" if wait_seconds else ""),
                              hint="wait for it to finish (a lease left by a crashed process expires "
                                   f"within {TTL_SECONDS:g} s), or pass --wait SECONDS")
        time.sleep(POLL_SECONDS)
    lease.keep_renewed()
    previous = os.environ.get(LEASE_ENV)
    os.environ[LEASE_ENV] = f"{lease.uri} {lease.owner}"   # spark-submit inherits it
    try:
        yield lease
    finally:
        if previous is None:
            os.environ.pop(LEASE_ENV, None)
        else:
            os.environ[LEASE_ENV] = previous
        lease.release()


_driver_lease: Lease | None = None


def renew_in_driver() -> Lease | None:
    """In the Spark driver: keep renewing the lease dt holds for this application (if any)."""
    global _driver_lease
    value = os.environ.get(LEASE_ENV, "")
    if " " not in value:
        return None
    uri, owner = value.rsplit(" ", 1)
    _driver_lease = Lease(uri, owner=owner)
    _driver_lease.keep_renewed()
    return _driver_lease


def driver_lease_lost() -> bool:
    """In the Spark driver: the lease ended or was taken over, so no further refresh may start."""
    return _driver_lease is not None and _driver_lease.lost
