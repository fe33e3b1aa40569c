"""Refresh strategies, one module per refresh kind, each naming the kinds it does
(`STRATEGIES`); looked up by kind rather than through an if/elif chain. The modules are
imported on first use: they import pyspark."""

from __future__ import annotations

from collections.abc import Callable

from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.model import CUSTOM_INCREMENTAL, RefreshStep
from dtcli.model.refresh_terms import AGGREGATE_TOTALS, TOP_N

Strategy = Callable[[RefreshContext], RefreshResult]


def kind_of(step: RefreshStep) -> str:
    """The strategy a step runs: a custom table's statement does every refresh of it, creation
    included; an incremental top-N keeps its internal state in every refresh, FULL included;
    else the step's action."""
    if step.refresh_mode == CUSTOM_INCREMENTAL:
        return CUSTOM_INCREMENTAL
    if step.options.top_n is not None:
        return TOP_N
    if step.options.totals is not None:
        return AGGREGATE_TOTALS
    return step.action


def strategy_for(kind: str) -> Strategy:
    from dtcli.engine.runtime.strategies import aggregate_totals, custom, full, incremental, top_n

    table: dict[str, Strategy] = {**full.STRATEGIES, **incremental.STRATEGIES, **custom.STRATEGIES,
                                  **top_n.STRATEGIES, **aggregate_totals.STRATEGIES}
    try:
        return table[kind]
    except KeyError:
        raise KeyError(f"no refresh strategy registered for {kind}") from None
