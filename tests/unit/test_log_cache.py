"""What dt read of each Delta log is kept in target/state_cache.pickle (issue 25) and never
stale: a new commit, a table dropped and created again at its path, a source that moved, each is
read again; a damaged file is ignored; `--no-cache` reads every log (no JVM)."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from dtcli.planning.snapshot import take_snapshot
from dtcli.project import load_project
from dtcli.state import log_cache
from tests.sched_helpers import T0, chain_project, fake_dt, write_source


@pytest.fixture
def project(tmp_path):
    project = chain_project(tmp_path, {"a": "1 hour", "b": "1 hour"}, {"a": "src", "b": "a"})
    write_source(project, [1, 2])
    fake_dt(project, "a", T0)
    fake_dt(project, "b", T0)
    return project


def state(project, **kwargs):
    snap = take_snapshot(project, with_stats=True, **kwargs)
    snap.keep()              # as a command does once the project is checked
    return ({n: i for n, i in snap.sources.items()}, {n: i for n, i in snap.tables.items()})


def test_a_log_that_has_not_moved_is_not_opened_again(project, monkeypatch):
    first = state(project)
    assert (project.root / "target" / log_cache.FILE).exists()
    import dtcli.planning.snapshot as snapshot

    opened = []
    original = snapshot.open_table
    monkeypatch.setattr(snapshot, "open_table", lambda path: opened.append(path) or original(path))
    assert state(project) == first
    assert opened == []
    # the handle is opened when something asks for it (a change size, a refresh)
    snap = take_snapshot(project)
    assert snap.handle("a").version() == first[1]["a"].version
    assert opened == [project.table_path("a")]


def test_every_kind_of_move_is_read_again(project):
    before = state(project)
    write_source(project, [3])                                  # a source commits
    fake_dt(project, "a", T0 + timedelta(hours=1))              # a DT commits
    after = state(project)
    assert after == state(project, use_cache=False)
    assert after[0]["src"].version == before[0]["src"].version + 1
    assert after[1]["a"].version == before[1]["a"].version + 1
    assert after[1]["a"].frontier.data_timestamp != before[1]["a"].frontier.data_timestamp
    # dropped and created again at the same path: version 0 again, another table
    shutil.rmtree(project.table_path("b"))
    assert state(project)[1]["b"] is None
    fake_dt(project, "b", T0 + timedelta(hours=2))
    again = state(project)
    assert again == state(project, use_cache=False)
    assert again[1]["b"].frontier.data_timestamp == (T0 + timedelta(hours=2)).isoformat()


def test_statistics_are_read_when_asked_for_after_a_read_without(project):
    take_snapshot(project, with_stats=False).keep()
    assert state(project) == state(project, use_cache=False)
    assert state(project)[1]["a"].rows == 1


@pytest.mark.parametrize("damage", [b"", b"not a pickle", None])
def test_a_damaged_or_foreign_file_is_ignored_and_rewritten(project, damage):
    expected = state(project, use_cache=False)
    assert not (project.root / "target" / log_cache.FILE).exists()     # --no-cache writes nothing
    state(project)
    path = project.root / "target" / log_cache.FILE
    if damage is None:         # another dt's file: same keys, wrong values
        import pickle

        doc = pickle.loads(path.read_bytes())
        doc["dt"] = ("0.0.0-other",)
        doc["entries"] = dict.fromkeys(doc["entries"], ("stale",))
        path.write_bytes(pickle.dumps(doc))
    else:
        path.write_bytes(damage)
    assert state(project) == expected
    assert state(project) == expected


def test_a_command_refused_for_bad_input_writes_no_state(project):
    from tests.helpers import dt

    (project.root / "tables" / "a.sql").write_text("SELECT nope FROM src\n")
    assert dt("validate", "-p", str(project.root)).code == 2
    assert not (project.root / "target" / log_cache.FILE).exists()


def test_dt_no_cache_reads_every_log(project, monkeypatch, tmp_path):
    from tests.helpers import dt

    monkeypatch.setenv("DT_NO_CACHE", "1")
    assert dt("show", "dynamic", "tables", "-p", str(project.root)).code == 0
    assert not (project.root / "target" / log_cache.FILE).exists()
    assert load_project(project.root).tables


def test_a_run_under_the_lock_sees_what_committed_since_its_snapshot(project):
    """`dt run` plans from a snapshot, then brings it up to date under the warehouse lock:
    a log read from the cache (never opened) that moved meanwhile is read again."""
    state(project)
    snap = take_snapshot(project)
    before = snap.tables["a"].version
    fake_dt(project, "a", T0 + timedelta(hours=3))
    write_source(project, [9])
    snap.refresh(project)
    assert snap.tables["a"].version == before + 1
    assert snap.tables["a"].frontier.data_timestamp == (T0 + timedelta(hours=3)).isoformat()
    fresh = take_snapshot(project, use_cache=False)
    assert snap.sources["src"].version == fresh.sources["src"].version
    assert (snap.tables["b"].version, snap.tables["b"].frontier) == (fresh.tables["b"].version, fresh.tables["b"].frontier)
