"""How the site writes times, durations and names: short, UTC, and safe in a file name."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone

_SAFE_NAME = re.compile(r"[a-z0-9_][a-z0-9_.-]*")


def parse_time(value: str | None) -> datetime | None:
    """An ISO timestamp; one without an offset is UTC, as every time dt writes is."""
    if not value:
        return None
    when = datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def seconds_between(start: str | None, end: str | None) -> float | None:
    a, b = parse_time(start), parse_time(end)
    return max(0.0, (b - a).total_seconds()) if a and b else None


def duration(seconds: float | int | None) -> str:
    """1.2 s, 45 s, 3 min 20 s, 2 h 5 min, 3 d 4 h."""
    if seconds is None:
        return ""
    s = float(seconds)
    if s < 10:
        return f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        m, rest = divmod(round(s), 60)
        return f"{m} min {rest} s" if rest else f"{m} min"
    if s < 86400:
        h, rest = divmod(round(s / 60), 60)
        return f"{h} h {rest} min" if rest else f"{h} h"
    d, rest = divmod(round(s / 3600), 24)
    return f"{d} d {rest} h" if rest else f"{d} d"


def timestamp(value: str | None) -> str:
    """An ISO timestamp to the second, in UTC as dt keeps them."""
    when = parse_time(value)
    if when is None:
        return ""
    return when.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if when.utcoffset() is not None else "")


def page_name(name: str) -> str:
    """A file name for a node's page: the name itself when it is plain (DT names are file stems,
    lower case), else a digest, so no name can climb out of the folder or clash on disk."""
    if _SAFE_NAME.fullmatch(name) and len(name) < 120:
        return f"{name}.html"
    return f"n-{hashlib.sha1(name.encode()).hexdigest()[:16]}.html"
