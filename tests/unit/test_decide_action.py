"""The refresh action of one DT, as a table: each row a situation and the action (and reason)
that must come out of it; the first rule that applies wins."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dtcli.model import ADAPTIVE, FULL, INCREMENTAL, NO_DATA, REINITIALIZE
from dtcli.planning.plan import Situation, decide_action
from dtcli.planning.refresh_mode import ResolvedMode


def _never():
    raise AssertionError("asked although an earlier rule decides")


BASE = Situation(exists=True, has_frontier=True, custom=False, manual=False, replaced=None,
                 definition_changed=False, keep_frozen=False, frozen_reinit=None, same_columns=_never,
                 full_refresh=False, changed=True, mode=ResolvedMode(INCREMENTAL), custom_action=_never,
                 adaptive_action=_never)

ROWS = [
    # (what differs from BASE, action, words in the reason)
    ({"exists": False}, FULL, "the table is created"),
    ({"exists": False, "definition_changed": True, "full_refresh": True}, FULL, "the table is created"),
    ({"has_frontier": False}, REINITIALIZE, "no dt frontier (created or rewritten outside dt)"),
    ({"has_frontier": False, "custom": True}, REINITIALIZE, "its creation did not finish"),
    ({"replaced": "source o (raw.o) is another table now"}, REINITIALIZE, "is another table now"),
    ({"custom": True, "custom_action": lambda: (INCREMENTAL, "CHANGES() changed")}, INCREMENTAL, "CHANGES()"),
    ({"definition_changed": True, "full_refresh": True}, REINITIALIZE, "the definition changed"),
    ({"definition_changed": True, "keep_frozen": True, "same_columns": lambda: True}, REINITIALIZE,
     "frozen rows are kept"),
    ({"definition_changed": True, "keep_frozen": True, "same_columns": lambda: False}, REINITIALIZE,
     "recomputed too"),
    ({"frozen_reinit": "frozen_where changed"}, REINITIALIZE, "frozen_where changed"),
    ({"full_refresh": True, "changed": False}, FULL, "--full-refresh"),
    ({"changed": False, "mode": ResolvedMode(ADAPTIVE)}, NO_DATA, None),
    ({"mode": ResolvedMode(ADAPTIVE), "adaptive_action": lambda: (FULL, "adaptive: 40% changed")}, FULL,
     "adaptive"),
    ({}, INCREMENTAL, "refresh_mode is INCREMENTAL"),
    ({"mode": ResolvedMode(FULL, "LIMIT is refreshed FULL")}, FULL, "LIMIT is refreshed FULL"),
]


@pytest.mark.parametrize("differs, action, said", ROWS)
def test_the_first_rule_that_applies_decides(differs, action, said):
    decided = decide_action(replace(BASE, **differs))
    assert decided.action == action
    if said is None:
        assert decided.why is None
    else:
        assert said in decided.why
    if action == REINITIALIZE:
        assert decided.reinit == decided.why


def test_creation_is_manual_under_dt_refresh_and_keeps_frozen_rows_only_with_the_same_columns():
    assert decide_action(replace(BASE, exists=False)).creation
    assert not decide_action(replace(BASE, exists=False, manual=True)).creation
    changed = replace(BASE, definition_changed=True, keep_frozen=True, same_columns=lambda: False)
    assert decide_action(changed).keep_frozen is False
