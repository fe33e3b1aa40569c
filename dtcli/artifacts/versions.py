"""Which version of a file this dt writes, and how it reads one of another version.

Each file dt writes for other tools carries `schema_version`: the number of its shape, raised
whenever a field is added, removed, renamed or changes type, and published as
docs/schemas/<kind>.v<N>.schema.json. A file of an earlier version is upgraded, step by step,
to the one this dt knows; a file of a later version (a newer dt wrote it) is refused, saying so,
rather than read as if it meant what this dt's fields mean.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dtcli.artifacts.typed_json import from_json, json_schema
from dtcli.errors import DtError


class ArtifactVersionError(DtError):
    """A file of a version this dt cannot read (a newer dt wrote it), or no dt file at all."""


@dataclass(frozen=True)
class ArtifactKind:
    name: str                          # the file names: docs/schemas/<name>.v<version>.schema.json
    version: int                       # what this dt writes
    root: object                       # the type of its documents: a dataclass or a union of them
    version_at: tuple[str, ...]        # where `schema_version` is in a document
    description: str
    # the version of a document that predates its `schema_version` field (None: not one of ours)
    legacy_version: Callable[[dict], int | None] = lambda doc: None
    # version N -> the document of version N + 1
    upgrades: dict[int, Callable[[dict], dict]] = field(default_factory=dict)
    # which class of a union root a document is (by default: the first whose keys it has)
    type_of: Callable[[dict], object] | None = None

    @property
    def schema_file(self) -> str:
        return f"{self.name}.v{self.version}.schema.json"

    def schema(self) -> dict:
        return json_schema(self.root, title=f"dt {self.name}, schema_version {self.version}",
                           schema_id=f"urn:dt:schema:{self.name}:v{self.version}", description=self.description)

    def version_of(self, doc: dict) -> int | None:
        value: object = doc
        for key in self.version_at:
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def upgrade(self, doc: dict, where: str = "") -> dict:
        """`doc` as this dt's version describes it; ArtifactVersionError when it cannot be."""
        label = f"{where}: " if where else ""
        if not isinstance(doc, dict):
            raise ArtifactVersionError(f"{label}not a dt {self.name} document (a JSON object is expected)")
        found = self.version_of(doc)
        if found is None:
            found = self.legacy_version(doc)
        if found is None:
            raise ArtifactVersionError(f"{label}not a dt {self.name} document: it has no "
                                       f"{'.'.join(self.version_at)}")
        if found > self.version:
            raise ArtifactVersionError(
                f"{label}{self.name} schema_version {found} was written by a newer dt; this dt reads "
                f"versions up to {self.version}", hint="upgrade dt, or write the file again with this one")
        while found < self.version:
            if found not in self.upgrades:
                raise ArtifactVersionError(f"{label}{self.name} schema_version {found} is too old for this "
                                           f"dt (it reads {min(self.upgrades, default=self.version)} to "
                                           f"{self.version})", hint="write the file again with this dt")
            doc = self.upgrades[found](doc)
            found += 1
        return doc

    def read(self, doc: dict, where: str = "") -> object:
        """A parsed document as its typed object, upgraded from an earlier version first."""
        doc = self.upgrade(doc, where)
        root = self.type_of(doc) if self.type_of else self.root
        return from_json(root, doc)

    def load(self, path: str | Path) -> object:
        """The file at `path` as its typed object (see `read`)."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ArtifactVersionError(f"cannot read {self.name} document: {e}", file=path) from None
        return self.read(doc, str(path))


def set_version(doc: dict, at: tuple[str, ...], version: int) -> dict:
    """A copy of `doc` with `version` at the path `at` (an upgrade's last step)."""
    out = dict(doc)
    inner = out
    for key in at[:-1]:
        inner[key] = dict(inner.get(key) or {})
        inner = inner[key]
    inner[at[-1]] = version
    return out
