"""Building a SparkSession with Delta configured, for tests, notebooks and the driver."""

from __future__ import annotations


def build_session(conf: dict[str, str], master: str | None = None, app_name: str = "dt"):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def local_session(jars: list[str] | None = None, extra: dict[str, str] | None = None):
    """An in-process local session with the provisioned Delta jars (tests, notebooks)."""
    from dtcli.engine import jars as jarlib
    from dtcli.engine.spark_conf import session_conf

    conf = session_conf(extra or {}, jars if jars is not None else jarlib.resolve())
    conf.setdefault("spark.driver.memory", "2g")
    return build_session(conf, master="local[2]", app_name="dt-local")


def project_session(project, jars: list[str] | None = None):
    """A local session configured as the project's refreshes are (its spark.conf and, with
    `catalog:`, its metastore), for notebooks and scripts that read DTs by name:
    `project_session(load_project(".")).table("analytics.customer_revenue")`. With the default
    Derby metastore, one application at a time: not while a dt refresh runs."""
    from dtcli.engine.spark_conf import catalog_conf

    return local_session(jars, {**project.spark_conf, **catalog_conf(project)})


def scratch_session(project, scratch_dir: str):
    """An in-process local session for `dt test --unit`: the project's Spark settings, but no
    metastore of its own and nothing under the project's or the working folder (Spark's
    warehouse folder is `scratch_dir`, removed after), so that unit tests touch no warehouse."""
    conf = {k: v for k, v in project.spark_conf.items()
            if not (k.startswith("spark.sql.catalog") or k.startswith("spark.hadoop.hive")
                    or k in ("spark.sql.warehouse.dir", "spark.master"))}
    conf.update({"spark.sql.catalogImplementation": "in-memory", "spark.sql.warehouse.dir": scratch_dir,
                 "spark.ui.enabled": "false"})
    session = local_session(list(project.jars) or None, conf)
    session.sparkContext.setLogLevel("ERROR")
    return session
