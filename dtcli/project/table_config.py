"""Table configuration keys: their allowed values and the precedence of where they are set.

Precedence, lowest first: project `defaults`, `folders:` (outer folder before inner),
`tables/<name>.yml`, `{{ config(...) }}` in the SQL. `tags` add up across the layers, as dbt's
do; every other key is taken from the highest layer that sets it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dtcli.config_keys import SHOWN_DEFAULTS, TABLE_KEYS, ConfigValues, TableConfig
from dtcli.errors import ConfigError, Where, suggest
from dtcli.json_types import Yaml, YamlMapping
from dtcli.model.definitions import Located
from dtcli.planning.lag import parse_target_lag
from dtcli.project.data_tests import TEST_KEYS, parse_expectations, parse_tests, split_columns
from dtcli.project.table_values import backfill, columns, constraints, start_at
from dtcli.project.unit_tests import parse_unit_tests
from dtcli.project.yamlio import LineDict, expect_mapping

REFRESH_MODES = ("auto", "adaptive", "incremental", "full", "custom_incremental")
INITIALIZE = ("on_create", "on_schedule")
SCHEDULER = ("enable", "disable")


def check_keys(config: YamlMapping, origin: dict[str, Located], file: str) -> None:
    for key in config:
        if key not in TABLE_KEYS:
            loc = origin.get(key)
            raise ConfigError(f"unknown config key '{key}'", file=loc.file if loc else file,
                              line=loc.line if loc else None,
                              hint=suggest(key, TABLE_KEYS) or f"known keys: {', '.join(sorted(TABLE_KEYS))}")


def folder_layers(folders: LineDict, folder: str, file: Path) -> list[LineDict]:
    """The `folders:` config that applies to a table in `folder` (e.g. "marts/finance"), outer
    folder first. Folders are nested mappings or slash paths; keys may carry dbt's `+` prefix."""
    layers: list[LineDict] = []
    parts = [p for p in folder.split("/") if p]

    def visit(mapping: LineDict, depth: int, where: str) -> None:
        config = LineDict()
        config.lines = {}
        for key, value in mapping.items():
            name = str(key).lstrip("+")
            if name in TABLE_KEYS:
                config[name] = value
                config.lines[name] = mapping.line_of(key)
        layers.append(config)
        for key, value in mapping.items():
            name = str(key).lstrip("+")
            if name in TABLE_KEYS:
                continue
            if not isinstance(value, dict):
                raise ConfigError(f"unknown config key '{key}' in folders{where}", file=file,
                                  line=mapping.line_of(key),
                                  hint=suggest(name, TABLE_KEYS) or "a folder holds config keys and subfolders")
            path = [p for p in name.split("/") if p]
            if parts[depth:depth + len(path)] == path:
                visit(expect_mapping(value, file, f"folders.{name}", mapping.line_of(key)),
                      depth + len(path), f"{where}.{name}")
            else:
                expect_mapping(value, file, f"folders.{name}", mapping.line_of(key))

    visit(folders, 0, "")
    return [layer for layer in layers if layer]


def merge_layers(layers: list[tuple[YamlMapping, str, dict[str, int]]]) -> tuple[YamlMapping, dict[str, Located]]:
    """Merge (config, file, key->line) layers, later ones winning (tags add up); remember each
    key's origin."""
    merged: YamlMapping = dict(SHOWN_DEFAULTS)
    origin: dict[str, Located] = {}
    for config, file, lines in layers:
        for key, value in config.items():
            if key == "tags" and merged.get("tags"):
                value = list(dict.fromkeys(_as_list(merged["tags"]) + _as_list(value)))
            merged[key] = value
            origin[key] = Located(value, file, lines.get(key))
    return merged, origin


def _as_list(value: Yaml) -> list[Yaml]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def normalise(config: YamlMapping, origin: dict[str, Located], file: str,
              name: str | None = None) -> TableConfig:
    """Validate values and fold aliases; returns the config the rest of dt relies on. `name`:
    the table's, which its data tests' generated names carry."""
    return typed(_checked(config, origin, file, name))


def typed(values: ConfigValues) -> TableConfig:
    """The checked values as a TableConfig: lists become tuples (a config does not change once
    loaded); the keys present are remembered for reading by key."""
    return TableConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()},
                       written=frozenset(values))


