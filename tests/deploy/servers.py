"""A Hive metastore service, Spark's Thrift JDBC server and a Spark Connect server, on loopback,
for tests: each its own JVM from the project's own pyspark, on a free port of 127.0.0.1,
logging under the test's folder, started with a deadline and stopped by its process group.

The metastore is Hive 2.3's (the classes pyspark ships). Its own `HiveMetaStore` main binds to
every interface (Hive 2.3 has no bind-host setting for it), so `LoopbackMetastore.java` serves
the same handler (`HiveMetaStore.newRetryingHMSHandler`, over an embedded Derby database in the
test's folder) with a Thrift socket bound to 127.0.0.1; it is compiled here with the JDK's javac.
The two Spark servers are started with spark-submit as `sbin/start-thriftserver.sh` and
`sbin/start-connect-server.sh` would start them, with dt's own Spark settings (Delta's jars and
extensions) and the metastore's URI.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from dtcli.engine.launch import jars as jarlib
from dtcli.engine.launch.launcher import spark_home
from dtcli.engine.launch.spark_conf import session_conf
from tests.deploy.cluster import free_port

START_TIMEOUT = 180.0
PORT_RETRIES = 2
QUERY_TIMEOUT = 120

METASTORE_JAVA = """
import java.net.InetSocketAddress;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;

/** Hive's metastore handler served on 127.0.0.1 only: LoopbackMetastore PORT key=value... */
public class LoopbackMetastore {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
    for (int i = 1; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      conf.set(kv[0], kv[1]);
    }
    ThriftHiveMetastore.Iface handler = HiveMetaStore.newRetryingHMSHandler("dt test metastore", conf, false);
    TServerSocket socket = new TServerSocket(new InetSocketAddress("127.0.0.1", port));
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .processor(new ThriftHiveMetastore.Processor<ThriftHiveMetastore.Iface>(handler))
        .protocolFactory(new TBinaryProtocol.Factory())
        .minWorkerThreads(2).maxWorkerThreads(64);
    System.out.println("metastore listening on 127.0.0.1:" + port);
    System.out.flush();
    new TThreadPoolServer(serverArgs).serve();
  }
}
"""


def jars_classpath() -> str:
    return str(jarlib.pyspark_jars_dir() / "*")


def missing_tools() -> str | None:
    """Why these servers cannot run here (None: they can)."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        return "the metastore service is compiled with javac, and no JDK (java, javac) is on PATH"
    needed = ("hive-metastore-", "spark-hive-thriftserver_", "spark-connect_", "hive-beeline-", "hive-jdbc-")
    present = [p.name for p in jarlib.pyspark_jars_dir().glob("*.jar")]
    absent = [n for n in needed if not any(p.startswith(n) for p in present)]
    return f"pyspark's jars lack {', '.join(absent)}" if absent else None


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def loopback_env() -> dict[str, str]:
    return dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1")


