"""The driver JVM's class-data-sharing archive (`spark.class_archive`), pure Python.

A dt application's JVM loads some 30,000 classes of Spark, Delta and their libraries, each read
from its jar, parsed and verified: on a 2-core machine seconds of every `dt run`. Java 17 can
write the classes an application loaded into an archive when it exits
(`-XX:ArchiveClassesAtExit`) and map that archive into later JVMs (`-XX:SharedArchiveFile`),
which then skip that work: a `dt run` of the example project took 38.4 s instead of 41.7 s
(median of three, docs/configuration.md). The first run on a machine pays for writing it
(about 18 s at exit, 225 MB); the archive belongs to one Java, one set of jars and one class
path, so its name is a digest of them and a new pyspark or Delta version writes a new one.

The JVM checks the archive itself (Java build, class path, the jars' sizes and times) and runs
without it when anything differs, so a stale archive costs its speed-up, never a wrong class.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

KEEP = 3                # archives kept (one per Java and jar set: a project with s3a jars has its own)
STALE_SECONDS = 3600    # an unfinished archive older than this belongs to a run that was killed
# the JVM's own CDS messages (an archive it cannot use, classes it cannot archive) would go to
# the driver's stdout, dt's event channel; they change nothing about the run
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
_OWN_FLAGS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")
DYNAMIC_MAGIC = bytes.fromhex("a8ab0bf0")     # 0xf00baba8, the first word of Java 17's dynamic archive


@dataclass(frozen=True)
class ClassArchive:
    java_options: str        # for spark.driver.extraJavaOptions
    writing: Path | None     # the archive this run writes at exit (kept unless the JVM is killed)
    path: Path

    def settle(self, returncode: int) -> None:
        """After the application exited: keep the archive it wrote if the JVM ended by itself
        (a run whose refresh failed, exit code 1, still wrote all of it), drop it if the JVM
        was killed (a negative code: the signal) or wrote no archive."""
        if self.writing is None:
            return
        try:
            if returncode >= 0 and is_archive(self.writing):
                os.replace(self.writing, self.path)
                _prune(self.path.parent)
            else:
                self.writing.unlink(missing_ok=True)
        except OSError:
            pass      # a cache: the next run tries again


def for_driver(mode: str, conf: dict[str, str], spark_home: Path, jars: list[str],
               write: bool = True) -> ClassArchive | None:
    """The archive of an application whose driver runs here: the one to map, or (`write`) the
    one it writes at exit when there is none yet; None: nothing to add (`off`, a driver on the
    cluster, Java options of the user's that manage CDS, no Java found)."""
    if mode == "off" or conf.get("spark.submit.deployMode") == "cluster":
        return None
    if any(flag in conf.get("spark.driver.extraJavaOptions", "") for flag in _OWN_FLAGS):
        return None
    java = _java()
    if java is None:
        return None
    folder = cache_dir()
    path = folder / f"spark-{_digest(java, spark_home, jars, conf)}.jsa"
    if path.is_file():
        return ClassArchive(f"-XX:SharedArchiveFile={path} {QUIET}", None, path)
    if not write:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    _clear_unfinished(folder)
    writing = folder / f"{path.stem}.{os.getpid()}-{time.monotonic_ns()}.writing"
    return ClassArchive(f"-XX:ArchiveClassesAtExit={writing} {QUIET}", writing, path)


def is_archive(path: Path) -> bool:
    """Starts as a dynamic CDS archive does (its magic number, little-endian)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == DYNAMIC_MAGIC
    except OSError:
        return False


def cache_dir() -> Path:
    """Beside the provisioned jars (`DT_CACHE_DIR`, else ~/.cache/dt)."""
    from dtcli.engine.launch.maven import cache_dir as jar_cache

    return jar_cache().parent / "class-archives"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    try:
        return Path(found).resolve(strict=True) if found else None
    except OSError:
        return None


def _digest(java: Path, spark_home: Path, jars: list[str], conf: dict[str, str]) -> str:
    """What the archive is valid for: the Java binary, every jar of the class path and of
    `spark.jars` (name, size, time), and the class path settings."""
    parts = [_stamp(java)]
    jar_dir = spark_home / "jars"
    if jar_dir.is_dir():
        parts += [_stamp(p) for p in sorted(jar_dir.iterdir())]
    parts += [_stamp(Path(j)) for j in jars]
    parts += [conf.get(k, "") for k in ("spark.driver.extraClassPath", "spark.driver.userClassPathFirst")]
    parts.append(os.environ.get("SPARK_DIST_CLASSPATH", ""))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
        return f"{path}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        return f"{path}|-"


def _clear_unfinished(folder: Path) -> None:
    now = time.time()
    for p in folder.glob("*.writing"):
        try:
            if now - p.stat().st_mtime > STALE_SECONDS:
                p.unlink()
        except OSError:
            pass


def _prune(folder: Path) -> None:
    archives = sorted(folder.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEEP:]:
        old.unlink(missing_ok=True)
