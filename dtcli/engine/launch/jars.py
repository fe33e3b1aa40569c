"""Jars for spark-submit: provisioned once from Maven into a cache, or given by the user.

Spark's own `--packages` resolver trips over `~/.m2` entries that hold a pom but no jar, and
costs seconds per launch; so dt resolves the jars once with Maven, keeps only those pyspark
does not already ship, and passes the exact list as `spark.jars`. No download at import time.

Two sets: Delta's (always), and S3A's (only for projects with s3a:// paths; see s3_jars.py).
Run `python -m dtcli.engine.launch.jars provision` (the Makefile does) to fill the cache with both.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dtcli.engine.launch.maven import cached, dependency, fetch, pyspark_jars_dir  # noqa: F401 (launcher)
from dtcli.errors import ConfigError

# delta-spark 4.4.1's jar is asked for first; Maven Central may only carry 4.4.0 of the same
# line for Spark 4.2, which the Python package works with, so it is the fallback.
DELTA_ARTIFACT = "io.delta:delta-spark_4.2_2.13"
DELTA_VERSIONS = ("4.4.1", "4.4.0")


def user_jars() -> list[str] | None:
    """Jars the user points at with DT_JARS (comma list of files or directories)."""
    value = os.environ.get("DT_JARS")
    if not value:
        return None
    jars: list[str] = []
    for item in value.split(","):
        p = Path(item.strip()).expanduser()
        if p.is_dir():
            jars.extend(str(j) for j in sorted(p.glob("*.jar")))
        elif p.is_file():
            jars.append(str(p))
        elif item.strip():
            raise ConfigError(f"DT_JARS entry {item} does not exist", hint="point DT_JARS at jar files or a directory")
    return jars


def provisioned() -> list[str] | None:
    for version in DELTA_VERSIONS:
        jars = cached(version)
        if jars is not None:
            return jars
    return None


def resolve(project_jars: tuple[str, ...] = (), *, s3: bool = False) -> list[str]:
    """The jar list for spark.jars: project/target `spark.jars`, DT_JARS, or the cache (Delta's,
    plus S3A's when the project reads or writes s3a:// paths). Jars the user gives are taken
    as they are: an air-gapped cluster's list must hold the S3A jars too if it needs them."""
    if project_jars:
        return list(project_jars)
    given = user_jars()
    if given is not None:
        return given
    jars = provisioned()
    if jars is None:
        jars = provision()
    if s3:
        from dtcli.engine.launch import s3_jars

        jars = jars + s3_jars.resolve()
    return jars


def provision(quiet: bool = False) -> list[str]:
    """Resolve the Delta jars with Maven into the cache (idempotent, fast when done)."""
    done = provisioned()
    if done is not None:
        return done
    errors = []
    for version in DELTA_VERSIONS:
        jars, error = fetch(version, [dependency(f"{DELTA_ARTIFACT}:{version}")], quiet=quiet)
        if jars is not None:
            return jars
        errors.append(f"{version}: {error}")
    raise ConfigError("could not resolve the Delta jars with Maven: " + "; ".join(errors),
                      hint="check access to Maven Central, or set DT_JARS to pre-downloaded jars")


def main(argv: list[str]) -> int:
    if argv[:1] == ["provision"]:
        from dtcli.engine.launch import s3_jars

        for jar in provision() + s3_jars.provision():
            print(jar)
        return 0
    print("usage: python -m dtcli.engine.launch.jars provision", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
