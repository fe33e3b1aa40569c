"""The example project on a real Spark standalone cluster with an s3a:// warehouse (moto), end to end.

One module-scoped scenario keeps the Spark applications to three: on the cluster, `dt run`
creates every DT, then (after a change to a source) refreshes incrementally; meanwhile the same
project, with the same change, is created on `local[2]` with a local warehouse. The tests then
check that the cluster's worker ran the work, that both warehouses hold the same rows, that the
JVM-free commands work on s3a:// without Java, and that the secret key went nowhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from dtcli.state import storage
from tests.deploy.cluster import S3Server, Standalone
from tests.helpers import DT_BIN, REPO, dt_process, no_java_env

pytestmark = [pytest.mark.deploy, pytest.mark.e2e]

BUCKET = "lake"
ACCESS_KEY = "AKIADTDEPLOYTEST"
SECRET_KEY = "dt-deploy-secret-7f3a9c1e5b"     # searched for in everything dt wrote or printed
WAREHOUSE = f"s3a://{BUCKET}/shop"


def _copy_example(root: Path, target_block: str = "") -> Path:
    shutil.copytree(REPO / "example_project", root, ignore=shutil.ignore_patterns("warehouse", "target"))
    # no metastore on the cluster here: `catalog:` has tests of its own (tests/*/test_catalog*)
    yml = root / "dt_project.yml"
    yml.write_text(yml.read_text().replace("catalog:\n  schema: analytics\n", ""))
    if target_block:
        with open(root / "dt_project.yml", "a", encoding="utf-8") as f:
            f.write(target_block)
    return root


def _target(master: str, s3: S3Server) -> str:
    conf = {**s3.conf(),
            # the executors reach the driver on loopback; a small executor fits the 1 GB worker
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": "512m", "spark.cores.max": "1",
            # as every JVM of the tests (conftest.py): short-lived, tiny data, two cores
            "spark.executor.extraJavaOptions": os.environ.get("SPARK_SUBMIT_OPTS", "")}
    lines = "".join(f"        {k}: \"{v}\"\n" for k, v in conf.items())
    # lineage events into a file under the project, searched for the key like everything else
    return (f"targets:\n  cluster:\n    warehouse: {WAREHOUSE}\n"
            f"    openlineage: {{transport: {{type: file, log_file_path: target/openlineage.jsonl}}}}\n"
            f"    spark:\n      master: {master}\n      conf:\n{lines}")


def _change_orders(path: str) -> None:
    """The same change on both warehouses: an update, a delete (through deltalake)."""
    from deltalake import DeltaTable

    orders = DeltaTable(storage.uri(path), storage_options=storage.options(path))
    orders.update(predicate="order_id = 1002", updates={"status": "'cancelled'"})
    orders.delete("order_id = 1003")


def _dt(*args: str, env=None) -> subprocess.CompletedProcess:
    result = dt_process(*args, env=env)
    _dt.printed.append(result.stdout + result.stderr)
    return result


_dt.printed = []


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deploy")
    started = time.monotonic()
    s3 = S3Server(BUCKET, ACCESS_KEY, SECRET_KEY, tmp / "s3")
    cluster = Standalone(tmp / "cluster")
    try:
        s3.start()
        cluster.start()
        remote = _copy_example(tmp / "remote", _target(cluster.master_url, s3))
        local = _copy_example(tmp / "local")
        out: dict = {"s3": s3, "cluster": cluster, "remote": remote, "local": local, "tmp": tmp}

        assert _dt("seed", "-p", str(local)).returncode == 0
        _change_orders(str(local / "warehouse" / "orders"))
        assert _dt("seed", "-p", str(remote), "-t", "cluster").returncode == 0, _dt.printed[-1]
        # the local application runs beside the cluster's first one
        local_run = subprocess.Popen([str(DT_BIN), "run", "-p", str(local), "--format", "json"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        created = _dt("run", "-p", str(remote), "-t", "cluster", "--format", "json")
        local_out, local_err = local_run.communicate(timeout=900)
        _dt.printed.append(local_out + local_err)
        assert created.returncode == 0, created.stderr[-3000:]
        assert local_run.returncode == 0, local_err[-3000:]
        out["created"] = json.loads(created.stdout)

        storage.configure(dict(s3.conf()))
        _change_orders(f"{WAREHOUSE}/orders")
        refreshed = _dt("run", "--all", "-p", str(remote), "-t", "cluster", "--format", "json")
        assert refreshed.returncode == 0, refreshed.stderr[-3000:]
        out["refreshed"] = json.loads(refreshed.stdout)
        out["seconds"] = time.monotonic() - started
        yield out
    finally:
        cluster.stop()
        s3.stop()
        storage.configure({})


def _actions(doc: dict) -> dict[str, str]:
    return {r["name"]: r["refresh_action"] for r in doc["results"]}


def test_the_cluster_ran_creation_and_an_incremental_refresh_on_its_worker(deployed):
    assert set(_actions(deployed["created"]).values()) == {"FULL"}
    assert all(r["state"] == "SUCCEEDED" for r in deployed["refreshed"]["results"])
    assert _actions(deployed["refreshed"])["valid_orders"] == "INCREMENTAL"
    apps = [a for a in deployed["cluster"].master_json()["completedapps"] if a["name"] == "dt:shop"]
    assert len(apps) == 2 and all(a["state"] == "FINISHED" for a in apps)
    worker = deployed["cluster"].worker_json()
    ran_on_worker = {e["appid"] for e in worker["finishedexecutors"] + worker["executors"]}
    assert {a["id"] for a in apps} <= ran_on_worker, "an application had no executor on the worker"
    print(f"deploy scenario: {deployed['seconds']:.0f} s (load {os.getloadavg()[0]:.1f})")


def _rows(path: str) -> Counter:
    """A DT's rows as a multiset, read without Spark (deletion vectors applied)."""
    from dtcli.state.delta_log import open_table, read_rows

    return Counter(tuple(sorted(row.items())) for row in read_rows(open_table(path)))


