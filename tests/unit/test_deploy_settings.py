"""Object-store settings for deltalake, secret handling and the S3A jar set (no JVM, no network)."""

import os
import stat
from pathlib import Path

from dtcli import redact
from dtcli.engine.launch import s3_jars, secret_conf
from dtcli.state import storage

CONF = {
    "spark.hadoop.fs.s3a.endpoint": "127.0.0.1:9000",
    "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    "spark.hadoop.fs.s3a.access.key": "AKIDEXAMPLE",
    "spark.hadoop.fs.s3a.secret.key": "s3cr3t-value-xyz",
    "spark.hadoop.fs.s3a.path.style.access": "true",
    "spark.hadoop.fs.s3a.bucket.other.endpoint": "http://elsewhere:1234",
    "spark.sql.shuffle.partitions": "2",
}


def test_s3a_settings_become_deltalake_storage_options(monkeypatch):
    monkeypatch.delenv("AWS_S3_LOCKING_PROVIDER", raising=False)
    storage.configure(CONF)
    opts = storage.options("s3a://lake/dt/orders")
    assert opts["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000"
    assert opts["AWS_ALLOW_HTTP"] == "true"
    assert opts["AWS_ACCESS_KEY_ID"] == "AKIDEXAMPLE"
    assert opts["AWS_SECRET_ACCESS_KEY"] == "s3cr3t-value-xyz"
    assert opts["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "false"
    assert opts["AWS_S3_ALLOW_UNSAFE_RENAME"] == "true"
    # a per-bucket setting wins, as in Hadoop
    assert storage.options("s3a://other/x")["AWS_ENDPOINT_URL"] == "http://elsewhere:1234"
    assert storage.uri("s3a://lake/dt") == "s3://lake/dt"
    assert storage.options("/tmp/warehouse") is None
    storage.configure({})


def test_secret_settings_are_masked_by_name_and_scrubbed_by_value():
    redact.remember(CONF)
    shown = redact.masked(CONF)
    assert shown["spark.hadoop.fs.s3a.secret.key"] == redact.MASK
    assert shown["spark.hadoop.fs.s3a.access.key"] == redact.MASK
    assert shown["spark.sql.shuffle.partitions"] == "2"
    assert redact.is_secret("spark.ssl.keyStorePassword") and redact.is_secret("x.auth.token")
    assert "s3cr3t" not in redact.scrub("failed: key s3cr3t-value-xyz rejected")


def test_secrets_go_to_a_private_properties_file_not_the_command_line():
    args = secret_conf.properties_args(CONF)
    assert args[0] == "--properties-file" and "--load-spark-defaults" in args
    path = args[1]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "s3cr3t-value-xyz" in Path(path).read_text()
    assert "spark.hadoop.fs.s3a.secret.key" not in secret_conf.public(CONF)
    assert secret_conf.properties_args(CONF) == args          # same settings, same command
    secret_conf.forget()
    assert not os.path.exists(path)
    assert secret_conf.properties_args({"spark.sql.shuffle.partitions": "2"}) == []


def test_s3a_jars_exclude_the_sdk_bundle():
    deps = "".join(s3_jars.dependencies("3.5.0"))
    assert "<artifactId>hadoop-aws</artifactId><version>3.5.0</version>" in deps
    assert "<exclusion><groupId>software.amazon.awssdk</groupId><artifactId>bundle</artifactId>" in deps
    for module in ("s3", "s3-transfer-manager", "sts"):
        assert f"<artifactId>{module}</artifactId><version>2.35.4</version>" in deps
