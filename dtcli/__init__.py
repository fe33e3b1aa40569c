"""dt: dynamic tables for Apache Spark and Delta Lake."""

__version__ = "0.1.0"
