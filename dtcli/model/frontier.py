"""What a dynamic table reflects: the frontier committed with its data in one Delta commit, read
back by the planner (what changed since) and the engine (where the next refresh starts)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from dtcli.config_keys import BackfillSpec, StartAt
from dtcli.json_types import JsonObject


@dataclass
class Frontier:
    """What a DT reflects, committed with its data in one Delta commit (`userMetadata`)."""

    source_versions: dict[str, int]
    definition_hash: str | None = None
    data_timestamp: str | None = None
    run_id: str | None = None
    refresh_action: str | None = None
    refresh_mode: str | None = None
    frozen_where: str | None = None     # the predicate this refresh froze rows with
    backfill: BackfillSpec | None = None     # the `backfill` config it was created with
    input_ids: dict[str, str] | None = None  # custom tables: Delta table id of each CHANGES() input
    start_at: StartAt | None = None          # custom tables: the start_at they were created with
    source_ids: dict[str, str] | None = None  # Delta table id of each source read by table name
    # the version of each internal table of the DT (InternalTable.role -> version) its rows were
    # computed from: the DT's next refresh reads each one's change from there (kill-safe: an
    # internal table commits before its DT, and a DT never records a version it did not read)
    state_versions: dict[str, int] | None = None

    def to_dict(self) -> JsonObject:
        return dataclasses.asdict(self)

    def record_state(self, role: str, version: int) -> None:
        """The internal table `role` is at `version` for the DT's rows (a DT may keep several)."""
        self.state_versions = {**(self.state_versions or {}), role: version}

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> Frontier | None:
        if not isinstance(raw, dict):
            return None
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in raw.items() if k in known}
        values["source_versions"] = {str(k): int(v) for k, v in (raw.get("source_versions") or {}).items()}
        if values.get("state_versions") is not None:
            values["state_versions"] = {str(k): int(v) for k, v in values["state_versions"].items()}
        return cls(**values)
