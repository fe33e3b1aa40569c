"""What dt quotes from a spark-submit log when the application could not start."""

from __future__ import annotations

from dtcli.engine.launch.launcher import last_error
from dtcli.engine.runtime.driver import startup_error


def test_spark_condition_is_preferred_over_the_exception_that_wraps_it(tmp_path):
    log = tmp_path / "spark-submit.log"
    log.write_text("WARN Utils: Your hostname resolves to a loopback address\n"
                   "java.lang.IllegalArgumentException: Error while instantiating 'SessionStateBuilder':\n"
                   "Caused by: org.apache.spark.SparkIllegalArgumentException: [INVALID_CONF_VALUE.TYPE_MISMATCH] "
                   "The value 'x' in the config \"spark.sql.shuffle.partitions\" is invalid.\n"
                   "\tat org.apache.spark.internal.config.ConfigHelpers$.configTypeMismatchError\n")
    assert last_error(log).startswith("[INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'x'")


def test_without_a_condition_the_last_stated_error_is_quoted(tmp_path):
    log = tmp_path / "spark-submit.log"
    log.write_text("Error: Could not find or load main class org.apache.spark.launcher.Main\nlater noise\n")
    assert last_error(log) == "Could not find or load main class org.apache.spark.launcher.Main"
    assert last_error(tmp_path / "missing.log") is None


def test_startup_error_takes_the_innermost_condition():
    exc = RuntimeError("Error while instantiating 'x':\nCaused by: A: [OUTER] wrapped\n"
                       "Caused by: B: [INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'notanumber' is invalid.")
    assert startup_error(exc) == "[INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'notanumber' is invalid."
