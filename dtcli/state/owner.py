"""Who a process is, robustly: its pid plus its start time, so a recycled pid is not mistaken
for the dt process that started a run (a heartbeat or a socket covers what /proc cannot see)."""

from __future__ import annotations

import os


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); None where
    there is no /proc or no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after its last ')'
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] if len(fields) > 19 else None


def token(pid: int | None = None) -> str:
    """`PID:START` naming this (or another) process for a child that must watch it."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{start_time(pid) or ''}"


def parse(text: str | None) -> tuple[int, str | None] | None:
    if not text or ":" not in text:
        return None
    pid, start = text.split(":", 1)
    try:
        return int(pid), (start or None)
    except ValueError:
        return None


def alive(pid: int, start: str | None = None) -> bool:
    """Whether process `pid` still runs and (when `start` is known) is the same process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                     # it exists, owned by someone else
    if start is None:
        return True
    now = start_time(pid)
    if now is None:              # no /proc: the pid is all we can go by
        return True
    if _zombie(pid):
        return False
    return now == str(start)


def _zombie(pid: int) -> bool:
    """A killed child its parent has not reaped yet still answers kill(0): it is gone all the same."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False
