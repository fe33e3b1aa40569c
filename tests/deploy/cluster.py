"""A Spark standalone cluster (one master, one worker) and an S3 server, on loopback, for tests.

Master and worker are separate JVMs started from the project's own pyspark (`spark-class`),
bound to 127.0.0.1 on free ports, logging under the test's folder, stopped by their pids. The
worker is small (1 core, 1 GB) so it fits a 2-core CI machine beside the driver. The S3
server is moto's, as its own process; the bucket is made here, as an operator would make it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from dtcli.engine.launch.launcher import spark_home

START_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@dataclass
class Standalone:
    folder: Path
    port: int = field(default_factory=free_port)
    webui: int = field(default_factory=free_port)
    worker_webui: int = field(default_factory=free_port)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def master_json(self) -> dict:
        return get_json(f"http://127.0.0.1:{self.webui}/json/")

    def worker_json(self) -> dict:
        return get_json(f"http://127.0.0.1:{self.worker_webui}/json/")

    def _spawn(self, name: str, *args: str) -> None:
        env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1",
                   SPARK_DAEMON_MEMORY="384m", SPARK_NO_DAEMONIZE="1", SPARK_LOG_DIR=str(self.folder),
                   SPARK_DAEMON_JAVA_OPTS=os.environ.get("SPARK_SUBMIT_OPTS", ""))
        log = open(self.folder / f"{name}.log", "w")   # noqa: SIM115 (the child keeps it)
        self.procs.append(subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args],
                                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=env, start_new_session=True))
        log.close()

    def start(self) -> Standalone:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.webui))
        self._spawn("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--cores", "1", "--memory", "1g", "--webui-port", str(self.worker_webui),
                    "--work-dir", str(self.folder / "work"), self.master_url)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"a Spark daemon exited early; see {self.folder}")
            try:
                if any(w.get("state") == "ALIVE" for w in self.master_json().get("workers", [])):
                    return self
            except OSError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"no worker registered within {START_TIMEOUT:g} s; see {self.folder}")

    def stop(self) -> None:
        for proc in reversed(self.procs):       # the worker first: it kills its executors
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()


class S3Server:
    """moto's S3 server as its own process on 127.0.0.1, with one bucket; `conf` is how a target
    reaches it. (Not a thread of the test process: deltalake's reads hold the GIL while they
    wait for the server, which would then never answer.)"""

    def __init__(self, bucket: str, access_key: str, secret_key: str, folder: Path):
        self.bucket, self.access_key, self.secret_key = bucket, access_key, secret_key
        self.folder, self.port = folder, free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> S3Server:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "moto.log", "w")   # noqa: SIM115 (the child keeps it)
        self.proc = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1",
                                      "-p", str(self.port)], stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self.client().create_bucket(Bucket=self.bucket)
                return self
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the S3 server did not start; see {self.folder}") from None
                time.sleep(0.5)

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name="us-east-1")

    def conf(self) -> dict[str, str]:
        return {"spark.hadoop.fs.s3a.endpoint": self.endpoint,
                "spark.hadoop.fs.s3a.access.key": self.access_key,
                "spark.hadoop.fs.s3a.secret.key": self.secret_key,
                "spark.hadoop.fs.s3a.path.style.access": "true",
                "spark.hadoop.fs.s3a.endpoint.region": "us-east-1"}

    def objects(self) -> dict[str, bytes]:
        """Every object in the bucket, by key (to search what dt wrote there)."""
        client, out = self.client(), {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            for item in page.get("Contents", []):
                out[item["Key"]] = client.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
        return out

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
