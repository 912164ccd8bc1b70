"""Starting a deltafeed server for the process-level tests (scripts/crash_test.py,
scripts/shutdown_test.py). Standard library only."""
import http.client
import socket
import subprocess
import sys
import time


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, db, port, token, extra=()):
    """Runs `binary serve` on the SQLite file `db` and returns the process once /healthz answers
    200 (exits the test if it does not within a minute)."""
    process = subprocess.Popen(
        [binary, "serve", "--db", db, "--port", str(port), "--threads", "2", "--admin-token", token,
         "--log-level", "error", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    sys.exit("server did not start")
