"""The body of scripts/shutdown-test: see there. Standard library only."""
import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from server_process import free_port, start_server

binary = sys.argv[1]
token = "shutdown-token"
workdir = tempfile.mkdtemp(prefix="deltafeed-shutdown-")
db = os.path.join(workdir, "store.sqlite")
failures = 0


def check(label, ok):
    global failures
    print(("ok   " if ok else "FAIL ") + label, flush=True)
    if not ok:
        failures += 1


def start(port):
    return start_server(binary, db, port, token, extra=["--shutdown-grace", "30"])


def refuses_connections(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except OSError:
        return True


def exited_within(process, seconds):
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def in_flight(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    connection.request("GET", "/metrics")
    for line in connection.getresponse().read().decode().splitlines():
        if line.startswith("http_requests_in_flight "):
            return float(line.split()[1])
    return 0


class HeldWrite:
    """A write in flight for as long as this script holds SQLite's write lock (the server's
    writer waits on it for its busy timeout, 5 s): a request the drain must wait for."""

    def __init__(self, port, title):
        self.lock = sqlite3.connect(db, isolation_level=None, timeout=5)
        self.lock.execute("BEGIN IMMEDIATE")
        self.status = None
        self.title = title
        self.thread = threading.Thread(target=self._post, args=(port,))
        self.thread.start()
        # Until the server has the write in hand (the /metrics request counts itself in flight).
        deadline = time.time() + 5
        while in_flight(port) < 2 and time.time() < deadline:
            time.sleep(0.02)

    def _post(self, port):
        body = json.dumps({"author_id": 1, "title": self.title, "thumbnail_url": "https://cdn.example/s.jpg",
                           "duration_seconds": 30})
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            connection.request("POST", "/v1/videos", body=body, headers=headers)
            response = connection.getresponse()
            self.payload = response.read()
            self.status = response.status
        except (OSError, http.client.HTTPException) as error:
            self.status = type(error).__name__

    def release(self):
        self.lock.execute("ROLLBACK")
        self.lock.close()


subprocess.run([binary, "seed", "--db", db, "--users", "20", "--videos", "50", "--ads", "2"],
               check=True, stdout=subprocess.DEVNULL)

# 1. One signal (SIGTERM, as a supervisor sends): the server stops accepting at once, waits for
# the write in flight, answers it, and exits 0; the write is in the store.
port = free_port()
server = start(port)
held = HeldWrite(port, "written while the server drained")
server.send_signal(signal.SIGTERM)
time.sleep(0.5)
check("after the first signal, new connections are refused", refuses_connections(port))
check("the server waits for the write in flight (still running 1 s after the signal)", exited_within(server, 0.5) is None)
held.release()
held.thread.join(timeout=10)
code = exited_within(server, 10)
check(f"the write in flight is answered 201 (got {held.status})", held.status == 201)
check(f"then the server exits 0 (exit status {code})", code == 0)
found = sqlite3.connect(db).execute("SELECT count(*) FROM videos WHERE title = ?", (held.title,)).fetchone()[0]
check(f"the answered write is in the store ({found} found)", found == 1)

# 2. Two signals (Ctrl-C twice): the second ends the process at once, however long the drain
# would still wait.
for first, second in [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM, signal.SIGINT)]:
    server = start(port)
    held = HeldWrite(port, "abandoned by a second signal")
    server.send_signal(first)
    still_draining = exited_within(server, 1.0) is None
    began = time.monotonic()
    server.send_signal(second)
    code = exited_within(server, 2.0)
    took = time.monotonic() - began
    names = f"{signal.Signals(first).name} then {signal.Signals(second).name}"
    check(f"{names}: the drain was still waiting on the write when the second signal came", still_draining)
    check(f"{names}: the second signal ends the server at once ({took * 1000:.0f} ms, exit status {code})",
          code is not None and code != 0 and took < 1.0)
    if code is None:
        server.kill()
        server.wait()
    held.release()
    held.thread.join(timeout=10)

print(f"shutdown: {failures} failed", flush=True)
sys.exit(1 if failures else 0)
