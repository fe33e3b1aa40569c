"""For the lineage tests: OpenLineage's JSON Schema (vendored in tests/openlineage_spec, dt's own
facets from the package) as a validator, and a tiny HTTP receiver a test starts on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SPEC = Path(__file__).resolve().parent / "openlineage_spec"
DT_FACETS = Path(__file__).resolve().parents[1] / "dtcli" / "api" / "lineage_facets" / "dt.json"
BASE = "https://openlineage.io/spec/2-0-2/OpenLineage.json"


@cache
def _registry():
    from referencing import Registry, Resource

    docs = [json.loads(p.read_text()) for p in [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json")),
                                                 DT_FACETS]]
    return Registry().with_resources((d["$id"], Resource.from_contents(d)) for d in docs), {d["$id"] for d in docs}


def _validator(ref: str):
    from jsonschema import Draft202012Validator, FormatChecker

    registry, _ = _registry()
    return Draft202012Validator({"$ref": ref}, registry=registry, format_checker=FormatChecker())


def _facets(event: dict[str, Any]):
    """(where, facet) for every facet of an event."""
    for key in ("run", "job"):
        for name, facet in ((event.get(key) or {}).get("facets") or {}).items():
            yield f"{key}.{name}", facet
    for key, extra in (("inputs", "inputFacets"), ("outputs", "outputFacets")):
        for k, dataset in enumerate(event.get(key) or []):
            for group in ("facets", extra):
                for name, facet in (dataset.get(group) or {}).items():
                    yield f"{key}[{k}].{group}.{name}", facet


def problems(event: dict[str, Any]) -> list[str]:
    """Why `event` does not validate: against the spec's RunEvent / JobEvent, and each facet against
    the schema its `_schemaURL` names (which must be one of the vendored ones)."""
    kind = "RunEvent" if "run" in event else "JobEvent"
    found = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
             for e in _validator(f"{BASE}#/$defs/{kind}").iter_errors(event)]
    _, known = _registry()
    for where, facet in _facets(event):
        url = facet.get("_schemaURL", "")
        if url.split("#")[0] not in known:
            found.append(f"{where}: no vendored schema for {url} (copy it into tests/openlineage_spec)")
            continue
        found += [f"{where}.{'.'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in _validator(url).iter_errors(facet)]
    return found


def free_port() -> int:
    """A port nothing listens on (a backend that is down: connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """An OpenLineage HTTP backend on 127.0.0.1: keeps each POSTed event and its headers; with
    `hang` seconds, holds every request that long before answering (a slow backend)."""

    def __init__(self, hang: float = 0.0):
        self.events: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.bodies: list[bytes] = []
        self.requests = 0
        self.hang = hang
        self._release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                owner.requests += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if owner.hang:
                    owner._release.wait(owner.hang)
                owner.bodies.append(body)
                owner.headers.append(dict(self.headers))
                owner.events.append(json.loads(body))
                try:
                    self.send_response(201)
                    self.end_headers()
                except OSError:
                    pass          # the client gave up waiting

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, seconds: float = 30.0) -> None:
        """Wait until `count` events arrived (the sender is a background thread)."""
        deadline = time.monotonic() + seconds
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.05)


def read_file_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def by_job(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Job name -> its event types, in order."""
    out: dict[str, list[str]] = {}
    for e in events:
        out.setdefault(e["job"]["name"], []).append(e.get("eventType", "JOB"))
    return out
