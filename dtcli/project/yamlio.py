"""YAML reading that remembers the line of every mapping key, for errors that point at a line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dtcli.errors import ConfigError


class LineDict(dict):
    """A dict whose `lines` maps each key to its 1-based line in the file."""

    lines: dict[str, int]

    def line_of(self, key: str) -> int | None:
        return getattr(self, "lines", {}).get(key)


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    result = LineDict()
    result.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        result[key] = loader.construct_object(value_node, deep=True)
        result.lines[key] = key_node.start_mark.line + 1
    return result


class LineList(list):
    """A list whose `lines` holds each item's 1-based line in the file."""

    lines: list[int]

    def line_of(self, index: int) -> int | None:
        lines = getattr(self, "lines", [])
        return lines[index] if 0 <= index < len(lines) else None


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.lines = [child.start_mark.line + 1 for child in node.value]
    return result


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml_text(text: str, file: str | Path) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"invalid YAML: {problem}", file=file, line=line,
                          hint="check indentation and quoting around that line") from None


def load_yaml_file(path: Path) -> Any:
    return load_yaml_text(path.read_text(encoding="utf-8"), path)


def expect_mapping(value: Any, file: str | Path, what: str, line: int | None = None) -> LineDict:
    if value is None:
        empty = LineDict()
        empty.lines = {}
        return empty
    if not isinstance(value, dict):
        raise ConfigError(f"{what} must be a mapping (key: value), got {type(value).__name__}",
                          file=file, line=line)
    if not isinstance(value, LineDict):
        value = LineDict(value)
        value.lines = {}
    return value
