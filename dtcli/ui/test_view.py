"""What `dt test` and `dt build` print: one line per data test, then a summary line."""

from __future__ import annotations

import json

_LABEL = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "error": "ERROR", "skipped": "SKIP"}
_STYLE = {"pass": "green", "fail": "red", "warn": "yellow", "error": "red", "skipped": "dim"}


def test_line(result: dict) -> str:
    """`FAIL  unique_orders_id (orders): 2 rows, e.g. {"id":2,"rows":2}`."""
    status = result.get("status") or "error"
    head = f"{_LABEL.get(status, status.upper()):<5} {result.get('name')} ({result.get('table')})"
    if status in ("pass",) or (status == "skipped" and not result.get("message")):
        return head
    if status in ("error", "skipped"):
        return f"{head}: {result.get('message')}"
    n = int(result.get("failures") or 0)
    kept = " kept out" if result.get("action") == "drop" else ""
    shown = ", ".join(json.dumps(s, default=str, separators=(",", ":")) for s in (result.get("samples") or [])[:3])
    return f"{head}: {n} row{'s' if n != 1 else ''}{kept}" + (f", e.g. {shown}" if shown else "")


def print_tests(result, out=None) -> None:
    """Each test's line in order, tables not created yet, and the counts (`result`: an api
    TestResult)."""
    from dtcli.ui.output import console

    out = out or console
    counts: dict[str, int] = {}
    for record in result.records:
        if not record.data_tests:       # its tests did not run at all
            out.print(f"ERROR {record.name}: {record.state_message}", style="red", highlight=False, markup=False,
                      soft_wrap=True)
            counts["error"] = counts.get("error", 0) + 1
        for test in record.data_tests or ():
            counts[test.get("status")] = counts.get(test.get("status"), 0) + 1
            out.print(test_line(test), style=_STYLE.get(test.get("status")), highlight=False, markup=False,
                      soft_wrap=True)
    for name in result.not_created:
        out.print(f"SKIP  {name}: not created yet (dt run creates it): its tests did not run", style="dim",
                  highlight=False, markup=False)
    out.print(summary(counts, interrupted=result.interrupted), highlight=False)


def summary(counts: dict[str, int], interrupted: bool = False) -> str:
    words = [("pass", "passed"), ("fail", "failed"), ("warn", "warned"), ("error", "errored"), ("skipped", "skipped")]
    text = ", ".join(f"{counts[k]} {w}" for k, w in words if counts.get(k)) or "no data tests to run"
    return ("stopped by the user: " if interrupted else "") + f"data tests: {text}"
