"""How the JVM-free side (deltalake) reaches an object store: from the same settings as Spark.

A user configures storage once, for Spark, in the project's or target's `spark.conf`
(`spark.hadoop.fs.s3a.endpoint`, `...access.key`, ...) or in the environment (AWS_ACCESS_KEY_ID,
...; both S3A and deltalake read those themselves). dt's planner, `show`, `explain`, the history
and scheduling writers read and write the same tables without Spark, so they need deltalake's
`storage_options` derived from those settings: one translation, here, used by every deltalake
call. Loading a project configures it; the Spark driver configures it from its SparkConf.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlparse

_conf: dict[str, str] = {}


def configure(spark_conf: Mapping[str, str]) -> None:
    """Take storage settings from a project's (or a Spark application's) spark.conf."""
    _conf.clear()
    _conf.update({str(k): str(v) for k, v in spark_conf.items()})


def is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def local_table(path: str) -> str | None:
    """The directory of the local Delta table at `path`, or None (remote, or no `_delta_log`)."""
    if is_remote(path):
        return None
    root = path.removeprefix("file://")
    return root if os.path.isdir(os.path.join(root, "_delta_log")) else None


def uri(path: str) -> str:
    """The path as deltalake spells it (Hadoop's s3a:// is deltalake's s3://)."""
    return "s3://" + path[len("s3a://"):] if path.startswith("s3a://") else path


def options(path: str) -> dict[str, str] | None:
    """deltalake storage_options for `path` (None for local paths and unknown schemes)."""
    scheme = urlparse(path).scheme if is_remote(path) else ""
    if scheme in ("s3a", "s3"):
        return s3_options(urlparse(path).netloc)
    if scheme in ("abfss", "abfs"):
        return _azure_options(urlparse(path).netloc)
    if scheme == "gs":
        keyfile = _conf.get("spark.hadoop.google.cloud.auth.service.account.json.keyfile")
        return {"google_service_account": keyfile} if keyfile else None
    return None


def _s3a(bucket: str, name: str) -> str | None:
    """An S3A setting as Hadoop resolves it: the per-bucket `fs.s3a.bucket.B.name` first."""
    for key in (f"spark.hadoop.fs.s3a.bucket.{bucket}.{name}", f"spark.hadoop.fs.s3a.{name}"):
        if _conf.get(key):
            return _conf[key]
    return None


def s3_options(bucket: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, option in (("access.key", "AWS_ACCESS_KEY_ID"), ("secret.key", "AWS_SECRET_ACCESS_KEY"),
                         ("session.token", "AWS_SESSION_TOKEN"), ("endpoint.region", "AWS_REGION")):
        value = _s3a(bucket, name)
        if value:
            out[option] = value
    endpoint = _s3a(bucket, "endpoint")
    if endpoint:
        if "://" not in endpoint:   # S3A takes a bare host: https unless SSL is switched off
            ssl = (_s3a(bucket, "connection.ssl.enabled") or "true").lower() != "false"
            endpoint = ("https://" if ssl else "http://") + endpoint
        out["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
        out.setdefault("AWS_REGION", os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
                       or "us-east-1")   # a custom endpoint has no region to infer; S3A assumes this one
    if (_s3a(bucket, "path.style.access") or "").lower() == "true":
        out["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    # deltalake refuses to commit to S3 without a lock (S3 had no put-if-absent): dt serialises
    # its own writers to a warehouse with its lease (lease.py), so unless the user configured
    # deltalake's DynamoDB locking, the rename is safe for dt's writes.
    if not os.environ.get("AWS_S3_LOCKING_PROVIDER"):
        out["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
    return out


def s3_errors() -> tuple[type[Exception], ...]:
    """What a boto3 S3 call raises: the service's refusal (ClientError: a missing key, a failed
    condition, access denied) and boto's own (BotoCoreError: no connection, no credentials).
    A function, so that `except storage.s3_errors()` imports botocore only once one was raised."""
    from botocore.exceptions import BotoCoreError, ClientError

    return (ClientError, BotoCoreError)


def s3_client(path: str):
    """A boto3 S3 client configured as deltalake is for `path` (endpoint, keys, region)."""
    import boto3
    from botocore.config import Config

    opts = options(path) or {}
    path_style = opts.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST") == "false" or "AWS_ENDPOINT_URL" in opts
    return boto3.client("s3", endpoint_url=opts.get("AWS_ENDPOINT_URL"),
                        aws_access_key_id=opts.get("AWS_ACCESS_KEY_ID"),
                        aws_secret_access_key=opts.get("AWS_SECRET_ACCESS_KEY"),
                        aws_session_token=opts.get("AWS_SESSION_TOKEN"), region_name=opts.get("AWS_REGION"),
                        config=Config(s3={"addressing_style": "path" if path_style else "auto"},
                                      retries={"max_attempts": 3}))


def remove_tree(path: str) -> None:
    """Delete a table's folder (`dt drop`): locally, or every object under the prefix on S3."""
    if not is_remote(path):
        import shutil

        shutil.rmtree(path)
        return
    parsed = urlparse(path)
    if parsed.scheme not in ("s3a", "s3"):
        from dtcli.errors import UsageError

        raise UsageError(f"dt cannot delete {path}: only local and S3 warehouses are supported by `dt drop`",
                         hint="its history and scheduling state are gone; delete the folder with your store's tools")
    client, prefix = s3_client(path), parsed.path.strip("/") + "/"
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=parsed.netloc, Prefix=prefix):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=parsed.netloc, Delete={"Objects": keys, "Quiet": True})


def _azure_options(netloc: str) -> dict[str, str] | None:
    """abfss://container@account.dfs.core.windows.net: the account key Hadoop's ABFS reads."""
    host = netloc.rsplit("@", 1)[-1]
    key = _conf.get(f"spark.hadoop.fs.azure.account.key.{host}")
    if not key:
        return None
    return {"azure_storage_account_name": host.split(".", 1)[0], "azure_storage_account_key": key}


def uses_s3a(project) -> bool:
    """Whether Spark needs the S3A connector for this project (its warehouse or a source)."""
    paths = [project.warehouse, *(s.path for s in project.sources.values())]
    return any(p.startswith("s3a://") for p in paths)
