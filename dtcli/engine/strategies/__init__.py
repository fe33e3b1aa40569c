"""Refresh strategies, one per refresh kind, looked up in a registry rather than an if/elif chain."""

from __future__ import annotations

from collections.abc import Callable

from dtcli.engine.context import RefreshContext, RefreshResult

Strategy = Callable[[RefreshContext], RefreshResult]
_REGISTRY: dict[str, Strategy] = {}


def register(*kinds: str) -> Callable[[Strategy], Strategy]:
    def deco(fn: Strategy) -> Strategy:
        for kind in kinds:
            _REGISTRY[kind] = fn
        return fn
    return deco


def strategy_for(kind: str) -> Strategy:
    _load()
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise KeyError(f"no refresh strategy registered for {kind}") from None


def _load() -> None:
    # Importing the modules registers them.
    from dtcli.engine.strategies import custom, full  # noqa: F401
    try:
        from dtcli.engine.strategies import incremental  # noqa: F401
    except ImportError:
        pass
