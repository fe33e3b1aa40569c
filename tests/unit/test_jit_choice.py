"""`spark.jit`: how the JVM of a run compiles, chosen from the plan (no JVM started)."""

import pytest

from dtcli.engine.launch.launcher import submit_command
from dtcli.engine.launch.spark_conf import QUICK_JIT, jit_options
from dtcli.errors import ConfigError
from dtcli.model import FULL, INCREMENTAL, NO_DATA, REINITIALIZE
from dtcli.project.loader import load_project

JAVA = "spark.driver.extraJavaOptions"


@pytest.mark.parametrize("jit, master, actions, quick", [
    ("auto", "local[2]", [INCREMENTAL, NO_DATA], True),      # a run of small refreshes: C1
    ("auto", "local[*]", [INCREMENTAL, FULL], False),        # a recompute scans a whole table: C2
    ("auto", "local[2]", [REINITIALIZE], False),
    ("auto", "local[2]", [], False),
    ("auto", "local[2]", None, False),                       # the warm application lives long
    ("auto", "spark://host:7077", [INCREMENTAL], False),     # the work runs in executors' JVMs
    ("quick", "spark://host:7077", [FULL], True),
    ("quick", "local[2]", None, True),
    ("peak", "local[2]", [INCREMENTAL], False),
])
def test_auto_is_quick_only_for_incremental_plans_on_a_local_master(jit, master, actions, quick):
    chosen = jit_options(jit, master, {}, actions)
    assert (chosen.get(JAVA) == QUICK_JIT) is quick
    assert chosen == ({JAVA: QUICK_JIT} if quick else {})


def test_other_java_options_are_kept_and_the_users_compiler_choice_wins():
    kept = jit_options("auto", "local[2]", {JAVA: "-Dderby.system.home=/x"}, [INCREMENTAL])
    assert kept == {JAVA: f"{QUICK_JIT} -Dderby.system.home=/x"}
    for own in ("-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation"):
        assert jit_options("quick", "local[2]", {JAVA: own}, [INCREMENTAL]) == {}


def _project(tmp_path, spark_yaml: str):
    (tmp_path / "tables").mkdir()
    (tmp_path / "dt_project.yml").write_text(
        "name: p\nwarehouse: wh\nspark:\n  master: local[2]\n" + spark_yaml
        + "targets:\n  big:\n    spark:\n      jit: peak\n")
    return tmp_path


def test_the_setting_reaches_spark_submit_and_a_target_overrides_it(tmp_path):
    root = _project(tmp_path, "  conf:\n    spark.driver.memory: 2g\n")
    project = load_project(root)
    assert project.spark_jit == "auto"
    command = submit_command(project, tmp_path / "plan.json", actions=[INCREMENTAL])
    assert f"{JAVA}={QUICK_JIT}" in command
    assert not any(QUICK_JIT in part for part in submit_command(project, tmp_path / "plan.json",
                                                                actions=[FULL]))
    assert load_project(root, target="big").spark_jit == "peak"


def test_an_unknown_value_is_a_config_error_naming_the_line(tmp_path):
    root = _project(tmp_path, "  jit: fast\n")
    with pytest.raises(ConfigError) as err:
        load_project(root)
    assert "spark.jit" in str(err.value) and err.value.line == 5
