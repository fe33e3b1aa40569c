"""The check cache (target/check_cache.pickle, issue 25) is never stale and never trusted blindly:
after each kind of edit the commands print what they print with --no-cache, and a cache file
that is truncated, corrupt or from another dt version is ignored and rewritten without an error."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dtcli.planning import check_cache
from tests.helpers import dt, write_project
from tests.sched_helpers import write_source

TABLES = {
    "clean": "SELECT x FROM src WHERE x > {{ var('min_x') }}",
    "wide": "SELECT * FROM src",
    "staging/totals": "SELECT x % 2 AS parity, COUNT(*) AS n\nFROM {{ ref('clean') }}\nGROUP BY x % 2",
    "ranked": "SELECT x, RANK() OVER (PARTITION BY x % 3 ORDER BY x) AS r FROM {{ ref('clean') }}",
}
CONFIG = "vars:\n  min_x: 0\nsources:\n  src: {path: data/src}\n"
COMMANDS = [("validate",), ("explain", "clean", "--format", "json"),
            ("explain", "wide", "--format", "json"), ("explain", "totals", "--format", "json"),
            ("explain", "ranked", "--format", "json"), ("run", "--dry-run")]


@pytest.fixture
def root(tmp_path, monkeypatch):
    from dtcli.project import load_project

    monkeypatch.delenv("DT_NO_CACHE", raising=False)
    (tmp_path / "p" / "tables" / "staging").mkdir(parents=True)
    root = write_project(tmp_path / "p", TABLES, config=CONFIG)
    write_source(load_project(root), [1, 2, 3])
    return root


def outputs(root, *extra: str) -> list[str]:
    out = []
    for command in COMMANDS:
        result = dt(*command, "-p", str(root), *extra)
        assert result.code == 0, result.err
        out.append(_without_clock(result.out))
    return out


def _without_clock(text: str) -> str:
    """The dry-run plan names the time it was planned at and a new run id; nothing else differs."""
    import re

    text = re.sub(r'"run_id": "[^"]*"', '"run_id": "<id>"', text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*(\+00:00|Z)?", "<time>", text)


def assert_fresh(root) -> None:
    warm = outputs(root)                     # reads (and refreshes) the cache
    assert (root / "target" / check_cache.FILE).exists()
    assert outputs(root) == warm             # from the cache as rewritten
    assert outputs(root, "--no-cache") == warm


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new))


def test_cache_is_never_stale(root):
    assert_fresh(root)
    edit(root / "tables" / "ranked.sql", "RANK()", "DENSE_RANK()")                  # a table file
    assert_fresh(root)
    edit(root / "dt_project.yml", "vars:", "folders:\n  staging: {refresh_mode: full}\nvars:")  # a folder's config
    assert_fresh(root)
    edit(root / "dt_project.yml", "vars:", "defaults: {target_lag: 5 minutes}\nvars:")        # project settings
    assert_fresh(root)
    edit(root / "dt_project.yml", "min_x: 0", "min_x: 2")                            # a {{ var }}
    assert_fresh(root)
    # a source's schema: a new column, which `SELECT *` in wide now returns
    write_deltalake(str(root / "data" / "src"),
                    pa.table({"x": pa.array([5], pa.int64()), "y": pa.array(["a"], pa.string())}),
                    mode="overwrite", schema_mode="overwrite",
                    configuration={"delta.enableChangeDataFeed": "true"})
    assert_fresh(root)
    assert '"y"' in dt("explain", "wide", "--format", "json", "-p", str(root)).out


def test_warm_check_resolves_nothing_again(root, monkeypatch):
    import dtcli.planning.kinds.query as checked  # where a query table is resolved

    assert dt("validate", "-p", str(root)).code == 0
    calls = []
    original = checked.resolve
    monkeypatch.setattr(checked, "resolve", lambda *a: calls.append(a) or original(*a))
    assert dt("validate", "-p", str(root)).code == 0
    assert calls == []
    assert dt("validate", "-p", str(root), "--no-cache").code == 0
    assert len(calls) == len(TABLES)
    edit(root / "tables" / "ranked.sql", "RANK()", "DENSE_RANK()")
    calls.clear()
    assert dt("validate", "-p", str(root)).code == 0
    assert len(calls) == 1                   # only the edited table is resolved again


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "other version", "empty"])
def test_a_damaged_or_foreign_cache_is_ignored_and_rebuilt(root, damage):
    expected = outputs(root, "--no-cache")
    path = root / "target" / check_cache.FILE
    assert not path.exists()                 # --no-cache writes nothing
    outputs(root)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "corrupt":
        path.write_bytes(b"not a pickle" + data[20:])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        doc = pickle.loads(data)
        # what another dt version would have kept: same keys, wrong values
        doc["dt"] = "0.0.0-other"
        doc["entries"] = dict.fromkeys(doc["entries"], "stale")
        path.write_bytes(pickle.dumps(doc))
    assert outputs(root) == expected
    assert pickle.loads(path.read_bytes())["dt"] != "0.0.0-other"
    assert outputs(root) == expected


def test_dt_no_cache_environment_variable(root, monkeypatch):
    monkeypatch.setenv("DT_NO_CACHE", "1")
    assert dt("validate", "-p", str(root)).code == 0
    assert not (root / "target" / check_cache.FILE).exists()


def test_explain_of_one_table_keeps_the_others_entries(root, monkeypatch):
    import dtcli.planning.kinds.query as checked  # where a query table is resolved

    assert dt("validate", "-p", str(root)).code == 0
    assert dt("explain", "clean", "-p", str(root)).code == 0
    calls = []
    original = checked.resolve
    monkeypatch.setattr(checked, "resolve", lambda *a: calls.append(a) or original(*a))
    assert dt("validate", "-p", str(root)).code == 0
    assert calls == []


def test_a_table_yml_and_a_new_table_are_seen(root):
    assert_fresh(root)
    (root / "tables" / "ranked.yml").write_text("refresh_mode: full\n")
    assert_fresh(root)
    assert "ranked: FULL" in dt("validate", "-p", str(root)).out
    (root / "tables" / "extra.sql").write_text("SELECT x FROM {{ ref('ranked') }}\n")
    assert_fresh(root)
    assert "extra:" in dt("validate", "-p", str(root)).out


def test_a_cache_written_by_other_code_of_the_same_version_is_not_read(root, monkeypatch):
    """An editable install changes code without a new version: the cache is keyed by dt's
    modules too, so a verdict of the old compiler does not survive a `git pull`."""
    expected = outputs(root, "--no-cache")
    outputs(root)
    monkeypatch.setattr(check_cache, "_CODE", "other-code")
    assert check_cache.CheckCache(root).old == {}
    path = root / "target" / check_cache.FILE
    doc = pickle.loads(path.read_bytes())
    doc["entries"] = dict.fromkeys(doc["entries"], "stale")
    path.write_bytes(pickle.dumps(doc))
    assert outputs(root) == expected


def test_a_warm_validate_leaves_the_cached_trees_unread_until_asked(root):
    """A warm check reads cached verdicts, not the sqlglot trees they came from: those stay
    pickled (dtcli.lazy), and read on demand they equal a fresh parse."""
    from dtcli import api

    api.check(root)                                 # writes the cache
    warm = api.check(root)
    fresh = api.check(root, use_cache=False)
    for name, table in warm.project.tables.items():
        assert "query" not in vars(table) and "parsed" not in vars(table), name
        assert not warm.qualified.bound(name) or "query" not in vars(warm.qualified._resolutions[name])
    for name, table in warm.project.tables.items():
        assert table.query.sql(dialect="spark") == fresh.project.tables[name].query.sql(dialect="spark")
        assert warm.delta_sql(name) == fresh.delta_sql(name)
        assert warm.qualified.bound(name) == fresh.qualified.bound(name)
    assert [m.mode for m in warm.modes.values()] == [m.mode for m in fresh.modes.values()]
