"""One refresh as it happened: what the engine reports, the history stores (state/ledger.py
builds every one) and the renderers show, in Snowflake's refresh-history columns."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from dtcli.data_tests import CheckResultDict
from dtcli.json_types import JsonObject
from dtcli.model.refresh_terms import FAILURE_STATES


@dataclass
class RefreshRecord:
    """One refresh: what the engine reports, the history stores and the renderers show."""

    name: str
    state: str
    refresh_action: str
    refresh_trigger: str
    data_timestamp: str | None
    refresh_start_time: str
    refresh_end_time: str
    run_id: str
    state_message: str | None = None
    reinit_reason: str | None = None
    num_inserted_rows: int = 0
    num_deleted_rows: int = 0
    num_copied_rows: int = 0
    num_updated_rows: int = 0                  # rows a MERGE updated in place (custom tables)
    inputs_with_changed_data: list[str] = field(default_factory=list)
    source_versions: dict[str, int] = field(default_factory=dict)
    table_version: int | None = None
    definition_hash: str | None = None
    refresh_action_reason: str | None = None   # why this action (ADAPTIVE: its estimate)
    change_rows: int | None = None             # changed input rows the refresh read (estimated)
    input_rows: int | None = None              # rows of its inputs at the versions it read
    # Snowflake's newer refresh-history columns, where dt has the fact:
    state_code: str | None = None          # SUCCESS, or why not: an error condition, UPSTREAM_FAILED, ...
    query_id: str | None = None            # "<Spark application id>/<run id>"; None when no Spark ran for it
    target_lag_sec: int | None = None      # the effective target lag when it refreshed
    completion_target: str | None = None   # previous data timestamp + target lag
    # how an INCREMENTAL refresh applied its change (own_rows_aggregate, own_rows_window,
    # single_row_recomputed, keys_recomputed, slice_replaced, rows_appended, rows_merged,
    # table_rewritten, no_row_changed)
    refresh_strategy: str | None = None
    # what the refresh's data tests and expectations found (dtcli.data_tests.CheckResult as dicts)
    data_tests: list[CheckResultDict] | None = None

    def to_dict(self) -> JsonObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: JsonObject) -> RefreshRecord:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})

    @property
    def failed(self) -> bool:
        return self.state in FAILURE_STATES

    @property
    def statistics(self) -> dict[str, int]:
        return {"num_inserted_rows": self.num_inserted_rows, "num_deleted_rows": self.num_deleted_rows,
                "num_copied_rows": self.num_copied_rows}

    def to_row(self) -> JsonObject:
        """The JSON shape of `dt show refresh-history` (Snowflake's columns, snake_case)."""
        row = self.to_dict()
        for key in self.statistics:
            row.pop(key)
        row["statistics"] = self.statistics
        return row


def any_failed(records: list[RefreshRecord]) -> bool:
    return any(r.failed for r in records)
