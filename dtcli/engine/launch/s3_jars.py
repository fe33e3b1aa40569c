"""The S3A connector's jars: `hadoop-aws` matching pyspark's own Hadoop, and the AWS SDK it needs.

hadoop-aws must be the exact version of the Hadoop client pyspark ships (its classes are
compiled against it), so the version is read from pyspark's `hadoop-client-api-*.jar`.

hadoop-aws declares the AWS SDK v2 `bundle`, a ~650 MB shaded jar of every AWS service. S3A
only calls S3, the S3 transfer manager and STS (assumed roles), so dt excludes the bundle and
asks for those three modules instead: ~19 MB to download and to ship to every executor. Their
unshaded dependencies (netty, httpclient, jackson) are taken from pyspark where it ships them.
Hadoop documents this subset as supported but without commitments, so the SDK version is the
one that Hadoop release was built and tested with (its `aws-java-sdk-v2.version`).
"""

from __future__ import annotations

import re

from dtcli.engine.launch.maven import cached, dependency, fetch, pyspark_jars_dir
from dtcli.errors import ConfigError

# Hadoop release -> the AWS SDK v2 version its hadoop-project pom builds hadoop-aws with.
SDK_FOR_HADOOP = {"3.5.0": "2.35.4"}
SDK_MODULES = ("s3", "s3-transfer-manager", "sts")


def hadoop_version() -> str:
    for jar in pyspark_jars_dir().glob("hadoop-client-api-*.jar"):
        found = re.match(r"hadoop-client-api-(\d[\w.]*)\.jar$", jar.name)
        if found:
            return found.group(1)
    raise ConfigError("cannot tell pyspark's Hadoop version (no hadoop-client-api jar in pyspark/jars)",
                      hint="set DT_JARS to the Delta jars plus hadoop-aws and the AWS SDK for your Hadoop")


def cache_key(hadoop: str) -> str:
    return f"hadoop-aws-{hadoop}"


def dependencies(hadoop: str) -> list[str]:
    sdk = SDK_FOR_HADOOP.get(hadoop)
    if sdk is None:
        raise ConfigError(f"dt does not know which AWS SDK hadoop-aws {hadoop} needs",
                          hint="set DT_JARS to the Delta jars plus hadoop-aws and the AWS SDK bundle "
                               "your Hadoop release names")
    return [dependency(f"org.apache.hadoop:hadoop-aws:{hadoop}", exclude=("software.amazon.awssdk:bundle",)),
            *(dependency(f"software.amazon.awssdk:{m}:{sdk}") for m in SDK_MODULES)]


def resolve() -> list[str]:
    """The cached S3A jars, provisioning them on first use."""
    return cached(cache_key(hadoop_version())) or provision()


def provision(quiet: bool = False) -> list[str]:
    hadoop = hadoop_version()
    done = cached(cache_key(hadoop))
    if done is not None:
        return done
    jars, error = fetch(cache_key(hadoop), dependencies(hadoop), quiet=quiet)
    if jars is None:
        raise ConfigError(f"could not resolve hadoop-aws {hadoop} with Maven: {error}",
                          hint="check access to Maven Central, or set DT_JARS to pre-downloaded jars")
    return jars
