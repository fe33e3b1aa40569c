"""Dataclasses as JSON, both ways, and their JSON Schema, derived from the type hints alone.

One description of a file (the dataclasses of its module) gives what dt writes (`to_json`), what
it reads back (`from_json`) and the schema it publishes (`json_schema`), so the three cannot
drift apart: a field added to a class is written, read and published at once (and the schema
files in docs/schemas/ are compared with the classes by a unit test). dbt derives its artifacts'
schemas from its dataclasses the same way.

The hints understood: str, int, float, bool, `X | None`, list[X], tuple[X, ...], dict[str, X],
a dataclass, a union of dataclasses, and `JSON` (a value dt passes through as it is: a user's
config value, a command's argument, a sampled row). A field whose metadata has `omit_none` is
left out of the document when it is None (a key that is present only in some files).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from typing import Union

# Any JSON value, not described further: what the user wrote (config values, arguments) or
# what a table held (sampled rows). `object`, not Any: a reader must look before it uses one.
JSON = object

OMIT_NONE = {"omit_none": True}


def optional_field(**kwargs):
    """A field left out of the document when it is None (its key appears only when it applies)."""
    return dataclasses.field(default=None, metadata=OMIT_NONE, **kwargs)


@functools.cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _fields(cls: type) -> list[tuple[dataclasses.Field, object]]:
    hints = _hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls)]


def _args(hint: object) -> tuple[object, ...]:
    return typing.get_args(hint)


def _is_union(hint: object) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


_SCALAR_TYPES = (str, int, float, bool, type(None))


@functools.cache
def _written(cls: type) -> tuple[int, tuple[str, ...]]:
    """A dataclass's number of fields, and the fields left out when None."""
    fields = dataclasses.fields(cls)
    return len(fields), tuple(f.name for f in fields if f.metadata.get("omit_none"))


def to_json(value: object) -> object:
    """A dataclass (and what it holds) as the JSON value dt writes, fields in their order.
    An instance's __dict__ holds its fields in that order, copied in one step, and only its
    values that are not scalars are walked: a big site's project.json holds 20,000 history
    rows, and a walk field by field added about a second to `dt docs generate`."""
    if isinstance(value, _SCALAR_TYPES):
        return value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        count, omitted = _written(type(value))
        out = dict(vars(value))
        if len(out) != count:       # an attribute set beside the fields: the fields only
            out = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        for key, item in out.items():
            if not isinstance(item, _SCALAR_TYPES):
                out[key] = to_json(item)
        for key in omitted:
            if out[key] is None:
                del out[key]
        return out
    return value


def dumps(value: object, **options) -> str:
    """`json.dumps(to_json(value))` without building the intermediate copy: the C encoder asks
    `_fields_of` for each dataclass it meets (one call per object, not one per value: 20,000
    history rows of a big site's project.json took 0.5 s more through `to_json`). Anything
    else JSON does not know is written as its str(), as dt always wrote it."""
    return json.dumps(value, default=_fields_of, **options)


def _fields_of(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        count, omitted = _written(type(value))
        out = dict(vars(value))
        if len(out) != count:
            out = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        for key in omitted:
            if out[key] is None:
                del out[key]
        return out
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def from_json(hint: object, value: object) -> object:
    """`value` (parsed JSON) as the type `hint` says; a key a dataclass lacks takes the field's
    default, or is empty (None, [] or {}: a document an earlier dt wrote). Keys the class
    does not know are dropped."""
    if hint is JSON or value is None:
        return value
    if _is_union(hint):
        choices = [a for a in _args(hint) if a is not type(None)]
        if len(choices) == 1:
            return from_json(choices[0], value)
        return _pick(choices, value)
    origin = typing.get_origin(hint)
    if origin in (list, tuple):
        item = _args(hint)[0]
        items = [from_json(item, v) for v in value]
        return items if origin is list else tuple(items)
    if origin is dict:
        item = _args(hint)[1]
        return {k: from_json(item, v) for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return _dataclass(hint, value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _dataclass(cls: type, value: dict) -> object:
    args = {}
    for f, hint in _fields(cls):
        if f.name in value:
            args[f.name] = from_json(hint, value[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            args[f.name] = _empty(hint)
    return cls(**args)


def _empty(hint: object) -> object:
    """The value of a key a document lacks: an empty list or map for one, else None."""
    origin = typing.get_origin(hint)
    return [] if origin is list else () if origin is tuple else {} if origin is dict else None


def _pick(choices: list[object], value: object) -> object:
    """A union of dataclasses: the first whose required keys the value has."""
    for option in choices:
        if dataclasses.is_dataclass(option) and isinstance(value, dict) and \
                all(f.name in value for f, _ in _fields(option) if not f.metadata.get("omit_none")):
            return _dataclass(option, value)
    raise ValueError(f"no type of {choices} matches {sorted(value) if isinstance(value, dict) else value!r}")


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema(root: object, *, title: str, schema_id: str, description: str) -> dict:
    """The JSON Schema (draft 2020-12) of documents of type `root`: every dataclass a definition
    (`$defs`), every field required (but the `omit_none` ones) and no other key allowed, so that
    a document with a key the classes do not declare fails validation."""
    defs: dict[str, dict] = {}
    body = _schema(root, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id, "title": title,
            "description": description, **body, "$defs": dict(sorted(defs.items()))}


def _schema(hint: object, defs: dict[str, dict]) -> dict:
    if hint is JSON:
        return {}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if _is_union(hint):
        choices = [a for a in _args(hint) if a is not type(None)]
        nullable = len(choices) < len(_args(hint))
        inner = [_schema(o, defs) for o in choices]
        if nullable and len(inner) == 1 and set(inner[0]) == {"type"}:
            return {"type": [inner[0]["type"], "null"]}
        return {"anyOf": inner + ([{"type": "null"}] if nullable else [])}
    origin = typing.get_origin(hint)
    if origin in (list, tuple):
        return {"type": "array", "items": _schema(_args(hint)[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(_args(hint)[1], defs)}
    if dataclasses.is_dataclass(hint):
        name = hint.__name__
        if name not in defs:
            defs[name] = {}          # placed first: a class that holds itself refers to it
            defs[name] = _object(hint, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {hint!r}")


def _object(cls: type, defs: dict[str, dict]) -> dict:
    doc = " ".join((cls.__doc__ or "").split())
    fields = _fields(cls)
    out = {"type": "object"}
    if doc and not doc.startswith(f"{cls.__name__}("):    # not dataclasses' generated signature
        out["description"] = doc
    out.update({"properties": {f.name: _schema(hint, defs) for f, hint in fields},
                "required": [f.name for f, _ in fields if not f.metadata.get("omit_none")],
                "additionalProperties": False})
    return out
