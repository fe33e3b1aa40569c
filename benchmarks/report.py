"""The markdown report of `run.py`: results tables, the issue's targets checked, samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
FLOOR_TARGET, MERGE_TARGET, GROWTH_TARGET = 2.0, 1.2, 1.5


def sf_label(sf: float) -> str:
    return f"SF{sf:g}"


def best(runs: list[dict[str, Any]], part: str) -> float | None:
    values = [r[part]["seconds"] for r in runs if part in r]
    return min(values) if values else None


def summarize(result, name: str) -> dict[str, Any]:
    runs = result.runs[name]
    first = runs[0]
    after = first["after_change"]
    s = {"actions": sorted({r["after_change"]["action"] for r in runs}),
         "strategy": after.get("strategy"), "message": after.get("message"),
         "after": best(runs, "after_change"), "full": best(runs, "full"),
         "floor": best(runs, "floor"), "merge": best(runs, "merge"),
         "equal": first.get("equal"), "diff": first.get("diff"),
         "merge_equal": first.get("merge", {}).get("equal"),
         "inserted": after["inserted"], "deleted": after["deleted"],
         "rows": result.dt_rows.get(name, result.creation[name]["inserted"]),
         "profile": min(runs, key=lambda r: r["after_change"]["seconds"])["after_change"].get("profile") or [],
         "samples": {part: [round(r[part]["seconds"], 2) for r in runs if part in r]
                     for part in ("after_change", "full", "floor", "merge")}}
    s["incremental"] = s["actions"] == ["INCREMENTAL"]
    return s


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}×" if a and b else "—"


def _head(out: list[str], title: str, columns: list[tuple[str, str]]) -> None:
    out += ["", title, "", "| " + " | ".join(name for name, _ in columns) + " |",
            "|" + "|".join("---:" if align == "r" else "---" for _, align in columns) + "|"]


def _yes(ok: bool | None) -> str:
    return "—" if ok is None else ("yes" if ok else "**no**")


def markdown(results: list, meta: dict[str, Any], tables) -> str:
    out = [f"Measured {meta['date']} at commit {meta['commit']}"
           f"{' (with uncommitted changes)' if meta['dirty'] else ''}; {meta['repeat']} repetition(s) below SF10, "
           f"{meta['repeat_large']} from SF10; times are the best repetition (every sample is listed below).",
           "", f"Machine: {meta['machine']}; load average (1/5/15 min) {meta['load_before']} before the run, "
           f"{meta.get('load_after', '?')} after. Spark session: {meta['session']}.", ""]
    seen = set()
    for r in results:
        c = r.change
        if r.sf not in seen:
            seen.add(r.sf)
            out.append(f"- {sf_label(r.sf)}: lineitem {r.source_rows['lineitem']:,} rows, orders "
                       f"{r.source_rows['orders']:,}.")
        out.append(f"  - {r.batch} batch: orders +{c['orders']['inserted']:,} / −{c['orders']['deleted']:,} / "
                   f"~{c['orders']['updated']:,}, lineitem +{c['lineitem']['inserted']:,} / "
                   f"−{c['lineitem']['deleted']:,} / ~{c['lineitem']['updated']:,} (inserted / deleted / "
                   f"updated; {100 * c['orders_changed'] / r.source_rows['orders']:.3g} % of orders)")
    batches = list(dict.fromkeys(r.batch for r in results))
    for batch in batches:
        _head(out, f"**{batch} batch: dt's refresh after it, against its floor, FULL and the hand-written "
              "MERGE** (seconds of Spark work; the floor reads the changed inputs' change data and "
              "commits the same rows to the DT, see floor.py)",
              [("DT", "l"), ("SF", "l"), ("action [strategy]", "l"), ("dt (s)", "r"), ("floor (s)", "r"),
               ("dt ÷ floor", "r"), ("FULL (s)", "r"), ("FULL ÷ dt", "r"), ("MERGE (s)", "r"),
               ("dt ÷ MERGE", "r"), ("+rows / −rows", "r"), ("equal to FULL: dt / MERGE", "l")])
        for t in tables:
            for r in (r for r in results if r.batch == batch):
                s = summarize(r, t.name)
                action = "/".join(s["actions"]) + (f" [{s['strategy']}]" if s["strategy"] else "")
                if not s["incremental"] and s["message"]:
                    action += f" ({s['message'][:160]})"
                same = "—" if s["equal"] is None else ("yes" if s["equal"] else f"**no** {s['diff']}")
                out.append(f"| ({t.key}) {t.name} | {r.sf:g} | {action} | {s['after']:.2f} | "
                           f"{s['floor'] or 0:.2f} | {_ratio(s['after'], s['floor'])} | {s['full']:.2f} | "
                           f"{_ratio(s['full'], s['after'])} | {s['merge'] or 0:.2f} | "
                           f"{_ratio(s['after'], s['merge'])} | {s['inserted']:,} / {s['deleted']:,} | "
                           f"{same} / {_yes(s['merge_equal'])} |")
    scales = sorted({r.sf for r in results})
    if len(scales) > 1:
        first, last = scales[0], scales[-1]
        _head(out, f"**Growth with the table, same change**: dt's refresh time per scale factor, and "
              f"{sf_label(last)} ÷ {sf_label(first)} (FULL's growth beside it)",
              [("DT", "l"), ("batch", "l"), *[(sf_label(sf) + " (s)", "r") for sf in scales],
               (f"{sf_label(last)} ÷ {sf_label(first)}", "r"), (f"FULL {sf_label(last)} ÷ {sf_label(first)}", "r")])
        for t in tables:
            for batch in batches:
                row = {r.sf: summarize(r, t.name) for r in results if r.batch == batch}
                if first not in row or last not in row:
                    continue
                cells = [f"{row[sf]['after']:.2f}" if sf in row else "—" for sf in scales]
                out.append(f"| ({t.key}) {t.name} | {batch} | {' | '.join(cells)} | "
                           f"{_ratio(row[last]['after'], row[first]['after'])} | "
                           f"{_ratio(row[last]['full'], row[first]['full'])} |")
    out += ["", "**The issue's targets, as measured in this run**", ""] + targets(results, tables)
    # a run with --no-profile has no profile: an empty table would only say so eighteen times
    if any(summarize(r, t.name)["profile"] for t in tables for r in results):
        _head(out, "**Where dt's refresh time goes** (fastest repetition; cProfile: the time each dtcli "
              "function is the innermost dtcli frame, the Spark work it waits for included)",
              [("DT", "l"), ("SF", "l"), ("batch", "l"), ("total (s)", "r"), ("engine functions (s)", "l")])
        for t in tables:
            for r in results:
                s = summarize(r, t.name)
                sites = ", ".join(f"`{e['function']}` {e['seconds']:.1f}" for e in s["profile"][:5])
                out.append(f"| ({t.key}) {t.name} | {r.sf:g} | {r.batch} | {s['after']:.2f} | {sites or '—'} |")
    out.append("")
    out.append("Samples (s), dt / FULL / floor / MERGE: " + "; ".join(
        f"{t.name} {sf_label(r.sf)} {r.batch} " + " / ".join(str(v) for v in summarize(r, t.name)["samples"].values())
        for t in tables for r in results) + ".")
    floor = meta.get("floor")
    if floor:
        _head(out, "**Delta's fixed cost per commit, same session** (a 1,000-row table with deletion vectors "
              "and change data feed on, best of the repetitions)", [("commit", "l"), ("seconds", "r")])
        out += [f"| {name} | {seconds:.2f} |" for name, seconds in floor.items()]
    return "\n".join(out)


def targets(results: list, tables) -> list[str]:
    lines = []
    by = {(r.sf, r.batch): r for r in results}
    scales = sorted({r.sf for r in results})
    for t in tables:
        parts = []
        floors = [(sf, summarize(by[(sf, "recent")], t.name)) for sf in scales if (sf, "recent") in by]
        if floors and all(s["floor"] for _, s in floors):
            ok = all(s["after"] <= FLOOR_TARGET * s["floor"] for _, s in floors)
            parts.append(f"within {FLOOR_TARGET:g}× its floor (recent) at "
                         f"{', '.join(sf_label(sf) + ' ' + _ratio(s['after'], s['floor']) for sf, s in floors)}: "
                         f"{_yes(ok)}")
        if (3, "recent") in by:
            s = summarize(by[(3, "recent")], t.name)
            if s["merge"]:
                parts.append(f"within {MERGE_TARGET:g}× the hand-written MERGE at SF3 (recent): "
                             f"{_ratio(s['after'], s['merge'])} {_yes(s['after'] <= MERGE_TARGET * s['merge'])}")
        large = max(scales)
        if (large, "recent") in by:
            s = summarize(by[(large, "recent")], t.name)
            parts.append(f"FULL ÷ incremental at {sf_label(large)} (recent) ≥ {t.target:g}×: "
                         f"{_ratio(s['full'], s['after'])} {_yes(s['full'] >= t.target * s['after'])}")
        for batch in ("recent", "spread"):
            if (scales[0], batch) in by and (large, batch) in by and large != scales[0]:
                a, b = summarize(by[(scales[0], batch)], t.name), summarize(by[(large, batch)], t.name)
                ok = b["after"] <= GROWTH_TARGET * a["after"]
                parts.append(f"growth {sf_label(scales[0])}→{sf_label(large)} ({batch}) "
                             f"{_ratio(b['after'], a['after'])}" + (f" ≤ {GROWTH_TARGET:g}×: {_yes(ok)}"
                                                                     if batch == "recent" else ""))
        lines.append(f"- ({t.key}) {t.name}: " + "; ".join(parts) + ".")
    return lines


def update_readme(body: str, command: str) -> None:
    block = f"{BEGIN}\n\nReproduce with {command}.\n\n{body}\n\n{END}"
    text = README.read_text() if README.exists() else (
        "# Benchmarks\n\nSee `benchmarks/run.py` for what is measured.\n\n## Results\n\n" + BEGIN + "\n" + END + "\n")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Results\n\n" + block + "\n"
    README.write_text(text)
