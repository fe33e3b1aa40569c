"""The Spark configuration every dt application runs with (pure Python: the launcher uses it)."""

from __future__ import annotations

BASE_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Every DT is written with the change data feed on, so DTs downstream of it can read changes.
    "spark.databricks.delta.properties.defaults.enableChangeDataFeed": "true",
    # ... and with deletion vectors: an incremental refresh that removes a few rows marks them
    # deleted instead of rewriting every file that holds one (copy-on-write).
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.log.level": "WARN",
    # Delta rebuilds table state with this many tasks (default 50); on a laptop or CI runner
    # that costs seconds per table read. Clusters with big logs should raise it in spark.conf.
    "spark.databricks.delta.snapshotPartitions": "2",
}


def session_conf(project_conf: dict[str, str], jars: list[str]) -> dict[str, str]:
    conf = dict(BASE_CONF)
    conf.update(project_conf)
    if jars:
        conf["spark.jars"] = ",".join(jars)
    return conf
