"""Validating what dt writes against the JSON Schemas it publishes in docs/schemas/ (the files
themselves, as a CI job of a user would read them, not the classes they are derived from)."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"


def published_schema(kind_name: str) -> dict:
    from dtcli import artifacts

    kind = next(k for k in artifacts.KINDS if k.name == kind_name)
    return json.loads((SCHEMAS / kind.schema_file).read_text(encoding="utf-8"))


def schema_errors(kind_name: str, doc: object) -> list[str]:
    """What in `doc` breaks the published schema of `kind_name` (empty: it validates)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(published_schema(kind_name))
    out = []
    for error in validator.iter_errors(doc):
        # an anyOf (run_results' three documents) says only "not valid under any": its branches say why
        for e in (error.context or [error]):
            out.append(f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300])
    return out
