"""What the analysis of one query yields: each operator's strategy, and whether it is incremental."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class OperatorInfo:
    operator: str
    strategy: str
    considerations: tuple[str, ...]
    line: int | None
    incremental: bool


@dataclass(frozen=True)
class QueryAnalysis:
    incremental: bool
    reason: str | None
    operators: tuple[OperatorInfo, ...]
    blockers: tuple[str, ...]

    def to_dict(self) -> dict:
        return {
            "incremental": self.incremental,
            "reason": self.reason,
            "operators": [dict(asdict(op), considerations=list(op.considerations))
                          for op in self.operators],
            "blockers": list(self.blockers),
        }
