"""Emitting a run's OpenLineage events, from the `dt` process, off the run's path.

Where: the `dt` process, from the events the engine streams back (RefreshStarted, RefreshFinished
with the refresh's record) and the records dt writes itself (NO_DATA, a run that could not
start, an application that died). Not the Spark driver: it runs on a cluster without dt's
configuration or the backend's network and key, and the records dt writes itself have no
driver at all. Not the refresh history either: it is written from both processes, and the
history row of a refresh is written before dt sees it, so events would follow the same order
with more places to hook.

How: the run hands each event to one background thread and goes on; that thread sends them in
order through the client's transport. A backend that is down or slow must never fail or hold a
refresh: after the first failure (connection refused, an HTTP error, a timeout) nothing more is
sent in that run, and when the run ends it waits for unsent events at most `timeout` seconds in
all, then leaves them. Whatever went wrong is said once per run (a `Warned` event).
"""

from __future__ import annotations

import queue
import threading

from openlineage.client.event_v2 import JobEvent, RunState
from openlineage.client.event_v2 import RunEvent as LineageRunEvent

from dtcli.api.lineage_events import EventBuilder
from dtcli.api.lineage_transport import Destination, make_transport
from dtcli.events import Events, RefreshFinished, RefreshStarted, RunEvent, Warned
from dtcli.model import SUCCEEDED, Plan, RefreshRecord
from dtcli.planning.checked import Checked
from dtcli.redact import scrub

_STOP = object()


class Sender:
    """One thread sending events in order; stops sending at the first failure."""

    def __init__(self, dest: Destination):
        from openlineage.client import OpenLineageClient

        self.timeout = dest.timeout
        self.failure: str | None = dest.problem
        self.attempts = self.sent = self.dropped = 0
        self._abandoned = False        # close() gave up waiting and counted what was left: count nothing more
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        if self.failure is None:
            try:
                self._client = OpenLineageClient(transport=make_transport(dest))
            except Exception as exc:    # broad: a transport the client cannot build from OPENLINEAGE_CONFIG, whyever
                self.failure = f"the {dest.kind} transport of {dest.origin} could not be set up: {_one_line(exc)}"
                return
            self._thread = threading.Thread(target=self._run, name="dt-openlineage", daemon=True)
            self._thread.start()

    def fail(self, reason: str) -> None:
        """Stop sending (the first reason is the one said)."""
        with self._lock:
            self.failure = self.failure or reason

    def send(self, event: LineageRunEvent | JobEvent) -> None:
        with self._lock:
            if self.failure is not None or self._thread is None:
                self.dropped += 1
                return
        self._queue.put(event)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is _STOP:
                return
            with self._lock:
                if self._abandoned:
                    return
                if self.failure is not None:
                    self.dropped += 1
                    continue
                self.attempts += 1
            try:
                self._client.emit(event)
            except Exception as exc:    # broad: the sender thread's boundary; lineage never fails a run
                with self._lock:
                    self.failure = self.failure or _one_line(exc)
                    if self._abandoned:
                        return
                    self.dropped += 1
                continue
            with self._lock:
                if self._abandoned:
                    return
                self.sent += 1

    def close(self) -> None:
        """Wait for the events in flight, `timeout` seconds at most; the rest are dropped."""
        if self._thread is None:
            return
        self._queue.put(_STOP)
        self._thread.join(self.timeout)
        if self._thread.is_alive():
            with self._lock:
                left = max(0, self._queue.qsize() - 1) + 1     # the one in flight, and the ones queued (not _STOP)
                if self.failure is None:
                    # a backend that answers, slower than the run made events: say how many were left
                    self.failure = (f"{left} event{'s' if left != 1 else ''} still unsent when the run ended "
                                    f"(waited the configured timeout, {self.timeout:g} s; "
                                    f"{self.sent} sent)" if self.sent
                                    else f"the backend did not answer within {self.timeout:g} s")
                self.dropped += left
                self._abandoned = True
        try:
            self._client.transport.close(0)
        except Exception:   # broad: a third-party transport's shutdown; the run is over either way
            pass


class LineageRun:
    """The events of one `dt run` / `dt refresh` pass: wraps the run's `on_event`."""

    def __init__(self, checked: Checked, plan: Plan, on_event: Events, dest: Destination):
        self.on_event, self.dest = on_event, dest
        self.builder = EventBuilder(checked, dest.namespace, plan)
        self.steps = {s.name: s for s in plan.steps}
        self.started: set[str] = set()
        self.ended: set[str] = set()
        self.produced: dict[str, int] = {}      # DT -> the version it committed in this run
        self.warned = False
        self.sender = Sender(dest)
        self._build(lambda: self.builder.run_event(RunState.START))

    def __call__(self, event: RunEvent) -> None:
        self.on_event(event)
        if isinstance(event, RefreshStarted) and event.name in self.steps and event.name not in self.started:
            self.started.add(event.name)
            self._build(lambda: self.builder.refresh_started(self.steps[event.name], produced=self.produced))
        elif isinstance(event, RefreshFinished):
            self._ended(event.record)
        self._warn()

    def _ended(self, record: RefreshRecord) -> None:
        """A refresh's last event; a refresh that succeeded without the engine saying it started
        (NO_DATA, or one committed by an application that died) gets its START first."""
        step = self.steps.get(record.name)
        if step is None or record.name in self.ended:
            return
        self.ended.add(record.name)
        if record.state == SUCCEEDED and record.table_version is not None:
            self.produced[record.name] = record.table_version
        if record.state == SUCCEEDED and record.name not in self.started:
            self.started.add(record.name)
            self._build(lambda: self.builder.refresh_started(step, at=record.refresh_start_time,
                                                             produced=self.produced))
        self._build(lambda: self.builder.refresh_ended(step, record))

    def finish(self, records: list[RefreshRecord], *, interrupted: bool = False) -> None:
        """The refreshes dt recorded without announcing them, the run's own end; then wait (a
        bounded time) for the events in flight."""
        for record in records:
            self._ended(record)
        state = (RunState.ABORT if interrupted else
                 RunState.FAIL if any(r.failed for r in records) else RunState.COMPLETE)
        self._build(lambda: self.builder.run_event(state, records=records, interrupted=interrupted))
        self.sender.close()
        self._warn()

    def _build(self, make) -> None:
        try:
            event = make()
        except Exception as exc:      # broad: a fact dt could not turn into an event: say so, never fail a refresh
            self.sender.fail(f"an event could not be built: {_one_line(exc)}")
            return
        self.sender.send(event)

    def _warn(self) -> None:
        if self.warned or self.sender.failure is None:
            return
        self.warned = True
        self.on_event(Warned(scrub(f"OpenLineage events ({self.dest.kind} transport, {self.dest.origin}) "
                                   f"are not sent for the rest of this run: {self.sender.failure}")))


def lineage_run(checked: Checked, plan: Plan, on_event: Events, dest: Destination | None) -> LineageRun | None:
    """The run's lineage events, or None when lineage is off or nothing is planned."""
    if dest is None or not plan.steps:
        return None
    return LineageRun(checked, plan, on_event, dest)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return scrub(f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":"))

