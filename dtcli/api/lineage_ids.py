"""The OpenLineage run ids of dt's runs and refreshes: UUIDs derived from dt's own ids, so that
the id of any refresh in refresh history or run_results.json can be worked out again (nothing
new is stored). A module of its own: run_results reads it on every run, without the client."""

from __future__ import annotations

import uuid


def run_uuid(run_id: str) -> str:
    """The OpenLineage run id of a dt run (`run_id` of refresh history and run_results.json)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"dt:{run_id}"))


def refresh_uuid(run_id: str, name: str) -> str:
    """The OpenLineage run id of a DT's refresh in a dt run."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"dt:{run_id}:{name}"))