def _checked(config: YamlMapping, origin: dict[str, Located], file: str,
             name: str | None) -> ConfigValues:
    check_keys(config, origin, file)

    def where(key: str) -> Where:
        loc = origin.get(key)
        return {"file": loc.file if loc and loc.file else file, "line": loc.line if loc else None}

    out: ConfigValues = dict(config)
    if "immutable_where" in out:
        if "frozen_where" in out:
            raise ConfigError("both frozen_where and its alias immutable_where are set",
                              **where("immutable_where"), hint="keep only frozen_where")
        out["frozen_where"] = out.pop("immutable_where")
        if "immutable_where" in origin:
            origin["frozen_where"] = origin["immutable_where"]
    if out.get("frozen_where") is not None and (not isinstance(out["frozen_where"], str)
                                                or not out["frozen_where"].strip()):
        raise ConfigError("frozen_where must be a SQL boolean expression (text)", **where("frozen_where"),
                          hint="e.g. frozen_where: order_date < CURRENT_DATE - 30")

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
    for key in ("partition_by", "cluster_by", "tags"):
        if out.get(key) is not None:
            out[key] = [str(v) for v in _as_list(out[key])]
    if out.get("partition_by") and out.get("cluster_by"):
        raise ConfigError("a table is either partitioned or clustered, not both", **where("cluster_by"),
                          hint="keep cluster_by (Delta liquid clustering) or partition_by")
    if "enabled" in out and not isinstance(out["enabled"], bool):
        raise ConfigError(f"enabled must be true or false, not {out['enabled']!r}", **where("enabled"))
    if "scheduler" in out:
        value = str(out["scheduler"]).lower()
        if value not in SCHEDULER or isinstance(out["scheduler"], bool):
            raise ConfigError(f"scheduler must be enable or disable, not {out['scheduler']!r}",
                              **where("scheduler"),
                              hint="disable: refreshed only on demand (dt refresh NAME); "
                                   "to stop a table altogether use enabled: false")
        out["scheduler"] = value
    if "deletion_vectors" in out and not isinstance(out["deletion_vectors"], bool):
        raise ConfigError(f"deletion_vectors must be true or false, not {out['deletion_vectors']!r}",
                          **where("deletion_vectors"))
    if "aggregate_totals" in out and not isinstance(out["aggregate_totals"], bool):
        raise ConfigError(f"aggregate_totals must be true or false, not {out['aggregate_totals']!r}",
                          **where("aggregate_totals"))
    if "sort_by_key" in out and not isinstance(out["sort_by_key"], bool):
        raise ConfigError(f"sort_by_key must be true or false, not {out['sort_by_key']!r}",
                          **where("sort_by_key"))
    _whole_rows(out, "max_rows_per_file", "0: no limit", "e.g. max_rows_per_file: 1000000", where)
    _whole_rows(out, "small_table_rows", "0: no table is small", "e.g. small_table_rows: 50000", where)
    if out.get("comment") is not None and not isinstance(out["comment"], str):
        raise ConfigError("comment must be a string", **where("comment"))
    _tests(out, name or Path(file).stem.lower(), where)
    if out.get("unit_tests") is not None:
        out["unit_tests"] = parse_unit_tests(out["unit_tests"], name or Path(file).stem.lower(), where("unit_tests"))
    if out.get("columns") is not None:
        out["columns"] = columns(out["columns"], where("columns"))
    if out.get("constraints") is not None:
        out["constraints"] = constraints(out["constraints"], where("constraints"))
    if out.get("backfill") is not None:
        out["backfill"] = backfill(out["backfill"], where("backfill"))
    if out.get("start_at") is not None:
        out["start_at"] = start_at(out["start_at"], where("start_at"))
    return out


def _tests(out: ConfigValues, name: str, where: Callable[[str], Where]) -> None:
    """Data tests (at table level and under `columns:`), column notes and expectations, parsed
    into `data_tests`, `column_notes` and `expectations` (dtcli/data_tests.py); `columns` keeps
    only what renames or types the outputs (None when its entries only annotate columns)."""
    found = [k for k in TEST_KEYS if out.get(k) is not None]
    if len(found) > 1:
        raise ConfigError("both data_tests and tests are set", **where("tests"),
                          hint="keep data_tests (tests is its older name)")
    tests = parse_tests(out.pop(found[0]), name, None, where(found[0])) if found else []
    out.pop("tests", None)
    notes = []
    if out.get("columns") is not None:
        out["columns"], column_tests, notes = split_columns(out["columns"], name, where("columns"))
        tests = column_tests + tests
        if out["columns"] is None:
            del out["columns"]
    if tests:
        out["data_tests"] = tests
    else:
        out.pop("data_tests", None)
    if notes:
        out["column_notes"] = notes
    if out.get("expectations") is not None:
        out["expectations"] = parse_expectations(out["expectations"], where("expectations"))


def _whole_rows(out: ConfigValues, key: str, zero: str, hint: str, where: Callable[[str], Where]) -> None:
    """A row count setting: a whole number, at least 0 (YAML's true is not one)."""
    value = out.get(key)
    if key in out and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"{key} must be a whole number of rows ({zero}), not {value!r}",
                          **where(key), hint=hint)
