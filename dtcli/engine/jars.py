"""Jars for spark-submit: provisioned once from Maven into a cache, or given by the user.

Spark's own `--packages` resolver trips over `~/.m2` entries that hold a pom but no jar, and
costs seconds per launch; so dt resolves the jars once with Maven, keeps only those pyspark
does not already ship, and passes the exact list as `spark.jars`. No download at import time.

Two sets: Delta's (always), and S3A's (only for projects with s3a:// paths; see s3_jars.py).
Run `python -m dtcli.engine.jars provision` (the Makefile does) to fill the cache with both.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dtcli.errors import ConfigError

# delta-spark 4.4.1's jar is asked for first; Maven Central may only carry 4.4.0 of the same
# line for Spark 4.2, which the Python package works with, so it is the fallback.
DELTA_ARTIFACT = "io.delta:delta-spark_4.2_2.13"
DELTA_VERSIONS = ("4.4.1", "4.4.0")
MANIFEST = "manifest.txt"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>dt.provision</groupId><artifactId>dt-jars</artifactId><version>1</version>
<packaging>pom</packaging><dependencies>{dependencies}</dependencies></project>
"""


def dependency(coordinate: str, exclude: tuple[str, ...] = ()) -> str:
    """A pom <dependency> for `group:artifact:version`, without the `group:artifact`s excluded."""
    group, artifact, version = coordinate.split(":")
    exclusions = "".join(f"<exclusion><groupId>{x.split(':')[0]}</groupId><artifactId>{x.split(':')[1]}"
                         "</artifactId></exclusion>" for x in exclude)
    return (f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version>" + (f"<exclusions>{exclusions}</exclusions>" if exclusions else "")
            + "</dependency>")


def cache_dir() -> Path:
    base = os.environ.get("DT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "dt")
    return Path(base) / "jars"


def pyspark_jars_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("pyspark is not installed", hint="run `make demo` or `pip install -e .`")
    return Path(list(spec.submodule_search_locations)[0]) / "jars"


def _artifact_name(jar: str) -> str:
    return re.sub(r"-\d[\w.]*(-\d+)?\.jar$", "", jar)


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


def cached(key: str) -> list[str] | None:
    """The jars cached under `key` (a complete set: its manifest is written last), or None."""
    manifest = cache_dir() / key / MANIFEST
    if manifest.is_file():
        jars = [str(manifest.parent / j) for j in manifest.read_text().split()]
        if all(Path(j).is_file() for j in jars):
            return jars
    return None


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
        from dtcli.engine import s3_jars

        jars = jars + s3_jars.resolve()
    return jars


def fetch(key: str, dependencies: list[str], quiet: bool = False) -> tuple[list[str] | None, str]:
    """Resolve `dependencies` (pom <dependency> elements) with Maven into the cache under `key`,
    keeping the jars pyspark does not ship: (jars, "") or (None, Maven's last words)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConfigError("jars are not provisioned and Maven (mvn) is not on PATH",
                          hint="install Maven, or set DT_JARS to pre-downloaded jars")
    shipped = {_artifact_name(j.name) for j in pyspark_jars_dir().glob("*.jar")}
    with tempfile.TemporaryDirectory(prefix="dt-jars-") as tmp:
        (Path(tmp) / "pom.xml").write_text(_POM.format(dependencies="".join(dependencies)))
        out = Path(tmp) / "jars"
        proc = subprocess.run([mvn, "-q", "-B", "dependency:copy-dependencies",
                               f"-DoutputDirectory={out}", "-DincludeScope=runtime"],
                              cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            return None, ((proc.stdout + proc.stderr).strip().splitlines() or [key])[-1]
        keep = sorted(j.name for j in out.glob("*.jar") if _artifact_name(j.name) not in shipped)
        target = cache_dir() / key
        cache_dir().mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache_dir()))
        for name in keep:
            shutil.copy2(out / name, staging / name)
        (staging / MANIFEST).write_text("\n".join(keep) + "\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)  # the manifest appears only with a complete jar set
    if not quiet:
        size = sum((target / n).stat().st_size for n in keep) / 1e6
        print(f"dt: {key} jars provisioned in {target} ({len(keep)} jars, {size:.0f} MB)", file=sys.stderr)
    return [str(target / n) for n in keep], ""


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
        from dtcli.engine import s3_jars

        for jar in provision() + s3_jars.provision():
            print(jar)
        return 0
    print("usage: python -m dtcli.engine.jars provision", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
