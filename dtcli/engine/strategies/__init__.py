"""Refresh strategies, one module per refresh kind, each naming the kinds it does
(`STRATEGIES`); looked up by kind rather than through an if/elif chain. The modules are
imported on first use: they import pyspark."""

from __future__ import annotations

from collections.abc import Callable

from dtcli.engine.context import RefreshContext, RefreshResult

Strategy = Callable[[RefreshContext], RefreshResult]


def strategy_for(kind: str) -> Strategy:
    from dtcli.engine.strategies import custom, full, incremental

    table: dict[str, Strategy] = {**full.STRATEGIES, **incremental.STRATEGIES, **custom.STRATEGIES}
    try:
        return table[kind]
    except KeyError:
        raise KeyError(f"no refresh strategy registered for {kind}") from None
