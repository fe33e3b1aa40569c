"""Each table config key is defined once: a field of TableConfig (its type and default), and
no second table of defaults in project/, the model or the step (issue 42)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from dtcli.config_keys import ALIASES, SHOWN_DEFAULTS, TABLE_KEYS, TableConfig
from dtcli.plan_parts import Layout
from dtcli.project.table_config import merge_layers
from tests.helpers import write_project

PACKAGE = Path(__file__).resolve().parents[2] / "dtcli"
FIELDS = {f.name: f for f in dataclasses.fields(TableConfig)}
# the one definition of each key's default, as the field says it
DEFAULTS = {
    "target_lag": "1 hour", "refresh_mode": "auto", "initialize": "on_create", "enabled": True,
    "scheduler": "enable", "tags": (), "comment": None, "frozen_where": None, "backfill": None,
    "start_at": None, "columns": None, "constraints": (), "partition_by": None, "cluster_by": None,
    "deletion_vectors": True, "sort_by_key": False, "max_rows_per_file": 1_000_000,
    "small_table_rows": 0, "aggregate_totals": True, "data_tests": (), "expectations": (), "unit_tests": (),
}


def test_every_key_is_a_field_of_table_config_with_its_one_default():
    keys = {ALIASES.get(k, k) for k in TABLE_KEYS}
    assert keys == set(DEFAULTS)
    for key in keys:
        assert key in FIELDS, key
        assert FIELDS[key].default == DEFAULTS[key], key
        assert FIELDS[key].default_factory is dataclasses.MISSING, key
    assert set(ALIASES.values()) <= keys


def test_a_merged_config_starts_from_the_fields_defaults():
    assert SHOWN_DEFAULTS == {"target_lag": "1 hour", "refresh_mode": "auto", "initialize": "on_create"}
    assert merge_layers([])[0] == SHOWN_DEFAULTS


def test_the_step_takes_its_layout_defaults_from_the_config():
    step = {f.name: f.default for f in dataclasses.fields(Layout)}
    for key in ("small_table_rows", "max_rows_per_file", "deletion_vectors"):
        assert step[key] is FIELDS[key].default, key


def test_no_module_outside_the_config_keys_writes_a_default_table_of_keys():
    """A dict literal naming two or more table keys with constant values is a second default
    table (project/ had one; model.py had module constants)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "config_keys.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                named = [k.value for k, v in zip(node.keys, node.values)
                         if isinstance(k, ast.Constant) and k.value in DEFAULTS and isinstance(v, ast.Constant)]
                if len(named) >= 2:
                    found.append((path.relative_to(PACKAGE).as_posix(), node.lineno, named))
    assert found == []


def test_a_table_that_sets_nothing_reads_every_default(tmp_path):
    from dtcli.project import load_project

    root = write_project(tmp_path / "p", {"t": "SELECT x FROM src"}, config="sources:\n  src: {path: data/src}\n")
    config = load_project(root).tables["t"].config
    assert {k: getattr(config, k) for k in DEFAULTS} == DEFAULTS
    assert config.as_written() == SHOWN_DEFAULTS          # what the docs' project file shows
    assert list(config) == sorted(SHOWN_DEFAULTS) and "comment" not in config
    assert config.get("deletion_vectors", "unset") == "unset"      # by key: only what was written
