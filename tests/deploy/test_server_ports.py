"""A test server whose port another process took before it bound it starts again on a new port
(CI once lost a whole run to a Thrift server whose picked port a Spark JVM had taken)."""

from __future__ import annotations

import socket
import sys

from tests.deploy.servers import Server

LISTENER = """
import socket, sys, time
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError as e:
    print(f"java.net.BindException: Address already in use on 127.0.0.1:{sys.argv[1]}", flush=True)
    sys.exit(1)
s.listen()
time.sleep(60)
"""


class Listener(Server):
    name = "listener"

    def command(self) -> list[str]:
        return [sys.executable, "-c", LISTENER, str(self.port)]


def test_a_server_whose_port_was_taken_starts_on_another(tmp_path):
    server = Listener(tmp_path)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", server.port))      # bound, not listening: a client's port
        taken = server.port
        try:
            server.start().wait()
            assert server.port != taken
            assert server.proc.poll() is None
        finally:
            server.stop()
