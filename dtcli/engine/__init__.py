"""Execution layer, the only part of dt that imports pyspark or delta (inside functions): launch/
runs in `dt`, runtime/ inside Spark; they meet only through protocol.py and owner_watch.py."""
