"""What `dt run` / `dt refresh` print: the plan (--dry-run), progress, and a one-line summary."""

from __future__ import annotations

from dtcli.events import CatalogChanged, RunEvent, Suspended, Warned


class RunView:
    """Progress display opened once the plan (and so the number of steps) is known."""

    def __init__(self) -> None:
        self.bar = None

    def plan(self, plan) -> None:
        from dtcli.ui.progress import RunProgress

        self.close()
        if plan.steps:
            self.bar = RunProgress(len(plan.steps)).__enter__()

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, Suspended):
            from dtcli.ui.output import err_console

            held = f"; held back downstream: {', '.join(event.downstream)}" if event.downstream else ""
            err_console.print(f"suspended {event.name}: {event.reason}{held}", highlight=False, markup=False)
        elif isinstance(event, CatalogChanged):
            from dtcli.ui.output import err_console

            err_console.print(catalog_line(event), highlight=False, markup=False)
        elif isinstance(event, Warned):
            from dtcli.ui.output import err_console

            err_console.print(f"warning: {event.message}", highlight=False, markup=False, soft_wrap=True)
        elif self.bar:
            self.bar(event)

    def close(self) -> None:
        if self.bar:
            self.bar.__exit__(None, None, None)
            self.bar = None


def catalog_line(event: CatalogChanged) -> str:
    """One line per metastore registration a run did (or failed to do)."""
    name, qualified = event.name, event.qualified_name
    if event.outcome == "REGISTERED":
        again = " (retried after an earlier failure)" if event.retried else ""
        return f"registered {name} as {qualified}{again}"
    if event.outcome == "UNREGISTERED":
        return f"removed {qualified} from the metastore"
    return f"warning: {event.message}"


def print_plan(plan, decision=None) -> None:
    from dtcli.ui.output import print_json

    print_json({"run_id": plan.run_id, "data_timestamp": plan.data_timestamp,
                "source_versions": plan.source_versions,
                "steps": [{"name": s.name, "action": s.action, "trigger": s.trigger,
                           "refresh_mode": s.refresh_mode,
                           "reason": s.options.estimate.action_reason or s.reinit_reason or s.refresh_mode_reason,
                           "change_rows": s.options.estimate.change_rows, "input_rows": s.options.estimate.input_rows,
                           "inputs": {i.name: i.version for i in s.inputs}} for s in plan.steps],
                "not_refreshed": dict(decision.skipped) if decision else {},
                "register": [r.qualified_name for r in plan.registrations],
                "unregister": [r.qualified_name for r in plan.unregistrations]})


def print_summary(result, out=None, prefix: str = "") -> None:
    from dtcli.ui.output import console

    out = out or console

    records = result.records
    succeeded = sum(r.state == "SUCCEEDED" for r in records)
    failed = sum(r.failed for r in records)      # FAILURE_STATES: as the exit code counts
    skipped = len(records) - succeeded - failed
    text = f"{succeeded} succeeded, {failed} failed" + (f", {skipped} skipped" if skipped else "")
    if not records:
        text = "nothing to refresh"
    if getattr(result, "interrupted", False):
        text = "stopped by the user: " + text
    decision = result.decision
    if decision and decision.skipped:
        text += f"; {len(decision.skipped)} not refreshed now"
        if decision.not_due:
            first = min(decision.not_due, key=lambda n: (decision.not_due[n], n))
            text += f" (next due: {first} at {decision.not_due[first].isoformat()[:19]})"
        else:
            text += " (see dt run --dry-run)"
    out.print(prefix + text + ("" if result.launched else " (no Spark needed)"), highlight=False)
