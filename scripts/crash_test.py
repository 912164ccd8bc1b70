"""The body of scripts/crash-test: see there. Standard library only."""
import http.client
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading

from server_process import free_port, start_server

binary, writes = sys.argv[1], int(sys.argv[2])
token = "crash-token"
workdir = tempfile.mkdtemp(prefix="deltafeed-crash-")
db = os.path.join(workdir, "store.sqlite")


def start(port):
    return start_server(binary, db, port, token)


subprocess.run([binary, "seed", "--db", db, "--users", "20", "--videos", "50", "--ads", "2"],
               check=True, stdout=subprocess.DEVNULL)
port = free_port()
server = start(port)
kill_after = random.Random().randint(writes // 4, 3 * writes // 4)
acknowledged = []
attempted = 0
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
killer = None
for n in range(writes):
    if n == kill_after:
        # Kill from another thread while this one keeps writing, so the kill lands mid-stream.
        killer = threading.Timer(0.002, lambda: os.kill(server.pid, signal.SIGKILL))
        killer.start()
    body = json.dumps({"author_id": 1 + n % 20, "title": f"crash write {n}",
                       "thumbnail_url": f"https://cdn.example/{n}.jpg", "duration_seconds": 30})
    attempted += 1
    try:
        connection.request("POST", "/v1/videos", body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        if response.status == 201:
            acknowledged.append((json.loads(payload)["id"], f"crash write {n}"))
    except (OSError, http.client.HTTPException):
        break
server.wait()
print(f"killed with SIGKILL after {attempted} attempted writes, {len(acknowledged)} acknowledged", file=sys.stderr)

server = start(port)
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
missing = []
for video_id, title in acknowledged:
    connection.request("GET", f"/v1/videos/{video_id}")
    response = connection.getresponse()
    payload = response.read()
    if response.status != 200 or json.loads(payload)["title"] != title:
        missing.append(video_id)
server.send_signal(signal.SIGTERM)
clean_exit = server.wait(timeout=30)

integrity = sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0]
checks = {
    "every acknowledged write survived kill -9": not missing,
    "PRAGMA integrity_check is ok": integrity == "ok",
    "restarted server exits 0 on SIGTERM": clean_exit == 0,
    "the kill landed mid-stream": 0 < len(acknowledged) < writes,
}
for name, ok in checks.items():
    print(f"{'ok  ' if ok else 'FAIL'} {name}")
if missing:
    print(f"missing after restart: {missing[:20]}")
print(f"writes acknowledged {len(acknowledged)}, found after restart {len(acknowledged) - len(missing)}")
failed = sum(not ok for ok in checks.values())
print(f"crash: {len(checks) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
