"""Libraries' warnings and log lines stay off the terminal unless --debug (no JVM)."""

from __future__ import annotations

import logging
import warnings

from dtcli import api
from tests.helpers import dt, write_project
from tests.sched_helpers import SRC_CONFIG, write_source


def test_library_warnings_reach_the_terminal_only_with_debug(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {"t": "SELECT x FROM src"}, config=SRC_CONFIG)
    write_source(api.load(root), [1])
    check = api.check

    def noisy_check(*args, **kwargs):
        warnings.warn("pyarrow: a deprecated keyword", FutureWarning, stacklevel=2)
        logging.getLogger("sqlglot").warning("'CREATE DYNAMIC TABLE' contains unsupported syntax")
        logging.getLogger("py4j.clientserver").warning("closing down clientserver connection")
        return check(*args, **kwargs)

    monkeypatch.setattr(api, "check", noisy_check)
    before = [(lg.level, lg.propagate, list(lg.handlers)) for lg in map(logging.getLogger, ("sqlglot", "py4j"))]
    quiet = dt("show", "dynamic", "tables", "-p", str(root))
    assert quiet.code == 0 and quiet.err == "", quiet.err
    loud = dt("--debug", "show", "dynamic", "tables", "-p", str(root))
    assert loud.code == 0
    for text in ("a deprecated keyword", "unsupported syntax", "clientserver connection"):
        assert text in loud.err
    # the silencing ends with the command: nothing changed for the calling process
    assert [(lg.level, lg.propagate, list(lg.handlers))
            for lg in map(logging.getLogger, ("sqlglot", "py4j"))] == before