def test_the_cluster_on_s3_and_local_2_on_disk_give_the_same_tables(deployed):
    storage.configure(deployed["s3"].conf())
    names = sorted(p.stem for p in (deployed["local"] / "tables").glob("*.sql"))
    for name in names:
        remote, local = _rows(f"{WAREHOUSE}/{name}"), _rows(str(deployed["local"] / "warehouse" / name))
        if name == "order_status_log":
            # a custom table keeps its history: the cluster created it before the change and then
            # logged the update, while the local run created it after the change in one step
            def row(order_id, status, was_update):
                return (("order_id", order_id), ("status", status), ("was_update", was_update))
            local -= Counter([row(1002, "cancelled", False)])
            local += Counter([row(1002, "placed", False), row(1003, "delivered", False),
                              row(1002, "cancelled", True)])
        assert remote == local, name


def test_show_explain_and_a_no_op_run_on_s3_start_no_jvm(deployed):
    root, env = str(deployed["remote"]), no_java_env()
    shown = _dt("show", "dynamic", "tables", "-p", root, "-t", "cluster", "--format", "json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert {t["name"] for t in json.loads(shown.stdout)} >= {"valid_orders", "customer_rank"}
    explained = _dt("explain", "valid_orders", "-p", root, "-t", "cluster", "--format", "json", env=env)
    assert explained.returncode == 0, explained.stderr
    again = _dt("run", "--all", "-p", root, "-t", "cluster", "--format", "json", env=env)
    assert again.returncode == 0, again.stderr
    assert set(_actions(json.loads(again.stdout)).values()) == {"NO_DATA"}
    history = _dt("show", "refresh-history", "valid_orders", "-p", root, "-t", "cluster", "--format", "json",
                  env=env)
    assert [h["refresh_action"] for h in json.loads(history.stdout)][:3] == ["NO_DATA", "INCREMENTAL", "FULL"]


def test_the_secret_key_is_in_nothing_dt_wrote_or_printed(deployed):
    """Everything under the project (but the user's own dt_project.yml), the warehouse's objects,
    the cluster's logs, dt's private folder, and every command's output."""
    found = []
    for folder in (deployed["remote"], deployed["tmp"] / "cluster"):
        for path in folder.rglob("*"):
            if path.is_file() and path.name != "dt_project.yml" and SECRET_KEY.encode() in path.read_bytes():
                found.append(str(path))
    found += [f"s3a://{BUCKET}/{k}" for k, body in deployed["s3"].objects().items() if SECRET_KEY.encode() in body]
    private = Path(os.environ.get("TMPDIR", "/tmp")) / f"dt-{os.getuid()}"
    found += [str(p) for p in private.glob("*") if SECRET_KEY.encode() in p.read_bytes()]
    found += [f"output of command {i}" for i, text in enumerate(_dt.printed) if SECRET_KEY in text]
    assert SECRET_KEY in (deployed["remote"] / "dt_project.yml").read_text()   # it was there to leak
    events = [json.loads(line) for line in (deployed["remote"] / "target" / "openlineage.jsonl").read_text().splitlines()]
    assert {e["eventType"] for e in events} == {"START", "COMPLETE"}            # the lineage file was searched too
    assert {i["namespace"] for e in events for i in e["inputs"]} == {f"s3://{BUCKET}"}   # s3a:// named as OpenLineage does
    assert not found, f"the secret key leaked into {found}"
