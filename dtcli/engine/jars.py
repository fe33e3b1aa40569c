"""The old address of `python -m dtcli.engine.jars provision`, kept for deployment scripts written
before the engine was split by process: the jars live in launch/jars.py."""

import sys

from dtcli.engine.launch.jars import main, provision, resolve

__all__ = ["main", "provision", "resolve"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
