"""`python -m dtcli.artifacts DIR`: write each artifact's JSON Schema into DIR (docs/schemas/),
after a change to its classes (and a new schema_version when a field changed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dtcli.artifacts import KINDS


def schema_text(kind) -> str:
    return json.dumps(kind.schema(), indent=2) + "\n"


def main(out: str) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        (folder / kind.schema_file).write_text(schema_text(kind), encoding="utf-8")
        print(folder / kind.schema_file)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")
