"""The S3 warehouse lease against a local S3 server (moto): exclusive, expiring, taken over once."""

import os

import pytest

from dtcli.errors import LockTimeout
from dtcli.state import lease, storage


@pytest.fixture(scope="module")
def s3():
    moto_server = pytest.importorskip("moto.server")
    import boto3

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    port = server.get_host_and_port()[1]
    conf = {"spark.hadoop.fs.s3a.endpoint": f"http://127.0.0.1:{port}",
            "spark.hadoop.fs.s3a.access.key": "testing", "spark.hadoop.fs.s3a.secret.key": "testing",
            "spark.hadoop.fs.s3a.path.style.access": "true"}
    boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket="lease-test")
    storage.configure(conf)
    yield "s3a://lease-test/wh"
    storage.configure({})
    server.stop()


def test_one_holder_at_a_time_and_released(s3):
    with lease.warehouse_lease(s3, "run") as held:
        assert held.renew()
        with pytest.raises(LockTimeout, match="holds the warehouse lease.*`dt run`"), \
                lease.warehouse_lease(s3, "refresh x"):
            pass
        assert lease.LEASE_ENV in os.environ           # spark-submit inherits it
    with lease.warehouse_lease(s3, "run again"):     # released: free again
        pass


def test_a_stale_lease_is_taken_over_by_one_process(s3, monkeypatch):
    dead = lease.Lease(lease.lease_uri(s3), holder="a crashed dt")
    monkeypatch.setattr(lease, "TTL_SECONDS", -1.0)     # written already expired
    assert dead.try_acquire() is None
    monkeypatch.setattr(lease, "TTL_SECONDS", 60.0)
    first, second = lease.Lease(lease.lease_uri(s3)), lease.Lease(lease.lease_uri(s3))
    assert first.try_acquire() is None                   # took over the stale lease
    assert second.try_acquire()["owner"] == first.owner  # ... and holds it now
    assert not dead.renew()                              # the old owner learns it lost it
    assert first.renew()
    first.release()
    assert second.try_acquire() is None
    second.release()


def test_deltalake_reads_and_writes_s3_with_options_from_spark_conf_and_drop_removes_a_table(s3):
    import pyarrow as pa
    from deltalake import write_deltalake

    from dtcli.state.delta_log import open_table

    path = f"{s3}/t"
    write_deltalake(storage.uri(path), pa.table({"x": [1, 2]}), storage_options=storage.options(path))
    write_deltalake(storage.uri(path), pa.table({"x": [3]}), mode="append", storage_options=storage.options(path))
    assert open_table(path).version() == 1
    storage.remove_tree(path)
    assert open_table(path) is None
