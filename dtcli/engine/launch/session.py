"""In-process local SparkSessions with Delta configured, for `dt test --unit`, tests and notebooks
(spark-submit's driver builds its own: runtime/driver.py)."""

from __future__ import annotations

from contextlib import contextmanager


def _build(conf: dict[str, str], master: str, app_name: str):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def local_session(jars: list[str] | None = None, extra: dict[str, str] | None = None):
    """An in-process local session with the provisioned Delta jars (tests, notebooks)."""
    from dtcli.engine.launch import jars as jarlib
    from dtcli.engine.launch.spark_conf import session_conf

    conf = session_conf(extra or {}, jars if jars is not None else jarlib.resolve())
    conf.setdefault("spark.driver.memory", "2g")
    return _build(conf, master="local[2]", app_name="dt-local")


def project_session(project, jars: list[str] | None = None):
    """A local session configured as the project's refreshes are (its spark.conf and, with
    `catalog:`, its metastore), for notebooks and scripts that read DTs by name:
    `project_session(load_project(".")).table("analytics.customer_revenue")`. With the default
    Derby metastore, one application at a time: not while a dt refresh runs."""
    from dtcli.engine.launch.spark_conf import catalog_conf

    return local_session(jars, {**project.spark_conf, **catalog_conf(project)})


def scratch_session(project, scratch_dir: str, log_path=None):
    """An in-process local session for `dt test --unit`: the project's Spark settings, but no
    metastore of its own and nothing under the project's or the working folder (Spark's
    warehouse folder is `scratch_dir`, removed after), so that unit tests touch no warehouse.
    `log_path`: where the JVM's own output goes (it inherits the stderr it is started with,
    and its start-up lines would fall between the tests' results), as spark-submit's does."""
    conf = {k: v for k, v in project.spark_conf.items()
            if not (k.startswith("spark.sql.catalog") or k.startswith("spark.hadoop.hive")
                    or k in ("spark.sql.warehouse.dir", "spark.master"))}
    conf.update({"spark.sql.catalogImplementation": "in-memory", "spark.sql.warehouse.dir": scratch_dir,
                 "spark.ui.enabled": "false"})
    with _stderr_to(log_path):
        session = local_session(list(project.jars) or None, conf)
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def _stderr_to(path):
    """File descriptor 2 pointed at `path` within the block (None: left alone): a process
    started there keeps writing to the file; this one's stderr comes back after."""
    if path is None:
        yield
        return
    import os
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "a", encoding="utf-8") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
