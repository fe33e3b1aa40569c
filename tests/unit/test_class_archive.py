"""`spark.class_archive`: the driver JVM's class-data-sharing archive, written once by a run that
ends well and mapped by the runs after it; one per Java and jar set (no JVM started here)."""

import pytest

from dtcli.engine.launch import class_archive
from dtcli.engine.launch.launcher import class_archive_of, submit_command
from dtcli.errors import ConfigError
from dtcli.project.loader import load_project

JAVA = "spark.driver.extraJavaOptions"
ARCHIVE = class_archive.DYNAMIC_MAGIC + b"classes"


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A Java and a Spark installation of files, and a cache of dt's own."""
    (tmp_path / "java" / "bin").mkdir(parents=True)
    (tmp_path / "java" / "bin" / "java").write_text("")
    (tmp_path / "spark" / "jars").mkdir(parents=True)
    for jar in ("spark-core.jar", "spark-sql.jar"):
        (tmp_path / "spark" / "jars" / jar).write_text(jar)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "java"))
    monkeypatch.setenv("DT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _archive(machine, conf=None, mode="auto", write=True):
    return class_archive.for_driver(mode, conf or {}, machine / "spark", [], write=write)


def test_the_first_run_writes_the_archive_and_later_runs_map_it(machine):
    first = _archive(machine)
    assert first.writing is not None and not first.path.exists()
    assert first.java_options.startswith(f"-XX:ArchiveClassesAtExit={first.writing} ")
    assert first.path.parent == machine / "cache" / "class-archives"
    first.writing.write_bytes(ARCHIVE)              # what the JVM writes as it exits
    first.settle(0)
    assert first.path.read_bytes() == ARCHIVE and not first.writing.exists()
    later = _archive(machine)
    assert later.writing is None and later.path == first.path
    assert later.java_options.startswith(f"-XX:SharedArchiveFile={first.path} ")
    assert "-Xlog:cds=off" in later.java_options      # its messages would go to dt's event channel


def test_a_killed_jvm_or_a_file_that_is_no_archive_is_not_kept(machine):
    killed = _archive(machine)
    killed.writing.write_bytes(ARCHIVE[:4])
    killed.settle(-9)                                # SIGKILL, perhaps while it was writing
    assert not killed.path.exists() and not killed.writing.exists()
    nothing = _archive(machine)
    nothing.settle(0)
    assert not nothing.path.exists()
    garbage = _archive(machine)
    garbage.writing.write_bytes(b"not an archive")
    garbage.settle(0)
    assert not garbage.path.exists() and not garbage.writing.exists()
    assert _archive(machine, write=False) is None    # the warm application only maps one


def test_a_run_whose_refresh_failed_keeps_its_archive(machine):
    """The driver exits 1 when a refresh failed; the JVM still wrote all of its archive, and a
    project with a failing DT must not pay for writing it on every run."""
    failed = _archive(machine)
    failed.writing.write_bytes(ARCHIVE)
    failed.settle(1)
    assert failed.path.read_bytes() == ARCHIVE


def test_another_jar_set_has_its_own_archive(machine):
    before = _archive(machine).path
    (machine / "spark" / "jars" / "spark-sql.jar").write_text("a newer spark-sql")
    assert _archive(machine).path != before
    assert _archive(machine, {"spark.driver.extraClassPath": "/opt/x.jar"}).path != _archive(machine).path


def test_off_a_cluster_driver_and_the_users_own_cds_options_add_nothing(machine):
    assert _archive(machine, mode="off") is None
    assert _archive(machine, {"spark.submit.deployMode": "cluster"}) is None
    assert _archive(machine, {JAVA: "-XX:SharedArchiveFile=/mine.jsa"}) is None
    assert _archive(machine, {JAVA: "-Xshare:off"}) is None


def test_only_the_newest_archives_are_kept(machine):
    folder = machine / "cache" / "class-archives"
    folder.mkdir(parents=True)
    for i in range(4):
        old = folder / f"spark-old{i}.jsa"
        old.write_bytes(b"x")
    run = _archive(machine)
    run.writing.write_bytes(ARCHIVE)
    run.settle(0)
    assert run.path.exists()
    assert len(list(folder.glob("*.jsa"))) == class_archive.KEEP


def _project(tmp_path, spark_yaml: str):
    root = tmp_path / "p"
    (root / "tables").mkdir(parents=True)
    (tmp_path / "delta.jar").write_text("delta")       # the project's own jars: nothing to provision
    (root / "dt_project.yml").write_text(
        f"name: p\nwarehouse: wh\nspark:\n  master: local[2]\n  jars: [{tmp_path / 'delta.jar'}]\n" + spark_yaml
        + "targets:\n  ci:\n    spark:\n      class_archive: off\n")
    return root


def test_the_setting_reaches_spark_submit_and_a_target_turns_it_off(machine):
    root = _project(machine, "")
    project = load_project(root)
    assert project.spark_class_archive == "auto"
    archive = class_archive_of(project)
    assert archive is not None
    command = submit_command(project, machine / "plan.json", archive=archive)
    options = next(part for part in command if part.startswith(f"{JAVA}="))
    assert archive.java_options in options
    ci = load_project(root, target="ci")
    assert ci.spark_class_archive == "off" and class_archive_of(ci) is None


def test_an_unknown_value_is_a_config_error_naming_the_line(machine):
    root = _project(machine, "  class_archive: always\n")
    with pytest.raises(ConfigError) as err:
        load_project(root)
    assert err.value.line == 6 and "spark.class_archive must be one of auto, off" in str(err.value)


class _Running:
    """A started application, as the warm engine's restart check sees it."""

    def poll(self):
        return None


def test_the_warm_application_maps_an_archive_and_one_appearing_later_does_not_restart_it(machine):
    from dtcli.engine.launch.warm import WarmEngine

    project = load_project(_project(machine, ""))
    settings, started = WarmEngine.commands(project)
    assert settings == started                      # no archive yet: none mapped, none written
    assert not any("ArchiveClassesAtExit" in part for part in started)
    engine = WarmEngine()
    engine._proc, engine._command = _Running(), settings
    engine._idle_since = __import__("time").monotonic()
    written = class_archive_of(project).path        # a plain `dt run` beside the watch wrote it
    written.parent.mkdir(parents=True, exist_ok=True)
    written.write_bytes(ARCHIVE)
    settings, started = WarmEngine.commands(project)
    assert engine._usable(settings)                 # the running application goes on
    options = next(part for part in started if part.startswith(f"{JAVA}="))
    assert f"-XX:SharedArchiveFile={written}" in options    # the next one started maps it
    assert not any("SharedArchiveFile" in part for part in settings)
