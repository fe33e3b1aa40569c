"""The files dt writes for other tools to read, as types: run_results.json, `dt explain --format
json` and the docs site's project.json. Each is a set of dataclasses carrying a `schema_version`;
their JSON Schemas, derived from the classes, are published in docs/schemas/ (`python -m
dtcli.artifacts docs/schemas` writes them; tests/unit/test_artifacts.py checks that they are the
classes' and that real outputs validate). Builders (planning, api) fill them in; renderers (ui)
read their fields. This package imports nothing of dt's but errors: any layer may use it.
"""

from __future__ import annotations

from dtcli.artifacts.explain import EXPLAIN
from dtcli.artifacts.manifest import MANIFEST
from dtcli.artifacts.run_results import RUN_RESULTS
from dtcli.artifacts.versions import ArtifactKind, ArtifactVersionError

KINDS: tuple[ArtifactKind, ...] = (RUN_RESULTS, EXPLAIN, MANIFEST)

__all__ = ["EXPLAIN", "KINDS", "MANIFEST", "RUN_RESULTS", "ArtifactKind", "ArtifactVersionError"]
