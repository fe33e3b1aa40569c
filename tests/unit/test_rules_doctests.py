"""Every rule of dtcli/sql/rules documents its rewrite with doctests: they are run here."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import dtcli.sql.rules as rules

MODULES = ["dtcli.sql.rules"] + [f"dtcli.sql.rules.{m.name}" for m in pkgutil.iter_modules(rules.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_rule_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_every_rule_module_is_registered():
    """A rule module that is not in RULES never runs: the analyzer would judge constructs the
    compiler then never sees rewritten. A split (rules.SPLITS) is applied by planning instead."""
    registered = {rule.__module__ for rule in rules.RULES} | {m.__name__ for m in rules.SPLITS}
    modules = {f"dtcli.sql.rules.{m.name}" for m in pkgutil.iter_modules(rules.__path__)
               if not m.name.startswith("_")}
    assert modules <= registered, modules - registered
