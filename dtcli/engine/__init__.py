"""Execution layer: the only part of dt that imports pyspark or delta (inside functions)."""
