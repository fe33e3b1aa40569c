"""Table config values with structure: `columns`, `constraints` and `backfill`, checked and
brought to one shape so the rest of dt reads them without guessing."""

from __future__ import annotations

from datetime import datetime, timezone

from dtcli.config_keys import BackfillSpec, ColumnDecl, Constraint, StartAt
from dtcli.errors import ConfigError, Where
from dtcli.json_types import Yaml


def columns(value: Yaml, where: Where) -> list[ColumnDecl]:
    """`columns:` as a list of {name, type}; a bare name (or `name: type`) is accepted too."""
    if not isinstance(value, list) or not value:
        raise ConfigError("columns must be a non-empty list of {name, type}", **where)
    out = []
    for item in value:
        if isinstance(item, str):
            item = {"name": item}
        elif isinstance(item, dict) and len(item) == 1 and "name" not in item:
            (name, type_), = item.items()
            item = {"name": name, "type": type_}
        if not isinstance(item, dict) or not item.get("name") or set(item) - {"name", "type", "comment"}:
            raise ConfigError(f"columns entry {item!r} is not {{name, type}}", **where)
        out.append({"name": str(item["name"]), "type": str(item["type"]) if item.get("type") else None})
    names = [c["name"].lower() for c in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise ConfigError(f"column '{dup}' is listed twice in columns", **where)
    return out


def constraints(value: Yaml, where: Where) -> list[Constraint]:
    """`constraints:` as [{kind: primary_key | unique, columns: [...], rely: bool}]."""
    if not isinstance(value, list):
        raise ConfigError("constraints must be a list of {primary_key: [...], rely: true} or "
                          "{unique: [...], rely: true}", **where)
    out = []
    for item in value:
        kinds = [k for k in ("primary_key", "unique") if isinstance(item, dict) and k in item]
        if len(kinds) != 1 or set(item) - {kinds[0], "rely", "name"}:
            raise ConfigError(f"constraint {item!r} is not {{primary_key: [...]}} or {{unique: [...]}} "
                              "(with an optional rely: true)", **where)
        cols = item[kinds[0]]
        cols = [cols] if isinstance(cols, str) else cols
        if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
            raise ConfigError(f"{kinds[0]} must list column names", **where)
        if not isinstance(item.get("rely", False), bool):
            raise ConfigError(f"rely must be true or false, not {item['rely']!r}", **where)
        out.append({"kind": kinds[0], "columns": list(cols), "rely": item.get("rely", False),
                    "name": item.get("name")})
    return out


def backfill(value: Yaml, where: Where) -> BackfillSpec:
    """`backfill:` as {from: {table: NAME} | {path: P}, version: N | None, timestamp: ISO | None,
    before: bool}: copy that table (at a version or moment, or just before it) at creation."""
    if isinstance(value, str):
        value = {"from": value}
    if not isinstance(value, dict) or "from" not in value or set(value) - {"from", "at", "before"}:
        raise ConfigError("backfill must be {from: TABLE, at: {version: N} | {timestamp: TS}, "
                          "before: {version: N} | {timestamp: TS}}", **where)
    source = value["from"]
    if isinstance(source, dict) and set(source) == {"path"} and isinstance(source["path"], str):
        origin = {"path": source["path"]}
    elif isinstance(source, str) and source.strip():
        origin = {"table": source.strip().lower()}
    else:
        raise ConfigError(f"backfill from {source!r} is not a table name or {{path: ...}}", **where)
    if "at" in value and "before" in value:
        raise ConfigError("backfill takes at or before, not both", **where)
    point = value.get("at", value.get("before"))
    out: BackfillSpec = {"from": origin, "version": None, "timestamp": None, "before": "before" in value}
    if point is not None:
        if not isinstance(point, dict) or len(point) != 1 or set(point) - {"version", "timestamp"}:
            raise ConfigError("backfill at/before must be {version: N} or {timestamp: TS}", **where)
        if "version" in point:
            version = point["version"]
            if isinstance(version, bool) or not isinstance(version, int) or version < 0:
                raise ConfigError(f"backfill version {version!r} is not a Delta version (0, 1, ...)", **where)
            out["version"] = version
        else:
            out["timestamp"] = timestamp(point["timestamp"], where)
    return out


def timestamp(value: Yaml, where: Where) -> str:
    """An ISO timestamp (a moment without a zone is taken as UTC), as ISO text in UTC."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).strip().replace("T", " "))
        except ValueError:
            raise ConfigError(f"timestamp {value!r} is not an ISO date and time",
                              hint="e.g. '2025-04-01 12:00:00' (UTC unless it names a zone)", **where) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat()


def start_at(value: Yaml, where: Where) -> StartAt:
    """`start_at:` (custom incremental tables) as {version: N} | {timestamp: ISO} | {offset: -S}."""
    if not isinstance(value, dict) or len(value) != 1 or set(value) - {"version", "timestamp", "offset"}:
        raise ConfigError("start_at must be {version: N}, {timestamp: TS} or {offset: -SECONDS}", **where)
    (kind, point), = value.items()
    if kind == "timestamp":
        return {"timestamp": timestamp(point, where)}
    if isinstance(point, bool) or not isinstance(point, int) or (kind == "version" and point < 0) \
            or (kind == "offset" and point >= 0):
        raise ConfigError(f"start_at {kind} {point!r} is not "
                          + ("a Delta version (0, 1, ...)" if kind == "version" else "a negative number of seconds"),
                          **where)
    return {"version": point} if kind == "version" else {"offset": point}
