"""SVG charts drawn at generate time: a DT's refreshes as marks on a timeline, its lag over time
against its target, and the overview's bars. Every text in them goes through `escape`."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from markupsafe import Markup, escape

from dtcli.artifacts.manifest import HistoryRow
from dtcli.model.refresh_terms import FAILURE_STATES
from dtcli.ui.site.text import duration, parse_time, seconds_between, timestamp

ACTIONS = ("INCREMENTAL", "FULL", "REINITIALIZE", "NO_DATA", "FAILED")
WIDTH, LEFT, RIGHT = 960, 118, 24
LANE, AXIS = 24, 26
_TICKS = (1, 5, 10, 30, 60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400,
          7 * 86400, 14 * 86400, 30 * 86400)


def lane(row: HistoryRow) -> str:
    """The timeline lane of a refresh: FAILED for failures, else its action."""
    return "FAILED" if row.state in FAILURE_STATES else (row.refresh_action or "UNKNOWN")


class TimeScale:
    """Times to x positions, shared by the timeline and the lag chart so that they line up."""

    def __init__(self, rows: list[HistoryRow], now: datetime, also: datetime | None = None):
        times = [t for r in rows for t in (parse_time(r.refresh_start_time), parse_time(r.refresh_end_time))
                 if t is not None] + ([also] if also else [])
        self.start = min(times, default=now - timedelta(hours=1))
        self.end = max([*times, now])
        if (self.end - self.start).total_seconds() < 60:
            self.start = self.end - timedelta(seconds=60)
        pad = (self.end - self.start) * 0.02
        self.start, self.end = self.start - pad, self.end + pad
        self.span = (self.end - self.start).total_seconds()

    def x(self, when: datetime) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (when - self.start).total_seconds() / self.span

    def axis(self, y: float) -> str:
        step = next((t for t in _TICKS if self.span / t <= 8), _TICKS[-1])
        first = datetime.fromtimestamp((self.start.timestamp() // step + 1) * step, tz=self.start.tzinfo)
        fmt = "%H:%M:%S" if step < 60 else ("%H:%M" if self.span < 86400 else "%m-%d %H:%M")
        if step >= 86400:
            fmt = "%Y-%m-%d"
        out = [f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}"/>']
        tick = first
        while tick <= self.end:
            x = self.x(tick)
            out.append(f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + 4}"/>'
                       f'<text class="tick-label" x="{x:.1f}" y="{y + 16}" text-anchor="middle">'
                       f'{escape(tick.strftime(fmt))}</text>')
            tick += timedelta(seconds=step)
        return "".join(out)


def refresh_timeline(rows: list[HistoryRow], scale: TimeScale) -> Markup:
    """One mark per refresh, in the lane of its action, as wide as it took (at least 3 px), with
    its action, state, duration and rows in its tooltip."""
    lanes = list(ACTIONS) + sorted({lane(r) for r in rows} - set(ACTIONS))
    height = len(lanes) * LANE + AXIS + 8
    out = [f'<svg class="chart timeline" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
           f'role="img" aria-label="refresh history timeline">']
    for k, name in enumerate(lanes):
        y = 4 + k * LANE
        out.append(f'<rect class="lane" x="{LEFT}" y="{y}" width="{WIDTH - LEFT - RIGHT}" height="{LANE - 4}"/>'
                   f'<text class="lane-label" x="{LEFT - 8}" y="{y + 14}" text-anchor="end">{escape(name)}</text>')
    for r in reversed(rows):      # oldest first: newer marks are drawn on top
        start, end = parse_time(r.refresh_start_time), parse_time(r.refresh_end_time)
        if start is None:
            continue
        x0 = scale.x(start)
        x1 = scale.x(end) if end else x0
        y = 4 + lanes.index(lane(r)) * LANE + 3
        took = seconds_between(r.refresh_start_time, r.refresh_end_time)
        tip = (f"{r.refresh_action} {r.state} ({r.refresh_trigger}) at "
               f"{timestamp(r.refresh_start_time)}, took {duration(took)}, "
               f"+{r.statistics.num_inserted_rows} -{r.statistics.num_deleted_rows} rows"
               + (f": {r.state_message}" if r.state_message else ""))
        out.append(f'<rect class="mark mark-{escape(lane(r))}" data-action="{escape(r.refresh_action)}" '
                   f'data-state="{escape(r.state)}" x="{x0:.1f}" y="{y}" width="{max(3.0, x1 - x0):.1f}" '
                   f'height="{LANE - 10}" rx="1.5"><title>{escape(tip)}</title></rect>')
    out.append(scale.axis(len(lanes) * LANE + 6))
    out.append("</svg>")
    return Markup("".join(out))


def lag_points(rows: list[HistoryRow], now: datetime,
               stamp: datetime | None = None) -> list[tuple[datetime, float]]:
    """The lag (now minus the data timestamp) over time: it grows until a refresh ends, then drops
    to that refresh's end minus its data timestamp. Failed refreshes do not move it; NO_DATA ones
    do (the data is current as of their timestamp). `stamp`: the DT's data timestamp now, as its
    Delta log has it (the last point agrees with the page's "lag now" even when the history
    lacks that refresh)."""
    done = sorted((r for r in rows if r.state not in FAILURE_STATES and r.data_timestamp and r.refresh_end_time),
                  key=lambda r: r.refresh_end_time)
    points: list[tuple[datetime, float]] = []
    current: datetime | None = None
    for r in done:
        end, stamp = parse_time(r.refresh_end_time), parse_time(r.data_timestamp)
        if current is not None:
            points.append((end, (end - current).total_seconds()))
        current = stamp if current is None else max(current, stamp)
        points.append((end, max(0.0, (end - current).total_seconds())))
    if stamp is not None and current is None:
        points.append((stamp, 0.0))
    if stamp is not None:
        current = stamp if current is None else max(current, stamp)
    if current is not None:
        points.append((now, (now - current).total_seconds()))
    return points


def lag_chart(rows: list[HistoryRow], scale: TimeScale, now: datetime, target: float | None,
              stamp: datetime | None = None) -> Markup:
    """The lag over time as a line, the target lag as a dashed line."""
    points = lag_points(rows, now, stamp)
    height, top, bottom = 170, 10, 140
    peak = max([p[1] for p in points] + [target or 0, 1.0]) * 1.1

    def y(value: float) -> float:
        return bottom - (bottom - top) * value / peak

    out = [f'<svg class="chart lag" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
           f'role="img" aria-label="lag over time against the target lag">',
           f'<rect class="lane" x="{LEFT}" y="{top}" width="{WIDTH - LEFT - RIGHT}" height="{bottom - top}"/>']
    for value in (0.0, peak / 2 / 1.1, peak / 1.1):
        out.append(f'<text class="lane-label" x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end">'
                   f'{escape(duration(value))}</text>')
    if target:
        out.append(f'<line class="target-line" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(target):.1f}" '
                   f'y2="{y(target):.1f}"><title>target lag {escape(duration(target))}</title></line>'
                   f'<text class="target-label" x="{WIDTH - RIGHT - 4}" y="{y(target) - 4:.1f}" '
                   f'text-anchor="end">target {escape(duration(target))}</text>')
    if points:
        path = " ".join(f"{scale.x(t):.1f},{y(v):.1f}" for t, v in points)
        out.append(f'<polyline class="lag-line" points="{path}"><title>lag</title></polyline>')
    else:
        out.append(f'<text class="empty" x="{(WIDTH + LEFT) / 2}" y="{(top + bottom) / 2}" '
                   f'text-anchor="middle">no successful refresh yet</text>')
    out.append(scale.axis(bottom + 4))
    out.append("</svg>")
    return Markup("".join(out))


def bars(items: Iterable[tuple[str, float, str]], *, unit=duration, css: str = "bar") -> Markup:
    """Vertical bars, one per (label, value, note) item, value printed above each and the
    note's lines below its label."""
    items = list(items)
    width, height, top, bottom = max(360, 44 * len(items) + 40), 202, 22, 160
    peak = max([v for _, v, _ in items] + [1e-9])
    step = (width - 40) / max(1, len(items))
    out = [f'<svg class="chart bars" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img">']
    for k, (label, value, note) in enumerate(items):
        x = 20 + k * step
        h = (bottom - top) * value / peak
        out.append(f'<rect class="{escape(css)}" x="{x + 6:.1f}" y="{bottom - h:.1f}" width="{step - 12:.1f}" '
                   f'height="{h:.1f}"><title>{escape(label)}: {escape(unit(value))} {escape(note)}</title></rect>'
                   f'<text class="bar-value" x="{x + step / 2:.1f}" y="{bottom - h - 5:.1f}" '
                   f'text-anchor="middle">{escape(unit(value)) if value else ""}</text>'
                   f'<text class="tick-label" x="{x + step / 2:.1f}" y="{bottom + 14}" '
                   f'text-anchor="middle">{escape(label)}</text>'
                   + "".join(f'<text class="bar-note" x="{x + step / 2:.1f}" y="{bottom + 27 + 12 * k}" '
                             f'text-anchor="middle">{escape(line)}</text>'
                             for k, line in enumerate(note.split("\n") if value else ())))
    out.append("</svg>")
    return Markup("".join(out))
