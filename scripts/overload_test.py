"""The body of scripts/overload-test: see there. Standard library plus the wrk command.

Four scenarios, each against its own server (SCENARIOS=slow,bodies,connections,stall picks some):

- slow: IDLE idle connections and SLOW slowloris clients while wrk drives normal traffic.
- bodies: BODIES connections each send 1 MiB - 1 of a declared 1 MiB body, then stall; RSS must
  stay near --max-buffered-body-bytes, the bodies past it get 503, the stalled ones are closed at
  the request timeout and their bytes released.
- connections: CONNECTIONS idle connections against --max-connections MAX_CONNECTIONS; file
  descriptors and RSS must stay bounded and the extra connections get 503 at once.
- stall: DIFFS concurrent POST /v1/diff of DIFF_ELEMENTS-element arrays keep the workers busy;
  WRITES POST /v1/videos sent 0.5 s later must each be answered, and no write may be committed
  without its client seeing the answer.
"""
import json
import os
import random
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

binary, idle_count, slow_count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
scenarios = os.environ.get("SCENARIOS", "slow,bodies,connections,stall").split(",")
timeout = 3
serve_help = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
workdir = tempfile.mkdtemp(prefix="deltafeed-overload-")
db = os.path.join(workdir, "store.sqlite")
subprocess.run([binary, "seed", "--db", db, "--users", "20", "--videos", "50", "--ads", "2"], check=True, stdout=subprocess.DEVNULL)
checks = []


def check(name, ok):
    checks.append((name, ok))
    print(f"{'ok  ' if ok else 'FAIL'} {name}", flush=True)


def info(text):
    print(f"     {text}", flush=True)


def supported(flag, value):
    """[flag, value] when this binary has the flag (so the script also measures older builds)."""
    if flag in serve_help:
        return [flag, value]
    info(f"{binary} has no {flag}: measuring without it")
    return []


