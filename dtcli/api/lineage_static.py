"""`dt docs generate --openlineage`: the project's lineage as OpenLineage job events, no runs.

One JobEvent per DT (its SQL, inputs with their schemas, output with its schema and column
lineage), written to target/docs/openlineage.jsonl one per line, and sent where a run's events go
when `openlineage:` (or the client's environment) says where: a backend then shows the graph
before anything ran. Sending is bounded as a run's is (dtcli/api/lineage_emitter.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from dtcli.api.lineage_transport import destination, namespace_of
from dtcli.planning.checked import Checked
from dtcli.redact import scrub

FILE_NAME = "openlineage.jsonl"


class JobEventsWritten(TypedDict):
    """What `write_job_events` did: the file, how many events, where they were sent."""

    path: str
    events: int
    sent_to: str | None       # the destination's origin, when every event was sent
    warning: str | None       # why not every event was sent


def write_job_events(checked: Checked, names: list[str], out: Path) -> JobEventsWritten:
    """Write (and send, with a destination) the job events of `names`; what was done and any
    warning."""
    from openlineage.client.serde import Serde

    from dtcli.api.lineage_emitter import Sender
    from dtcli.api.lineage_events import EventBuilder

    project = checked.project
    builder = EventBuilder(checked, namespace_of(project))
    events = [builder.job_event(name) for name in names if name in project.tables]
    path = out / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(scrub(Serde.to_json(e)) + "\n" for e in events), encoding="utf-8")
    done = JobEventsWritten(path=str(path), events=len(events), sent_to=None, warning=None)
    dest = destination(project)
    if dest is not None:
        sender = Sender(dest)
        for event in events:
            sender.send(event)
        sender.close()
        if sender.failure is not None:
            done["warning"] = scrub(f"OpenLineage job events ({dest.kind} transport, {dest.origin}) were not all "
                                    f"sent: {sender.failure}")
        else:
            done["sent_to"] = dest.origin
    return done
