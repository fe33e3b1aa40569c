"""What a strategy is given to refresh one DT, and what it hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dtcli.model import Frontier, Plan, RefreshStep


@dataclass
class RefreshContext:
    spark: Any
    plan: Plan
    step: RefreshStep
    input_versions: dict[str, int]     # version each input is read at in this refresh
    frontier: Frontier                 # what the DT will reflect once this refresh commits


@dataclass
class RefreshResult:
    inserted: int = 0
    deleted: int = 0
    copied: int = 0
    table_version: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