class Server:
    def __init__(self, *extra, request_timeout=timeout):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [binary, "serve", "--db", db, "--port", str(self.port), "--threads", "2",
             "--request-timeout", str(request_timeout), "--log-level", "error", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        # Warm up every route the scenarios touch so lazily allocated state is in the baselines.
        for _ in range(200):
            urllib.request.urlopen(self.base + "/healthz").read()
            urllib.request.urlopen(self.base + "/v1/users/1/feed?limit=5").read()

    def fds(self):
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def connect(port, timeout_seconds=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_seconds)
    s.settimeout(timeout_seconds)
    return s


def read_response(s):
    """(status, headers dict, body) of one response; raises OSError/ValueError when cut off."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        chunk = s.recv(65536)
        if not chunk:
            raise ValueError("closed before a response" if not buffer else "closed inside the response head")
        buffer += chunk
    head, body = buffer.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise ValueError(f"cut off after {len(body)} of {length} body bytes")
        body += chunk
    return status, headers, body[:length]


def closed_by_server(s, wait):
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except OSError:
        return False


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def scenario_slow():
    server = Server()
    port = server.port
    fds_before, rss_before = server.fds(), server.rss_kib()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(idle_count)]
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
    # The kernel completes a connect before the server accepts it: wait until the server holds
    # them all (its accept loop may trail the clients' connects), well inside the idle timeout.
    fds_loaded = server.fds()
    while fds_loaded - fds_before < idle_count and time.time() < opened_at + timeout / 2:
        time.sleep(0.05)
        fds_loaded = server.fds()
    wrk = subprocess.run(["wrk", "-t1", "-c8", "-d4s", server.base + "/v1/users/1/feed?limit=5"], capture_output=True, text=True)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", wrk.stdout).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk.stdout)
    socket_errors = re.search(r"Socket errors: .*", wrk.stdout)
    # Every idle connection must be closed by the server once the timeout has passed.
    time.sleep(max(0, opened_at + timeout + 1.5 - time.time()))
    closed_idle = sum(closed_by_server(s, 2) for s in idle)
    for s in idle:
        s.close()
    for thread in slow_threads:
        thread.join(timeout=30)
    time.sleep(1.5)
    fds_after, rss_after = server.fds(), server.rss_kib()
    exit_code = server.stop()
    check(f"healthy traffic kept flowing ({rate:.0f} req/s, no errors)", rate > 100 and not errors and not socket_errors)
    check(f"server held the extra connections ({fds_loaded - fds_before} more fds while loaded)", fds_loaded - fds_before >= idle_count)
    check(f"all {idle_count} idle connections closed at the {timeout}s timeout ({closed_idle} closed)", closed_idle == idle_count)
    check(f"all {slow_count} slowloris clients cut off ({sum(slow_closed)} cut)", all(slow_closed))
    check(f"no file descriptor leak ({fds_before} before, {fds_after} after)", fds_after <= fds_before + 2)
    check(f"memory bounded (RSS {rss_before} KiB before, {rss_after} KiB after)", rss_after < rss_before + 64 * 1024)
    check("server exits 0 on SIGTERM", exit_code == 0)


def scenario_bodies():
    count = int(os.environ.get("BODIES", "500"))
    cap_mib = int(os.environ.get("BUFFERED_MIB", "64"))
    # A longer timeout than the others, so every body is sent before the first is timed out.
    body_timeout = 10
    server = Server(*supported("--max-buffered-body-bytes", str(cap_mib << 20)), request_timeout=body_timeout)
    rss_before = server.rss_kib()
    declared = 1 << 20
    head = b"POST /v1/diff HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % declared
    body = b" " * (declared - 1)
    held, refused, lost = [], 0, 0
    started = time.time()
    for _ in range(count):
        s = connect(server.port, 5)
        try:
            s.sendall(head)
            # A refusal comes back at once, before the body; a reserved body gets no answer yet.
            s.settimeout(0.02)
            try:
                status, headers, _ = read_response(s)
                if status == 503 and headers.get("retry-after"):
                    refused += 1
                else:
                    lost += 1
                s.close()
                continue
            except socket.timeout:
                pass
            s.settimeout(5)
            s.sendall(body)
            held.append(s)
        except (OSError, ValueError):
            lost += 1
            s.close()
    sent_in = time.time() - started
    time.sleep(0.5)
    rss_held = server.rss_kib()
    healthz_ok = urllib.request.urlopen(server.base + "/healthz", timeout=5).status == 200
    # The stalled bodies are closed at the request timeout; their bytes are then free again.
    time.sleep(max(0, started + body_timeout + 1.5 - time.time()))
    closed = sum(closed_by_server(s, 2) for s in held)
    for s in held:
        s.close()
    time.sleep(0.5)
    rss_after = server.rss_kib()
    probe = connect(server.port)
    probe.sendall(head + b"[" + b" " * (declared - 2) + b"]")
    status_after, _, _ = read_response(probe)
    probe.close()
    exit_code = server.stop()
    growth_mib = (rss_held - rss_before) / 1024
    info(f"{count} connections sent 1 MiB - 1 of a 1 MiB body in {sent_in:.1f}s: {len(held)} held, {refused} refused 503, {lost} lost")
    info(f"RSS {rss_before / 1024:.0f} MiB before, {rss_held / 1024:.0f} MiB while held, {rss_after / 1024:.0f} MiB after the timeout")
    check(f"bodies past the {cap_mib} MiB cap refused with 503 + Retry-After before they were read ({refused} refused, {len(held)} held, {lost} lost)",
          len(held) <= cap_mib and refused >= count - cap_mib - lost and lost == 0)
    check(f"RSS bounded by the cap while {len(held)} bodies stalled (+{growth_mib:.0f} MiB, cap {cap_mib} MiB)", growth_mib < cap_mib + 48)
    check("the server kept serving others meanwhile", healthz_ok)
    check(f"stalled bodies closed at the {body_timeout}s timeout ({closed} of {len(held)})", closed == len(held))
    check(f"their bytes were released: a new 1 MiB body is read (answered {status_after}, not 503)", status_after != 503)
    check("server exits 0 on SIGTERM", exit_code == 0)


def scenario_connections():
    count = int(os.environ.get("CONNECTIONS", "3000"))
    cap = int(os.environ.get("MAX_CONNECTIONS", "1000"))
    connection_timeout = 5
    server = Server(*supported("--max-connections", str(cap)), request_timeout=connection_timeout)
    fds_before, rss_before = server.fds(), server.rss_kib()
    started = time.time()
    opened = []
    failed_connects = 0
    for _ in range(count):
        try:
            opened.append(connect(server.port, 5))
        except OSError:
            failed_connects += 1
    time.sleep(1.0)
    fds_loaded, rss_loaded = server.fds(), server.rss_kib()
    # A refused connection has its 503 waiting (or is closed); a held one has nothing to read.
    poller = select.poll()
    for s in opened:
        poller.register(s, select.POLLIN)
    readable = {fd for fd, _ in poller.poll(0)}
    refused, held = 0, []
    for s in opened:
        if s.fileno() not in readable:
            held.append(s)
            continue
        try:
            data = s.recv(4096)
            if data.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in data:
                refused += 1
        except OSError:
            pass
        s.close()
    # While full, a new client gets 503 at once; once the idle ones time out, it is served.
    full = connect(server.port, 2)
    try:
        full_status = read_response(full)[0]
    except (OSError, ValueError) as error:
        full_status = f"no answer: {error}"
    full.close()
    loaded_for = time.time() - started
    time.sleep(max(0, started + connection_timeout + 1.5 - time.time()))
    for s in held:
        s.close()
    time.sleep(0.5)
    later = urllib.request.urlopen(server.base + "/healthz", timeout=5).status
    fds_after = server.fds()
    exit_code = server.stop()
    info(f"{count} connections against --max-connections {cap}: {len(held)} held, {refused} refused 503, "
         f"{failed_connects} connects failed (checked {loaded_for:.1f}s after the first)")
    info(f"server fds {fds_before} before, {fds_loaded} loaded, {fds_after} after; RSS {rss_before / 1024:.0f} MiB before, {rss_loaded / 1024:.0f} MiB loaded")
    check(f"connections past the cap got 503 + Retry-After and were closed ({refused} of {count - cap})",
          refused >= count - cap - failed_connects and len(held) <= cap)
    check(f"descriptors bounded by the cap ({fds_loaded - fds_before} more while loaded)", fds_loaded - fds_before <= cap + 16)
    check(f"a client arriving while full gets 503 at once (got {full_status})", full_status == 503)
    check(f"served again once the idle connections timed out (healthz {later})", later == 200)
    check("server exits 0 on SIGTERM", exit_code == 0)


def scenario_stall():
    diffs = int(os.environ.get("DIFFS", "150"))
    writes = int(os.environ.get("WRITES", "20"))
    elements = int(os.environ.get("DIFF_ELEMENTS", "100000"))
    # The default request timeout, as in the reproduction of issue 9.
    server = Server("--admin-token", "overload-token", request_timeout=int(os.environ.get("STALL_REQUEST_TIMEOUT", "10")))
    rng = random.Random(9)
    old = [i % 10 for i in range(elements)]
    new = old[:]
    rng.shuffle(new)
    diff_body = json.dumps({"old": old, "new": new}, separators=(",", ":")).encode()
    diff_request = b"POST /v1/diff HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(diff_body) + diff_body
    nonce = f"{os.getpid()}-{int(time.time())}"
    diff_outcomes, write_outcomes, health_ms = [None] * diffs, [None] * writes, []
    done = threading.Event()

    def run_diff(index):
        try:
            s = connect(server.port, 900)
            s.sendall(diff_request)
            status, _, _ = read_response(s)
            diff_outcomes[index] = f"answered {status}"
            s.close()
        except (OSError, ValueError) as error:
            diff_outcomes[index] = "failed: cut off inside the answer" if "cut off" in str(error) else f"failed: {error}"

    def run_write(index):
        title = f"overload-write-{nonce}-{index}"
        payload = json.dumps({"author_id": 1 + index % 20, "title": title, "thumbnail_url": "https://example.com/t.jpg",
                              "duration_seconds": 30}).encode()
        try:
            s = connect(server.port, 900)
            s.sendall(b"POST /v1/videos HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer overload-token\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
            status, _, _ = read_response(s)
            write_outcomes[index] = (title, status)
            s.close()
        except (OSError, ValueError) as error:
            write_outcomes[index] = (title, f"no answer: {error}")

    def probe_health():
        while not done.is_set():
            started = time.time()
            try:
                urllib.request.urlopen(server.base + "/healthz", timeout=900).read()
                health_ms.append((time.time() - started) * 1000)
            except OSError:
                health_ms.append(float("inf"))
            time.sleep(0.1)

    started = time.time()
    diff_threads = [threading.Thread(target=run_diff, args=(i,)) for i in range(diffs)]
    for thread in diff_threads:
        thread.start()
    time.sleep(0.5)
    write_threads = [threading.Thread(target=run_write, args=(i,)) for i in range(writes)]
    for thread in write_threads:
        thread.start()
    prober = threading.Thread(target=probe_health)
    prober.start()
    for thread in diff_threads + write_threads:
        thread.join()
    done.set()
    prober.join()
    elapsed = time.time() - started
    exit_code = server.stop()
    with sqlite3.connect(db) as store:
        committed = {row[0] for row in store.execute("SELECT title FROM videos WHERE title LIKE ?", (f"overload-write-{nonce}-%",))}
    answered = {title for title, status in write_outcomes if status == 201}
    unanswered = committed - answered
    diff_failures = [outcome for outcome in diff_outcomes if not outcome.startswith("answered")]
    diff_statuses = {}
    for outcome in diff_outcomes:
        diff_statuses[outcome] = diff_statuses.get(outcome, 0) + 1
    write_statuses = {}
    for _, status in write_outcomes:
        write_statuses[str(status)] = write_statuses.get(str(status), 0) + 1
    info(f"{diffs} diffs of {elements} elements ({len(diff_body) / 1024:.0f} KiB each) + {writes} writes took {elapsed:.1f}s")
    info(f"diffs: {diff_statuses}")
    info(f"writes: {write_statuses}; {len(committed)} committed")
    finite = [ms for ms in health_ms if ms != float("inf")]
    info(f"/healthz during the stall: {len(health_ms)} probes, p50 {percentile(finite, 0.5):.0f} ms, "
         f"p99 {percentile(finite, 0.99):.0f} ms, {len(health_ms) - len(finite)} failed")
    check(f"writes committed but unanswered: {len(unanswered)} (must be 0)", not unanswered)
    check(f"every write answered ({sum(1 for _, s in write_outcomes if isinstance(s, int))} of {writes})",
          all(isinstance(status, int) for _, status in write_outcomes))
    check(f"every diff answered in full or refused ({len(diff_failures)} cut off or dropped)", not diff_failures)
    check("server exits 0 on SIGTERM", exit_code == 0)


for name in scenarios:
    print(f"== {name}", flush=True)
    {"slow": scenario_slow, "bodies": scenario_bodies, "connections": scenario_connections, "stall": scenario_stall}[name]()

failed = sum(not ok for _, ok in checks)
print(f"overload: {len(checks) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
