"""Warehouse state read and written without a JVM: Delta versions, frontiers, refresh history."""
