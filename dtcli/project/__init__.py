"""Loading a dt project folder into model objects (no Spark)."""

from dtcli.project.loader import load_project

__all__ = ["load_project"]