class Server:
    """One JVM listening on `port`; `start` waits until the port answers (or fails, saying where
    its log is), `stop` ends its process group."""

    name = "server"

    def __init__(self, folder: Path):
        self.folder, self.port = folder, free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.folder / f"{self.name}.log"

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> Server:
        """Start the JVM; `wait` for it (servers are started together, then waited for)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        command = self.command()
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=loopback_env(), cwd=self.folder, start_new_session=True)
        return self

    def wait(self) -> Server:
        """Wait for the port. The port was free when picked, but another JVM of this machine (a
        Spark driver's or block manager's ephemeral port) can take it before this one binds it:
        then the server starts again on a new port, up to PORT_RETRIES times."""
        deadline = time.monotonic() + START_TIMEOUT
        retries = PORT_RETRIES
        while not port_open(self.port):
            exited = self.proc is None or self.proc.poll() is not None
            if exited and retries and self._port_was_taken():
                retries -= 1
                self.port = free_port()
                self.start()
                continue
            if exited or time.monotonic() > deadline:
                tail = self._log_tail()
                self.stop()
                raise RuntimeError(f"the {self.name} did not start on 127.0.0.1:{self.port}; "
                                   f"see {self.log}:\n{tail}")
            time.sleep(1)
        return self

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def _port_was_taken(self) -> bool:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "Address already in use" in text and f":{self.port}" in text

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class Metastore(Server):
    name = "metastore"

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        classes = self.folder / "classes"
        classes.mkdir(parents=True, exist_ok=True)
        source = classes / "LoopbackMetastore.java"
        source.write_text(METASTORE_JAVA)
        subprocess.run(["javac", "-nowarn", "-cp", jars_classpath(), "-d", str(classes), str(source)],
                       check=True, capture_output=True, timeout=QUERY_TIMEOUT)
        derby = self.folder / "derby"
        settings = {"javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={derby}/metastore_db;create=true",
                    "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
                    "datanucleus.schema.autoCreateAll": "true",
                    "hive.metastore.schema.verification": "false",
                    "hive.metastore.warehouse.dir": str(self.folder / "managed")}
        return ["java", "-Xmx384m", f"-Dderby.system.home={derby}", *java_opts(),
                "-cp", f"{classes}{os.pathsep}{jars_classpath()}", "LoopbackMetastore", str(self.port),
                *(f"{k}={v}" for k, v in settings.items())]


def java_opts() -> list[str]:
    """The JVM options every JVM of the tests runs with (conftest.py: short-lived, two cores)."""
    return os.environ.get("SPARK_SUBMIT_OPTS", "").split()


def spark_server_conf(metastore: Metastore) -> dict[str, str]:
    """What a Spark server needs to read dt's DTs by name: dt's own settings (Delta's jars and
    extensions), the metastore, and every port on loopback."""
    jars = jarlib.resolve()
    # on the driver's class path too: the Thrift server opens its sessions with a class loader
    # that does not see spark.jars (DeltaCatalog would be missing)
    return session_conf({"spark.driver.extraClassPath": os.pathsep.join(jars),
                         "spark.sql.catalogImplementation": "hive",
                         "spark.hadoop.hive.metastore.uris": metastore.uri,
                         "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                         "spark.driver.memory": "512m", "spark.sql.shuffle.partitions": "1"},
                        jars)


def submit(main_class: str, conf: dict[str, str], *args: str) -> list[str]:
    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", "local[1]", "--class", main_class]
    for key, value in sorted(conf.items()):
        cmd += ["--conf", f"{key}={value}"]
    return [*cmd, "spark-internal", *args]


class ThriftServer(Server):
    """Spark's Thrift JDBC/ODBC server (HiveServer2's protocol), queried with beeline."""

    name = "thriftserver"

    def __init__(self, folder: Path, metastore: Metastore):
        super().__init__(folder)
        self.metastore = metastore

    def command(self) -> list[str]:
        return submit("org.apache.spark.sql.hive.thriftserver.HiveThriftServer2", spark_server_conf(self.metastore),
                      "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
                      "--hiveconf", f"hive.server2.thrift.port={self.port}",
                      "--hiveconf", "hive.server2.transport.mode=binary",
                      "--hiveconf", "hive.server2.webui.port=0")

    def query(self, sql: str) -> subprocess.CompletedProcess:
        """`sql` through beeline (Hive's JDBC client, in pyspark's jars), as CSV with a header."""
        return subprocess.run(["java", "-Xmx256m", *java_opts(), "-cp", jars_classpath(),
                               "org.apache.hive.beeline.BeeLine", "-u", f"jdbc:hive2://127.0.0.1:{self.port}/default",
                               "-n", "dt", "--outputformat=csv2", "--silent=true", "--showHeader=true", "-e", sql],
                              capture_output=True, text=True, timeout=QUERY_TIMEOUT, cwd=self.folder)


class ConnectServer(Server):
    """A Spark Connect server, for `SparkSession.builder.remote("sc://127.0.0.1:PORT")`."""

    name = "connect"

    def __init__(self, folder: Path, metastore: Metastore):
        super().__init__(folder)
        self.metastore = metastore

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        conf = {**spark_server_conf(self.metastore), "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(self.port)}
        return submit("org.apache.spark.sql.connect.service.SparkConnectServer", conf)


def listening(pids: list[int]) -> list[str]:
    """The addresses the processes (and their children) listen on for TCP, as `host:port`."""
    inodes = set()
    for pid in _with_children(pids):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:      # 0A: LISTEN
                host, port = fields[1].split(":")
                found.append(f"{_host(host)}:{int(port, 16)}")
    return found


def _with_children(pids: list[int]) -> list[int]:
    out = list(pids)
    for pid in pids:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        out += _with_children([int(c) for c in children])
    return out


def _host(hexed: str) -> str:
    raw = bytes.fromhex(hexed)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)
