"""A top-N's window with OFFSET, and the engine's top-N step, in plain Python (unit tests of the
split and the step; the Spark checks use tests/top_n.py, which splits the query on its own).

A top-N with ties at its boundary has several right answers, so it is not compared with one
recompute as a multiset. It is right when, with the query's unlimited result sorted by the
ORDER BY keys (ties in any order), the DT holds the rows of some such order at positions
offset+1 .. offset+limit: every key group wholly inside that window entirely, and of a group
the window cuts, as many rows of it as fall inside. For offset 0 that is: the DT is a
sub-multiset of the result, it has min(limit, |result|) rows, and no row outside it sorts
strictly before its last row.

`order`: (index into a result row, descending, nulls first) per ORDER BY key, as Spark sorts
(NULLs first when ascending, last when descending, unless the query says otherwise). A result
row may carry hidden columns after the DT's (sort keys that are not outputs): the DT's rows are
compared with the result rows' first columns. Values compare as Python compares them (Spark's
order for numbers, dates, and strings by code point); NaN is not handled.

>>> rows = [(1, "a"), (2, "b"), (2, "c"), (3, "d"), (None, "e")]
>>> asc = [(0, False, True)]
>>> top_n_mismatch([(None, "e"), (1, "a")], rows, asc, 2) is None
True
>>> top_n_mismatch([(1, "a"), (2, "c")], rows, [(0, False, False)], 2) is None    # a tie: either
True
>>> top_n_mismatch([(1, "a"), (3, "d")], rows, [(0, False, False)], 2)
"0 rows of a tie at the window's edge, where it holds 1"
>>> top_n_mismatch([(1, "a"), (9, "z")], rows, asc, 2)
"rows the window must hold are missing: [(None, 'e')]"
>>> top_n_mismatch([(2, "b")], rows, [(0, True, False)], 1, offset=1) is None
True

`refresh_top_n` is the engine's refresh step in plain Python, for oracles that emulate refreshes:

>>> held = Counter([(1, "a"), (2, "b")])
>>> refresh_top_n(held, Counter({(0, "z"): 1}), lambda: [], asc, 2, 0, 2)
(Counter({(0, 'z'): 1, (1, 'a'): 1}), 'top_n_merged')
>>> refresh_top_n(held, Counter({(1, "a"): -1}), lambda: [(2, "b"), (3, "c")], asc, 2, 0, 2)[1]
'recomputed'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import cmp_to_key

Order = Sequence[tuple[int, bool, bool]]


def compare(a: tuple, b: tuple, order: Order) -> int:
    """-1, 0 or 1: how row `a` sorts against row `b` under `order` (0: a tie)."""
    for index, desc, nulls_first in order:
        x, y = a[index], b[index]
        if x is None or y is None:
            if x is None and y is None:
                continue
            first = (x is None) == nulls_first
            return -1 if first else 1
        if x == y:
            continue
        c = -1 if x < y else 1
        return -c if desc else c
    return 0


def top_n_mismatch(dt_rows: Sequence[tuple], result_rows: Sequence[tuple], order: Order,
                   limit: int | None, offset: int = 0) -> str | None:
    """None when `dt_rows` is a window the top-N may hold, else what is wrong."""
    width = len(dt_rows[0]) if dt_rows else (len(result_rows[0]) if result_rows else 0)
    ordered = sorted(result_rows, key=cmp_to_key(lambda a, b: compare(a, b, order)))
    end = len(ordered) if limit is None else min(len(ordered), offset + limit)
    want = max(0, end - offset)
    if len(dt_rows) != want:
        return f"{len(dt_rows)} rows, the window holds {want} (result: {len(ordered)} rows)"
    must: Counter = Counter()
    cut: list[tuple[Counter, int]] = []        # groups the window cuts: their rows, how many inside
    start = 0
    while start < len(ordered):
        stop = start + 1
        while stop < len(ordered) and compare(ordered[start], ordered[stop], order) == 0:
            stop += 1
        inside = max(0, min(stop, end) - max(start, offset))
        rows = Counter(tuple(r[:width]) for r in ordered[start:stop])
        if inside == stop - start:
            must += rows
        elif inside:
            cut.append((rows, inside))
        start = stop
    held = Counter(tuple(r) for r in dt_rows)
    missing = must - held
    if missing:
        return f"rows the window must hold are missing: {sorted(missing.elements(), key=repr)[:5]}"
    rest = held - must
    for rows, inside in cut:
        taken = Counter({r: min(n, rows[r]) for r, n in rest.items() if r in rows})
        while sum(taken.values()) > inside:        # more than the group can give: trim any
            taken[next(iter(+taken))] -= 1
            taken = +taken
        if sum(taken.values()) != inside:
            return f"{sum(taken.values())} rows of a tie at the window's edge, where it holds {inside}"
        rest -= taken
    if rest:
        return f"rows the window cannot hold: {sorted(rest.elements(), key=repr)[:5]}"
    return None


def window(rows: Sequence[tuple], order: Order, limit: int | None, offset: int = 0) -> list[tuple]:
    """The rows a top-N keeps of `rows` (sorted stably: earlier rows first among ties)."""
    ordered = sorted(rows, key=cmp_to_key(lambda a, b: compare(a, b, order)))
    return ordered[offset:None if limit is None else offset + limit]


def refresh_top_n(held: Counter, net: Counter, inner_now: Callable[[], Sequence[tuple]], order: Order,
                  limit: int | None, offset: int, outputs: int) -> tuple[Counter, str]:
    """The engine's top-N step (dtcli/engine/runtime/strategies/top_n.py) in plain Python, for oracles
    that emulate refreshes (tests/fuzz/oracle.py): `held` the DT's rows, `net` the inner query's
    net change ({row with its hidden sort columns: weight}), `inner_now()` the inner query's rows
    now (what the engine reads from the internal table or recomputes from the input). Returns
    the DT's new rows and the path (`top_n_merged`, `recomputed`, `no_row_changed`)."""
    net = Counter({r: w for r, w in net.items() if w})
    if not net:
        return Counter(held), "no_row_changed"
    lost = {r[:outputs] for r, w in net.items() if w < 0}
    hidden = any(k[0] >= outputs for k in order)
    if offset or hidden or limit is None or lost & set(held):
        return Counter(r[:outputs] for r in window(list(inner_now()), order, limit, offset)), "recomputed"
    gained = [r[:outputs] for r, w in net.items() if w > 0 for _ in range(w)]
    return Counter(window(list(held.elements()) + gained, order, limit)), "top_n_merged"

