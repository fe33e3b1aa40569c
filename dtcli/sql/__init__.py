"""SQL parsing, analysis and rewriting with sqlglot (no Spark)."""
