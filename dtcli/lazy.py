"""Dataclass fields that stay pickled until first read: the sqlglot trees of the check cache.

A warm command over 1,000 DTs unpickled every table's parse tree and qualified query (about
90,000 sqlglot nodes, 0.7 s) to read a handful of them: `validate` and a no-op `run` read the
cached verdicts, `explain NAME` the trees of one DT and its upstream. With `LazyFields` the cache
file holds each such field as its own bytes, unpickled the first time the attribute is read.
"""

from __future__ import annotations

import pickle
from typing import Any, ClassVar

_BLOBS = "_lazy_blobs"


class LazyFields:
    """Mixin for a dataclass: the fields named in `LAZY` are pickled apart and read back on first
    access. Such a field must have no class-level default (use `field(default_factory=...)`),
    so that reading it before it is loaded reaches `__getattr__`."""

    LAZY: ClassVar[tuple[str, ...]] = ()

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        blobs = dict(state.pop(_BLOBS, {}))        # fields never read since the last load stay bytes
        for name in self.LAZY:
            if name in state:
                blobs[name] = pickle.dumps(state.pop(name), protocol=pickle.HIGHEST_PROTOCOL)
        state[_BLOBS] = blobs
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)

    def __getattr__(self, name: str) -> Any:
        # only reached when `name` is not in the instance's __dict__
        blob = self.__dict__.get(_BLOBS, {}).get(name)
        if blob is not None:
            # no pop before the field is set: a second thread reading it meanwhile unpickles too
            value = pickle.loads(blob)
            self.__dict__[name] = value
            self.__dict__[_BLOBS].pop(name, None)
            return value
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
