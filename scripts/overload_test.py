"""The body of scripts/overload-test: see there. Standard library plus the wrk command."""
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

binary, idle_count, slow_count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
timeout = 3
workdir = tempfile.mkdtemp(prefix="deltafeed-overload-")
db = os.path.join(workdir, "store.sqlite")

with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
subprocess.run([binary, "seed", "--db", db, "--users", "20", "--videos", "50", "--ads", "2"], check=True, stdout=subprocess.DEVNULL)
server = subprocess.Popen([binary, "serve", "--db", db, "--port", str(port), "--threads", "2",
                           "--request-timeout", str(timeout), "--log-level", "error"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}"
for _ in range(600):
    try:
        urllib.request.urlopen(base + "/healthz", timeout=1).read()
        break
    except OSError:
        time.sleep(0.1)


def fd_count():
    return len(os.listdir(f"/proc/{server.pid}/fd"))


def rss_kib():
    with open(f"/proc/{server.pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


# Warm up every route the load touches so lazily allocated state is in the baseline.
for _ in range(200):
    urllib.request.urlopen(base + "/healthz").read()
    urllib.request.urlopen(base + "/v1/users/1/feed?limit=5").read()
fds_before, rss_before = fd_count(), rss_kib()

idle = []
for _ in range(idle_count):
    s = socket.create_connection(("127.0.0.1", port))
    idle.append(s)
opened_at = time.time()

slow_closed = [False] * slow_count


def slowloris(index):
    s = socket.create_connection(("127.0.0.1", port))
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    for byte in request:
        try:
            s.send(bytes([byte]))
        except OSError:
            slow_closed[index] = True
            return
        time.sleep(0.5)


slow_threads = [threading.Thread(target=slowloris, args=(i,)) for i in range(slow_count)]
for thread in slow_threads:
    thread.start()
fds_loaded = fd_count()

wrk = subprocess.run(["wrk", "-t1", "-c8", "-d4s", base + "/v1/users/1/feed?limit=5"], capture_output=True, text=True)
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", wrk.stdout).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk.stdout)
socket_errors = re.search(r"Socket errors: .*", wrk.stdout)

# Every idle connection must be closed by the server once the timeout has passed.
time.sleep(max(0, opened_at + timeout + 1.5 - time.time()))
closed_idle = 0
for s in idle:
    s.settimeout(2)
    try:
        if s.recv(1) == b"":
            closed_idle += 1
    except ConnectionResetError:
        closed_idle += 1
    except OSError:
        pass
    s.close()
for thread in slow_threads:
    thread.join(timeout=30)
time.sleep(1.5)
fds_after, rss_after = fd_count(), rss_kib()
server.terminate()
exit_code = server.wait(timeout=30)

checks = {
    f"healthy traffic kept flowing ({rate:.0f} req/s, no errors)": rate > 100 and not errors and not socket_errors,
    f"server held the extra connections ({fds_loaded - fds_before} more fds while loaded)": fds_loaded - fds_before >= idle_count,
    f"all {idle_count} idle connections closed at the {timeout}s timeout ({closed_idle} closed)": closed_idle == idle_count,
    f"all {slow_count} slowloris clients cut off ({sum(slow_closed)} cut)": all(slow_closed),
    f"no file descriptor leak ({fds_before} before, {fds_after} after)": fds_after <= fds_before + 2,
    f"memory bounded (RSS {rss_before} KiB before, {rss_after} KiB after)": rss_after < rss_before + 64 * 1024,
    "server exits 0 on SIGTERM": exit_code == 0,
}
for name, ok in checks.items():
    print(f"{'ok  ' if ok else 'FAIL'} {name}")
failed = sum(not ok for ok in checks.values())
print(f"overload: {len(checks) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
