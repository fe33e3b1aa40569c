"""What the `dt` process does to start Spark: jars, settings, spark-submit, the warm application."""
