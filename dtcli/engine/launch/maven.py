"""Maven as dt's jar resolver: a pom of the wanted dependencies, `mvn dependency:copy-dependencies`
into a temporary folder, and the jars pyspark does not already ship kept in dt's cache under a
key, with a manifest written last (a complete set, or none). Shared by the Delta jars
(jars.py) and the S3A jars (s3_jars.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dtcli.errors import ConfigError

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


def cached(key: str) -> list[str] | None:
    """The jars cached under `key` (a complete set: its manifest is written last), or None."""
    manifest = cache_dir() / key / MANIFEST
    if manifest.is_file():
        jars = [str(manifest.parent / j) for j in manifest.read_text().split()]
        if all(Path(j).is_file() for j in jars):
            return jars
    return None


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
