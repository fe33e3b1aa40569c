"""The top-N's check whether a row a change removes is among the DT's rows, on the driver: it may
say held when it is not (the top n is then recomputed), never the other way round."""

from __future__ import annotations

import doctest

from dtcli.engine.runtime.strategies import top_n


def test_a_row_with_nan_counts_as_held_as_spark_holds_nan_equal_to_itself():
    nan = float("nan")
    assert top_n.held_among({(1, nan)}, [(1, nan)])
    assert top_n.held_among({(1, 2.0)}, [(3, nan)])         # not there, but taken as held: safe


def test_nulls_compare_equal_as_spark_null_safe_equality_does():
    assert top_n.held_among({(None, "x")}, [(None, "x")])
    assert not top_n.held_among({(None, "x")}, [(None, "y")])
    assert not top_n.held_among(set(), [(1, "x")])


def test_the_doctests():
    assert doctest.testmod(top_n).failed == 0
