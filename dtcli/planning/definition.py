"""A DT's definition hash: what, when it changes, forces a REINITIALIZE."""

from __future__ import annotations

import hashlib
import json

from dtcli.model import TableDef

# Keys of the config that change what the table holds or how it is laid out (target_lag,
# comment, tags do not: they change no data).
DEFINING_KEYS = ("refresh_mode", "columns", "partition_by")
# Keys added since: hashed only when set, so that a DT defined before they existed keeps its hash.
LATER_KEYS = ("cluster_by",)


def definition_hash(table: TableDef) -> str:
    payload = {"sql": " ".join(table.spark_sql.split()), "kind": table.kind}
    # the values as JSON has them (a tuple as a list): the hash of a DT defined before the config
    # was typed stays what it was (tests/unit/test_definition_hash_stable.py)
    payload.update({k: getattr(table.config, k) for k in DEFINING_KEYS})
    payload.update({k: getattr(table.config, k) for k in LATER_KEYS if getattr(table.config, k) is not None})
    # a `drop` expectation keeps rows out of the table: changing one changes what it holds
    drops = sorted(e.expect for e in table.config.expectations if e.on_violation == "drop")
    if drops:
        payload["drop_expectations"] = drops
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]
