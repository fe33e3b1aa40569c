"""The warm driver's loop (engine/runtime/serve.py) without Spark: plans in order, idle exit, owner death."""

from __future__ import annotations

import io
import os
import threading
import time

from dtcli.engine.protocol import IDLE_EXIT, OWNER_GONE
from dtcli.engine.runtime.serve import PlanInbox, serve
from dtcli.events import Exited


def test_plans_run_in_order_then_the_owner_closing_ends_the_loop(tmp_path):
    read, write = os.pipe()
    os.write(write, f"{tmp_path}/a/plan.json\n\n{tmp_path}/b/plan.json\n".encode())
    events, ran = [], []

    def run_plan(path, should_stop):
        ran.append(path.parent.name)
        if path.parent.name == "b":
            os.close(write)
        return 0

    code = serve(PlanInbox(os.fdopen(read)), 30.0, events.append, run_plan)
    assert code == 0 and ran == ["a", "b"]
    assert events == [Exited(OWNER_GONE)]


def test_plans_already_sent_by_an_owner_that_died_do_not_start(tmp_path):
    ran = []
    inbox = PlanInbox(io.StringIO(f"{tmp_path}/a/plan.json\n{tmp_path}/b/plan.json\n"))
    time.sleep(0.2)                   # the reader saw both lines and the owner's EOF
    serve(inbox, 30.0, lambda e: None, lambda path, stop: ran.append(path.parent.name) or 0)
    assert ran == []


def test_no_plan_within_the_idle_timeout_exits():
    read, write = os.pipe()          # the owner keeps its end open and sends nothing
    events = []
    try:
        started = time.monotonic()
        serve(PlanInbox(os.fdopen(read)), 0.3, events.append, lambda path, stop: 0)
        assert time.monotonic() - started < 5
    finally:
        os.close(write)
    assert events == [Exited(IDLE_EXIT)]


def test_the_owner_dying_mid_plan_stops_it_and_no_other_plan_starts(tmp_path):
    read, write = os.pipe()
    os.write(write, f"{tmp_path}/a/plan.json\n".encode())
    seen_stop, ran = [], []

    def run_plan(path, should_stop):
        ran.append(path.parent.name)
        os.close(write)               # the owner dies while this plan runs
        deadline = time.monotonic() + 5
        while not should_stop() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen_stop.append(should_stop())
        return 0

    events = []
    serve(PlanInbox(os.fdopen(read)), 30.0, events.append, run_plan)
    assert ran == ["a"] and seen_stop == [True]
    assert events == [Exited(OWNER_GONE)]


def test_a_stop_file_beside_the_plan_asks_to_stop(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "stop").write_text("stop requested\n")
    read, write = os.pipe()
    os.write(write, f"{tmp_path}/a/plan.json\n".encode())
    stops = []

    def run_plan(path, should_stop):
        stops.append(should_stop())
        threading.Timer(0.05, os.close, [write]).start()
        return 0

    serve(PlanInbox(os.fdopen(read)), 30.0, lambda e: None, run_plan)
    assert stops == [True]
