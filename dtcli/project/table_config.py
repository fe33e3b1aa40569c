"""Table configuration keys: their allowed values and the precedence of where they are set.

Precedence, lowest first: project `defaults`, `tables/<name>.yml`, `{{ config(...) }}` in the SQL.
"""

from __future__ import annotations

from typing import Any

from dtcli.errors import ConfigError, suggest
from dtcli.planning.lag import parse_target_lag
from dtcli.model import Located

TABLE_KEYS = {
    "target_lag", "refresh_mode", "initialize", "frozen_where", "immutable_where", "backfill",
    "start_at", "columns", "constraints", "partition_by", "cluster_by", "comment", "tags",
    "enabled",
}
REFRESH_MODES = ("auto", "incremental", "full")
INITIALIZE = ("on_create", "on_schedule")
DEFAULTS = {"target_lag": "1 hour", "refresh_mode": "auto", "initialize": "on_create"}
# Part of the contract but not built yet: accepting them silently would give wrong semantics
# (a "frozen" region that refreshes rewrite), so they are refused until they are.
NOT_YET = {"frozen_where": "frozen regions", "immutable_where": "frozen regions",
           "backfill": "backfill", "start_at": "custom incremental tables"}


def check_keys(config: dict[str, Any], origin: dict[str, Located], file: str) -> None:
    for key in config:
        if key not in TABLE_KEYS:
            loc = origin.get(key)
            raise ConfigError(f"unknown config key '{key}'", file=loc.file if loc else file,
                              line=loc.line if loc else None,
                              hint=suggest(key, TABLE_KEYS) or f"known keys: {', '.join(sorted(TABLE_KEYS))}")


def merge_layers(layers: list[tuple[dict[str, Any], str, dict[str, int]]]) -> tuple[dict, dict]:
    """Merge (config, file, key->line) layers, later ones winning; remember each key's origin."""
    merged: dict[str, Any] = dict(DEFAULTS)
    origin: dict[str, Located] = {}
    for config, file, lines in layers:
        for key, value in config.items():
            merged[key] = value
            origin[key] = Located(value, file, lines.get(key))
    return merged, origin


def normalise(config: dict[str, Any], origin: dict[str, Located], file: str) -> dict[str, Any]:
    """Validate values and fold aliases; returns the config the rest of dt relies on."""
    check_keys(config, origin, file)

    def where(key: str) -> dict[str, Any]:
        loc = origin.get(key)
        return {"file": loc.file if loc and loc.file else file, "line": loc.line if loc else None}

    for key, feature in NOT_YET.items():
        if config.get(key) is not None:
            raise ConfigError(f"'{key}' is not supported yet ({feature} are not implemented in this version of dt)",
                              **where(key), hint=f"remove '{key}' for now")
    out = dict(config)
    if "immutable_where" in out:
        if out.get("frozen_where") not in (None, out["immutable_where"]) and "frozen_where" in origin:
            raise ConfigError("both frozen_where and its alias immutable_where are set",
                              **where("immutable_where"), hint="keep only frozen_where")
        out["frozen_where"] = out.pop("immutable_where")
        if "immutable_where" in origin:
            origin["frozen_where"] = origin["immutable_where"]

    parse_target_lag(out["target_lag"], **where("target_lag"))
    mode = str(out["refresh_mode"]).lower()
    if mode not in REFRESH_MODES:
        raise ConfigError(f"refresh_mode '{out['refresh_mode']}' is not one of {', '.join(REFRESH_MODES)}",
                          **where("refresh_mode"), hint=suggest(mode, REFRESH_MODES))
    out["refresh_mode"] = mode
    init = str(out["initialize"]).lower()
    if init not in INITIALIZE:
        raise ConfigError(f"initialize '{out['initialize']}' is not one of {', '.join(INITIALIZE)}",
                          **where("initialize"), hint=suggest(init, INITIALIZE))
    out["initialize"] = init
    for key in ("partition_by", "cluster_by"):
        if isinstance(out.get(key), str):
            out[key] = [out[key]]
    if isinstance(out.get("tags"), str):
        out["tags"] = [out["tags"]]
    if out.get("columns") is not None and not isinstance(out["columns"], list):
        raise ConfigError("columns must be a list of {name, type}", **where("columns"))
    return out
