"""Target lag: parsing `target_lag` values and resolving them over the DAG.

A DT either declares a time lag (how stale it may get) or `downstream` (refresh only when a
consumer needs it). Resolution turns those declarations into one effective lag per DT, which the
scheduler turns into a refresh period (see schedule.py and DESIGN.md section 6).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dtcli.errors import ConfigError, ValidationError

MIN_LAG_SECONDS = 60  # Snowflake's floor is one minute; shorter lags are rejected, not rounded up.

_UNIT_SECONDS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
}
# Largest unit first, so display text picks the biggest unit that divides the lag evenly.
_DISPLAY_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))

_LAG_RE = re.compile(r"^(\d+)\s*([a-z]+)$")
_HINT = "use a time span such as '90 seconds', '10 minutes', '2 hours', '1 day', or 'downstream'"


@dataclass(frozen=True)
class TargetLag:
    seconds: int | None  # None means DOWNSTREAM
    text: str  # normalised display text: "10 minutes", "1 hour", "downstream"

    @property
    def is_downstream(self) -> bool:
        return self.seconds is None

    def __str__(self) -> str:
        return self.text


DOWNSTREAM = TargetLag(None, "downstream")


def lag_text(seconds: int) -> str:
    """A lag in the biggest unit that divides it: 60 -> '1 minute', 90 -> '90 seconds'."""
    # Normalising from the seconds (not echoing the user's unit) keeps equality meaningful:
    # '60 minutes' and '1 hour' parse to the same TargetLag.
    for unit, size in _DISPLAY_UNITS:
        if seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}" + ("" if n == 1 else "s")
    raise AssertionError("unreachable: 1 divides every integer")


def parse_target_lag(value: object, *, file=None, line=None) -> TargetLag:
    """Parse a `target_lag` config value; raise ConfigError (with file/line) when it is not one."""
    if isinstance(value, TargetLag):
        return value
    # bool is an int subclass, and a bare YAML number has no unit: both are rejected as bad text.
    if not isinstance(value, str):
        raise ConfigError(f"target_lag {value!r} is not a time span or 'downstream'",
                          file=file, line=line, hint=_HINT)
    text = " ".join(value.split()).lower()
    if text == "downstream":
        return DOWNSTREAM
    match = _LAG_RE.match(text)
    if not match or match.group(2) not in _UNIT_SECONDS:
        raise ConfigError(f"target_lag {value!r} is not a time span or 'downstream'",
                          file=file, line=line, hint=_HINT)
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds < MIN_LAG_SECONDS:
        raise ConfigError(f"target_lag {value!r} is below the minimum of 1 minute",
                          file=file, line=line, hint="use '1 minute' or longer, or 'downstream'")
    return TargetLag(seconds, lag_text(seconds))


@dataclass(frozen=True)
class LagResolution:
    effective_seconds: dict[str, int | None]  # None = not scheduled (no time-lagged consumer)
    warnings: dict[str, list[str]]  # only DTs that have warnings appear


def resolve_lags(lags: dict[str, TargetLag], upstream: dict[str, list[str]],
                 files: dict[str, str] | None = None) -> LagResolution:
    """Check the lag rules and compute each DT's effective lag.

    `upstream[name]` lists the DTs `name` reads. Names in `upstream` that are not in `lags`
    (sources, or unknown names that the DAG check reports) are ignored here.
    """
    files = files or {}
    ups = {name: [u for u in upstream.get(name, ()) if u in lags] for name in lags}
    _check_not_shorter_than_upstream(lags, ups, files)

    # A downstream DT must refresh whenever any consumer needing it does, so it takes the
    # shortest lag among its time-lagged consumers, reached through chains of downstream DTs.
    # Visiting time-lagged DTs shortest-first means the first lag to reach a DT is its minimum,
    # so each DT is assigned once (and a cycle, reported elsewhere, cannot loop us).
    effective: dict[str, int | None] = {n: lag.seconds for n, lag in lags.items()}
    timed = sorted((n for n, lag in lags.items() if not lag.is_downstream),
                   key=lambda n: (lags[n].seconds, n))
    assigned: set[str] = set(timed)
    for source in timed:
        stack = [source]
        while stack:
            for u in ups[stack.pop()]:
                if u not in assigned:  # only downstream DTs can still be unassigned
                    assigned.add(u)
                    effective[u] = lags[source].seconds
                    stack.append(u)

    warnings = {
        name: [f"{name} has target_lag downstream but no DT with a time lag reads it (directly "
               f"or through downstream DTs), so it will never be refreshed by schedule; give it "
               f"a time target_lag or add a consumer that has one"]
        for name in lags if effective[name] is None
    }
    return LagResolution(effective_seconds=effective, warnings=warnings)


def _check_not_shorter_than_upstream(lags: dict[str, TargetLag], ups: dict[str, list[str]],
                                     files: dict[str, str]) -> None:
    """A DT cannot be fresher than its inputs: its time lag must be >= every upstream time lag.

    Downstream-lagged upstreams have no lag of their own, so we look through them to the nearest
    time-lagged DTs (T reads D reads U: T's lag must still be >= U's). Deeper ancestors are
    covered by those nearest ones being checked in turn.
    """
    for name in sorted(lags):
        own = lags[name]
        if own.is_downstream:
            continue
        too_slow: dict[str, list[str]] = {}  # upstream name -> downstream DTs in between
        seen: set[str] = set()
        stack: list[tuple[str, list[str]]] = [(u, []) for u in ups[name]]
        while stack:
            up, via = stack.pop()
            if up in seen:
                continue
            seen.add(up)
            if lags[up].is_downstream:
                stack.extend((u, via + [up]) for u in ups[up])
            elif lags[up].seconds > own.seconds:
                too_slow[up] = via
        if too_slow:
            # Name the slowest upstream: raising `name` to its lag fixes every violation here.
            up = min(too_slow, key=lambda u: (-lags[u].seconds, u))
            via = too_slow[up]
            through = f" through {', '.join(via)}" if via else ""
            raise ValidationError(
                f"{name} has target_lag {own.text}, shorter than the {lags[up].text} of {up}, "
                f"which it reads{through}; a DT cannot be fresher than the DTs it reads",
                file=files.get(name),
                hint=f"raise {name}'s target_lag to at least {lags[up].text}, or lower {up}'s "
                     f"target_lag or set it to downstream")
