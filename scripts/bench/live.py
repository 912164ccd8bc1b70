"""Runs the phases of scripts/bench-live against deltafeed's live route and prints their tables.

The streams are held by scripts/bench/live_client.c (one epoll thread per process, every event
timestamped with CLOCK_MONOTONIC, the clock of time.monotonic_ns() here); this script starts
each server, does the writes, reads the server's /proc files and matches events with writes.
The cluster phase starts no server: scripts/bench-live starts the replicas (cluster-lib.sh) and
passes their ports and PIDs (--cluster-ports, --cluster-pids).

  live.py run --binary B --client C --seed S --out DIR [options]   (see scripts/bench-live)
  live.py probe PORT RATE SECONDS                                  (the /healthz prober)
"""
import argparse
import collections
import http.client
import json
import math
import os
import queue
import random
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time

TOKEN = "bench-token"
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def now():
    return time.monotonic_ns()


def percentile(values, p):
    """The nearest-rank percentile of sorted values (p in 0..100)."""
    if not values:
        return float("nan")
    rank = max(1, math.ceil(p / 100 * len(values)))
    return values[rank - 1]


def ms(ns):
    return f"{ns / 1e6:.1f}" if ns == ns else "-"


def say(text):
    print(f"\033[1m==> {text}\033[0m", file=sys.stderr, flush=True)


def raise_descriptor_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# MARK: - The server and what /proc says of it


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def peak_rss_kib(pid):
    """The server's peak resident memory so far (VmHWM), in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def cpu_seconds(pid):
    """utime + stime of every thread of the process, in seconds (/proc/PID/stat)."""
    return sum(cpu_split(pid))


def cpu_split(pid):
    """(utime, stime) of every thread of the process, in seconds (/proc/PID/stat): the server's
    own code against the kernel's, which over loopback includes the receivers' TCP path."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLOCK_TICK, int(fields[12]) / CLOCK_TICK


class Server:
    def __init__(self, options, name, flags):
        self.options = options
        self.name = name
        db = os.path.join(options.out, "store.sqlite")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        shutil.copyfile(options.seed, db)  # every phase starts from the same store
        command = ["taskset", "-c", options.server_cpu, options.binary, "serve", "--db", db, "--host", "127.0.0.1",
                   "--port", str(options.port), "--threads", "1", "--admin-token", TOKEN, "--log-level", "warning"] + flags \
            + options.server_flags.split()
        self.log_path = os.path.join(options.out, f"server-{name}.log")
        self.log = open(self.log_path, "w")
        self.command = command
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=raise_descriptor_limit)
        self.pid = self.process.pid  # taskset execs the server: the same process
        wait_until_healthy(options.port, 60, self.alive, self.log_path)

    def alive(self):
        if self.process.poll() is not None:
            self.log.flush()
            with open(self.log_path) as log:
                tail = log.read()[-2000:]
            raise SystemExit(f"the server ({self.name}) exited with {self.process.returncode}:\n{tail}")

    def stop(self):
        """SIGTERM to its PID (it sends every stream `event: shutdown`), SIGKILL after 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print(f"the server ({self.name}) did not stop within 30 s of SIGTERM: killed", file=sys.stderr)
                self.process.kill()
                self.process.wait()
        self.log.close()


def wait_until_healthy(port, seconds, alive, log_path, pause=0.1):
    """Asks /healthz until it answers 200; `alive()` raises if the server exited meanwhile."""
    deadline = time.monotonic() + seconds
    while True:
        alive()
        try:
            status, _, _ = request(port, "GET", "/healthz", timeout=2)
            if status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"the server did not become healthy in {seconds} s; see {log_path}")
        time.sleep(pause)


def request(port, method, path, body=None, timeout=10, connection=None):
    own = connection is None
    if own:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    if own:
        connection.close()
    return response.status, response.headers, data


def live_metrics(options, name):
    """The server's deltafeed_live_* lines of /metrics (saved to the output folder)."""
    _, _, body = request(options.port, "GET", "/metrics")
    text = body.decode()
    with open(os.path.join(options.out, f"metrics-{name}.txt"), "w") as f:
        f.write(text)
    values = {}
    for line in text.splitlines():
        if line.startswith("deltafeed_live_") and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            values[key] = float(value)
    return values


def snapshot_of(port, path, connection):
    status, headers, _ = request(port, "GET", path, connection=connection)
    if status != 200:
        raise SystemExit(f"GET {path} answered {status}")
    return headers["ETag"].strip('"').removeprefix("W/").strip('"')


# MARK: - The stream holders (scripts/bench/live_client.c)


class Clients:
    """PATHS split over processes of at most options.per_client streams each, every process on
    16 loopback source addresses of its own."""

    def __init__(self, options, name, paths, flags=(), port=None, first_source=1):
        self.options = options
        self.processes = []
        self.records = []
        self.ready = []
        self.stats_lines = {}
        self.selector = selectors.DefaultSelector()
        per = options.per_client
        for k, first in enumerate(range(0, len(paths), per)):
            chunk = paths[first:first + per]
            paths_file = os.path.join(options.out, f"paths-{name}-{k}.txt")
            with open(paths_file, "w") as f:
                f.write("\n".join(chunk) + "\n")
            records = os.path.join(options.out, f"records-{name}-{k}.txt")
            process = subprocess.Popen(
                ["taskset", "-c", options.client_cpu, options.client, str(port or options.port), paths_file, records,
                 "-s", "16", "-f", str(first_source + 16 * k)] + list(flags),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, preexec_fn=raise_descriptor_limit)
            process.first = first
            os.set_blocking(process.stdout.fileno(), False)
            self.processes.append(process)
            self.records.append(records)
            self.ready.append(None)
            self.selector.register(process.stdout, selectors.EVENT_READ, k)
        self.buffers = [""] * len(self.processes)

    def _lines(self, timeout):
        """(process index, line) pairs read within timeout seconds."""
        out = []
        for key, _ in self.selector.select(timeout):
            k = key.data
            chunk = self.processes[k].stdout.read()
            if chunk == "" and self.processes[k].poll() is not None:
                raise SystemExit(f"live_client {k} exited with {self.processes[k].returncode}")
            self.buffers[k] += chunk or ""
            while "\n" in self.buffers[k]:
                line, self.buffers[k] = self.buffers[k].split("\n", 1)
                out.append((k, line))
        return out

    def _take(self, k, line):
        if line.startswith("READY"):
            self.ready[k] = dict(field.split("=") for field in line.split()[1:])
        elif line.startswith("STATS"):
            self.stats_lines[k] = {key: int(value) for key, value in (field.split("=") for field in line.split()[1:])}
        else:
            self.stats_lines.setdefault(("other", k), line)

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while None in self.ready:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for k, line in self._lines(left):
                self._take(k, line)
        return True

    def send(self, command):
        for process in self.processes:
            process.stdin.write(command + "\n")
            process.stdin.flush()

    def stats(self, timeout=30):
        """The counters of every process, summed."""
        self.stats_lines = {}
        self.send("stats")
        deadline = time.monotonic() + timeout
        while sum(1 for key in self.stats_lines if not isinstance(key, tuple)) < len(self.processes):
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit("live_client did not answer `stats`")
            for k, line in self._lines(left):
                self._take(k, line)
        total = collections.Counter()
        for key, fields in self.stats_lines.items():
            if not isinstance(key, tuple):
                total.update({k: v for k, v in fields.items() if k != "t_ns"})
        return total

    def command_and_wait(self, command, answer, timeout=60):
        self.send(command)
        seen = 0
        deadline = time.monotonic() + timeout
        while seen < len(self.processes):
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"live_client did not answer `{command}`")
            for k, line in self._lines(left):
                if line.startswith(answer):
                    seen += 1
                else:
                    self._take(k, line)

    def wait_for(self, key, target, timeout, poll=0.005):
        """Polls the counters until key reaches target; returns the counters."""
        deadline = time.monotonic() + timeout
        while True:
            stats = self.stats()
            if stats[key] >= target or time.monotonic() > deadline:
                return stats
            time.sleep(poll)

    def read_records(self):
        """Every record line, with the stream index made global across the processes. A line
        that is not a record (no newline yet: the client may be writing it as we read; or one
        whose fields do not parse) is skipped and counted on standard error, not a crash that
        leaves the server running: a record is a letter, a stream index, then the rest."""
        self.command_and_wait("flush", "FLUSHED")
        for process, path in zip(self.processes, self.records):
            malformed = []
            with open(path) as f:
                for line in f:
                    fields = line.split()
                    if not line.endswith("\n") or len(fields) < 2 or len(fields[0]) != 1 or not fields[1].isdigit():
                        malformed.append(line)
                        continue
                    fields[1] = int(fields[1]) + process.first
                    yield fields
            if malformed:
                print(f"live.py: {len(malformed)} malformed record line(s) skipped in {path}, the first: {malformed[0][:120]!r}",
                      file=sys.stderr)

    def quit(self):
        for process in self.processes:
            try:
                process.stdin.write("quit\n")
                process.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# MARK: - Phases


def server_flags(options, streams, per_viewer):
    return ["--max-connections", str(streams + 1000), "--live-max", str(max(streams + 100, 100_000)),
            "--live-per-viewer", str(max(16, per_viewer))]


def page_paths(options, count):
    """count pages of the demo store: viewer 1 + i % users with limit 10 + i // users (each
    (viewer, limit) a page of its own)."""
    return [(1 + i % options.users, 10 + i // options.users) for i in range(count)]


def idle(options, count, results):
    descriptors = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if count + 200 > descriptors:
        results.append({"streams": count, "skipped": f"needs {count + 200} descriptors in the server, RLIMIT_NOFILE hard limit is {descriptors}"})
        say(f"idle {count}: skipped, the descriptor limit is {descriptors}")
        return
    per_viewer = math.ceil(count / options.users)
    server = Server(options, f"idle-{count}", server_flags(options, count, per_viewer))
    try:
        # Every stream resumes from the snapshot its viewer was just served, so no event is due:
        # the streams idle from the start, and no page is composed for them.
        connection = http.client.HTTPConnection("127.0.0.1", options.port, timeout=10)
        since = {v: snapshot_of(options.port, f"/v1/users/{v}/feed", connection) for v in range(1, options.users + 1)}
        connection.close()
        time.sleep(2)  # the snapshots reach the store
        rss_before = rss_kib(server.pid)
        cpu_before_open = cpu_seconds(server.pid)
        say(f"idle: opening {count:,} streams")
        paths = [f"/v1/users/{v}/feed/live?since={since[v]}" for v in (1 + i % options.users for i in range(count))]
        started = time.monotonic()
        clients = Clients(options, f"idle-{count}", paths)
        try:
            if not clients.wait_ready(timeout=120 + count / 500):
                raise SystemExit(f"idle {count}: not every stream opened in time: {clients.stats()}")
            open_seconds = time.monotonic() - started
            opened = clients.stats()
            server.alive()
            cpu_open = cpu_seconds(server.pid) - cpu_before_open
            time.sleep(3)
            rss_open = rss_kib(server.pid)
            say(f"idle: {opened['opened']:,} open in {open_seconds:.1f} s; holding them {options.idle_seconds} s")
            before = clients.stats()
            cpu0, t0 = cpu_seconds(server.pid), time.monotonic()
            time.sleep(options.idle_seconds)
            cpu1, t1 = cpu_seconds(server.pid), time.monotonic()
            after = clients.stats()
            server.alive()
            rss_after = rss_kib(server.pid)
            results.append({
                "streams": count, "opened": opened["opened"], "refused": opened["refused"], "open_seconds": open_seconds,
                "open_cpu": cpu_open, "rss_before_kib": rss_before, "rss_open_kib": rss_open, "rss_after_kib": rss_after,
                "cpu_seconds": cpu1 - cpu0, "window": t1 - t0,
                "heartbeats": after["heartbeats"] - before["heartbeats"],
                "streams_with_heartbeat": after["streams_with_heartbeat"], "live_end": after["live"],
                "closed": after["closed"], "events": after["resets"] + after["deltas"] + after["others"],
            })
        finally:
            clients.quit()
    finally:
        server.stop()


def open_viewers(options, name, count, flags):
    """A server with count live streams, each its own page (viewer, limit), every first reset in."""
    pages = page_paths(options, count)
    per_viewer = math.ceil(count / options.users)
    server = Server(options, name, server_flags(options, count + 200, per_viewer))
    say(f"{name}: opening {count:,} streams (pages of {options.users:,} viewers, limits {pages[0][1]}..{pages[-1][1]})")
    clients = Clients(options, name, [f"/v1/users/{v}/feed/live?limit={limit}" for v, limit in pages], flags)
    if not clients.wait_ready(timeout=180):
        raise SystemExit(f"{name}: not every stream opened in 180 s: {clients.stats()}")
    stats = clients.wait_for("resets", count, timeout=180, poll=0.2)
    if stats["resets"] < count or stats["refused"]:
        raise SystemExit(f"{name}: {stats['resets']} resets for {count} streams ({stats})")
    server.alive()
    # What each page shows, from its reset.
    shows = [set() for _ in range(count)]
    for record in clients.read_records():
        if record[0] == "R":
            shows[record[1]].update(int(v) for v in record[5:])
    return server, clients, pages, shows


def fanout(options, results):
    count = options.fanout_viewers
    server, clients, pages, shows = open_viewers(options, "fanout", count, ["-v", "-k"])
    try:
        tally = collections.Counter(v for page in shows for v in page)
        video, showing = min(tally.items(), key=lambda item: (-item[1], item[0]))
        watched = [i for i in range(count) if video in shows[i]]
        say(f"fan-out: video {video} is on {showing:,} of {count:,} pages; {options.likes} likes, one at a time")
        time.sleep(2)
        base = clients.stats()
        rss_open = rss_kib(server.pid)
        connection = http.client.HTTPConnection("127.0.0.1", options.port, timeout=10)
        likes = []
        user = options.users
        split0 = cpu_split(server.pid)
        paused = 0.0
        for _ in range(options.likes):
            while True:
                sent = now()
                status, _, body = request(options.port, "PUT", f"/v1/videos/{video}/likes/{user}", connection=connection)
                acked = now()
                user -= 1
                if status == 201:
                    break
                if status != 409 or user < 1:
                    raise SystemExit(f"PUT like answered {status}: {body[:200]}")
            expected = base["deltas"] + showing * (len(likes) + 1)
            stats = clients.wait_for("deltas", expected, timeout=options.like_timeout)
            done = now()
            likes.append({"sent": sent, "acked": acked, "like_count": json.loads(body)["like_count"], "done": done,
                          "delivered": stats["deltas"] - base["deltas"] - showing * len(likes)})
            # Past the coalescing window of every stream, so the next like is not folded.
            pause_start = time.monotonic()
            time.sleep(options.like_gap)
            paused += time.monotonic() - pause_start
        split1 = cpu_split(server.pid)
        user_cpu, system_cpu = split1[0] - split0[0], split1[1] - split0[1]
        connection.close()
        time.sleep(0.5)
        server.alive()
        end = clients.stats()
        rss_end, rss_peak = rss_kib(server.pid), peak_rss_kib(server.pid)
        metrics = live_metrics(options, "fanout")
        # Deliveries: each delta after like k's request and before like k+1's belongs to it.
        bounds = [like["sent"] for like in likes] + [float("inf")]
        per_like = [dict() for _ in likes]  # stream -> (time, keys)
        extra = 0
        bytes_total = 0
        for record in clients.read_records():
            if record[0] != "D":
                continue
            t = int(record[2])
            k = next((k for k in range(len(likes)) if bounds[k] <= t < bounds[k + 1]), None)
            if k is None:
                continue
            bytes_total += int(record[3])
            if record[1] in per_like[k]:
                extra += 1
            per_like[k][record[1]] = (t, record[5:])
        delays, wrong, missing, not_watched, last = [], 0, 0, 0, []
        watched_set = set(watched)
        for k, like in enumerate(likes):
            got = per_like[k]
            missing += sum(1 for i in watched if i not in got)
            not_watched += sum(1 for i in got if i not in watched_set)
            for i, (t, keys) in got.items():
                delays.append(t - like["acked"])
                if not any(key.startswith("L:") and key.endswith(f":{like['like_count']}") for key in keys):
                    wrong += 1
            if got:
                last.append(max(t for t, _ in got.values()) - like["acked"])
        delays.sort()
        events = sum(len(got) for got in per_like)
        results.append({
            "viewers": count, "video": video, "showing": showing, "likes": len(likes), "events": events,
            "missing": missing, "extra": extra, "not_watched": not_watched, "wrong": wrong,
            "p50": percentile(delays, 50), "p99": percentile(delays, 99), "max": delays[-1] if delays else float("nan"),
            "min": delays[0] if delays else float("nan"),
            "last_p50": percentile(sorted(last), 50), "last_max": max(last) if last else float("nan"),
            "cpu": user_cpu + system_cpu, "user_cpu": user_cpu, "system_cpu": system_cpu, "paused": paused, "bytes": bytes_total,
            "wire_bytes": end["wire_bytes"] - base["wire_bytes"], "write_ms": [(like["acked"] - like["sent"]) / 1e6 for like in likes],
            "last_ms": [delay / 1e6 for delay in last],
            "metrics": metrics, "rss_open_kib": rss_open, "rss_end_kib": rss_end, "rss_peak_kib": rss_peak,
        })
    finally:
        clients.quit()
        server.stop()


def mixed(options, rate, results):
    count = options.mixed_viewers
    server, clients, pages, shows = open_viewers(options, f"mixed-{rate}", count, ["-v", "-k"])
    try:
        time.sleep(2)
        base = clients.stats()
        rss_start = rss_kib(server.pid)
        probe_log = os.path.join(options.out, f"probe-{rate}.txt")
        probe_seconds = options.mixed_seconds
        prober = subprocess.Popen(
            ["taskset", "-c", options.client_cpu] + options.probe_priority
            + [sys.executable, os.path.abspath(__file__), "probe", str(options.port), str(options.probe_rate), str(probe_seconds)],
            stdout=open(probe_log, "w"), stderr=subprocess.STDOUT)
        say(f"mixed: {rate} writes/s for {options.mixed_seconds} s, {count:,} streams, /healthz probed {options.probe_rate}/s")
        writer = Writer(options, [options.port], rate, options.mixed_seconds, seed=11)
        rss_samples = []
        sampling = True

        def sample():
            while sampling:
                rss_samples.append(rss_kib(server.pid))
                time.sleep(1)

        sampler = threading.Thread(target=sample, daemon=True)
        t_start = now()
        cpu0 = cpu_seconds(server.pid)
        sampler.start()
        writer.run()
        t_writes_end = now()
        try:
            prober.wait(timeout=probe_seconds + 30)
        except subprocess.TimeoutExpired:
            prober.kill()
            prober.wait()
        # Drained: no event for options.settle seconds (at most options.drain_limit after the writes).
        last_count, last_change = clients.stats()["deltas"], time.monotonic()
        while time.monotonic() - last_change < options.settle and (now() - t_writes_end) / 1e9 < options.drain_limit:
            time.sleep(0.25)
            server.alive()
            count_now = clients.stats()["deltas"]
            if count_now != last_count:
                last_count, last_change = count_now, time.monotonic()
        drained = last_change - t_writes_end / 1e9 if last_change * 1e9 > t_writes_end else 0.0
        sampling = False
        sampler.join()
        cpu1, t_cpu1 = cpu_seconds(server.pid), now()
        server.alive()
        end = clients.stats()
        metrics = live_metrics(options, f"mixed-{rate}")
        with open(probe_log) as f:
            probe = json.loads(f.read().strip().splitlines()[-1])
        # Is every stream at its page's snapshot now? Its last event id against GET …/feed.
        clients.command_and_wait("dump", "DUMPED")
        held = {}
        records = list(clients.read_records())
        for record in records:
            if record[0] == "I":
                held[record[1]] = record[2]
        connection = http.client.HTTPConnection("127.0.0.1", options.port, timeout=10)
        stale = [i for i, (v, limit) in enumerate(pages) if held.get(i) != snapshot_of(options.port, f"/v1/users/{v}/feed?limit={limit}", connection)]
        connection.close()
        lags, matched_events, unmatched_events, ambiguous, unattributed, resets_during, deltas, delta_bytes = match(records, writer, shows, t_start)
        results.append({
            "rate": rate, "viewers": count, "seconds": options.mixed_seconds, "offered": writer.offered,
            "status": dict(writer.status), "deltas": deltas, "events_per_s": deltas / (options.mixed_seconds + drained),
            "delta_bytes": delta_bytes, "resets": resets_during, "closed": end["closed"] - base["closed"],
            "deliveries": len(lags), "p50": percentile(lags, 50), "p99": percentile(lags, 99),
            "max": lags[-1] if lags else float("nan"), "min": lags[0] if lags else float("nan"),
            "unmatched": unmatched_events, "ambiguous": ambiguous, "unattributed": unattributed, "stale": len(stale), "stale_examples": stale[:5],
            "write_p99": percentile(sorted(writer.latencies), 99), "cpu": cpu1 - cpu0,
            "rss_start_kib": rss_start, "rss_max_kib": max(rss_samples), "rss_end_kib": rss_kib(server.pid),
            "healthz": probe, "drained": drained, "window": (t_cpu1 - t_start) / 1e9, "metrics": metrics,
        })
    finally:
        clients.quit()
        server.stop()


def match(records, writer, shows, t_start):
    """Write ack → event on each stream whose event carries the write: a new video by its title,
    a like by its like count (a patch names no video: the video is the one on that stream's page
    whose like the writer saw reach that count; a whole item names it). A like coalesced into a
    later count of the same video is delivered by that event.

    Two cases deliver a like at an unknown time, and are left out of the lags (counted as
    unattributed) rather than charged to a later event:
    - a patch whose count several videos of the page reached ("ambiguous"): each of them may have
      been delivered up to that count then;
    - a video that enters the page (a whole item not on it before): its earlier likes were not
      the page's to show.
    Before 2026-11-28 both were charged to the video's next event from a floor of 0, which made
    the 500 writes/s lag max about 28 s while every stream caught up within a second of the
    writes' end."""
    by_count = collections.defaultdict(list)
    for video, writes in writer.likes.items():
        writes.sort()
        for like_count, _ in writes:
            by_count[like_count].append(video)
    shows = [set(page) for page in shows]
    delivered = collections.defaultdict(int)  # (stream, video) -> like count delivered
    uncertain = collections.defaultdict(int)  # (stream, video) -> count an ambiguous event may have delivered
    seen_titles = set()
    lags = []
    matched = unmatched = ambiguous = unattributed = resets = deltas = delta_bytes = 0
    for record in records:
        if record[0] == "R" and int(record[2]) >= t_start:
            resets += 1
            shows[record[1]] = set(int(v) for v in record[5:])
            continue
        if record[0] != "D" or int(record[2]) < t_start:
            continue
        deltas += 1
        delta_bytes += int(record[3])
        stream, t = record[1], int(record[2])
        hit = False
        for key in record[5:]:
            kind, _, rest = key.partition(":")
            if kind == "T":
                n = int(rest)
                if n in writer.titles and (stream, n) not in seen_titles:
                    seen_titles.add((stream, n))
                    lags.append(t - writer.titles[n])
                    hit = True
            elif kind == "L":
                video, like_count = (int(x) for x in rest.split(":"))
                if video:
                    if video not in shows[stream]:
                        shows[stream].add(video)
                        delivered[(stream, video)] = like_count
                        continue
                    candidates = [video] if video in writer.likes else []
                else:
                    candidates = [v for v in by_count.get(like_count, ()) if v in shows[stream]]
                    if len(candidates) > 1:
                        ambiguous += 1
                        for v in candidates:
                            uncertain[(stream, v)] = max(uncertain[(stream, v)], like_count)
                        continue
                for v in candidates:
                    floor = delivered[(stream, v)]
                    unknown = uncertain[(stream, v)]
                    for count, acked in writer.likes[v]:
                        if floor < count <= like_count:
                            if count <= unknown:
                                unattributed += 1
                                continue
                            lags.append(t - acked)
                            hit = True
                    delivered[(stream, v)] = max(floor, like_count)
        if hit:
            matched += 1
        else:
            unmatched += 1
    lags.sort()
    return lags, matched, unmatched, ambiguous, unattributed, resets, deltas, delta_bytes


# MARK: - Cluster: write-to-delivery across replicas on PostgreSQL


def process_alive(pid):
    """Whether PID runs (a zombie does not: the replicas are scripts/bench-live's children)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def tree_cpu_seconds(pid):
    """utime + stime of PID, of its children alive and of those it has reaped (cutime + cstime):
    PostgreSQL's postmaster and its backends."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    total = sum(int(fields[i]) for i in (11, 12, 13, 14))
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICK


def json_pointer(path):
    return [token.replace("~1", "/").replace("~0", "~") for token in path.split("/")[1:]] if path else []


def pointer_parent(document, tokens):
    """The container tokens[-1] is in, and that key (an index for a list, "-" kept)."""
    container = document
    for token in tokens[:-1]:
        container = container[int(token)] if isinstance(container, list) else container[token]
    key = tokens[-1]
    if isinstance(container, list) and key != "-":
        key = int(key)
    return container, key


def apply_json_patch(document, operations):
    """RFC 6902 on a parsed document, in place; returns the document (a new one when the path ""
    is replaced). A missing target or a failed test raises (KeyError, IndexError, ValueError)."""
    for operation in operations:
        kind, tokens = operation["op"], json_pointer(operation["path"])
        if kind == "test":
            container, key = pointer_parent(document, tokens) if tokens else (None, None)
            if (container[key] if tokens else document) != operation["value"]:
                raise ValueError(f"test failed at {operation['path']}")
            continue
        if kind in ("move", "copy"):
            container, key = pointer_parent(document, json_pointer(operation["from"]))
            value = container[key]
            if kind == "move":
                del container[key]
            else:
                value = json.loads(json.dumps(value))
        else:
            value = operation.get("value")
        if not tokens:
            if kind == "remove":
                raise ValueError("remove of the whole document")
            document = value
            continue
        container, key = pointer_parent(document, tokens)
        if kind == "remove":
            del container[key]
        elif kind == "replace":
            if isinstance(container, dict) and key not in container:
                raise KeyError(operation["path"])
            container[key] = value
        elif isinstance(container, list):
            if key == "-":
                container.append(value)
            elif 0 <= key <= len(container):
                container.insert(key, value)
            else:
                raise IndexError(operation["path"])
        else:
            container[key] = value
    return document


def page_videos(document):
    """video id -> (like_count, title) of every video item of a feed page."""
    videos = {}
    for section in document.get("sections", ()):
        for item in section.get("items", ()):
            if item.get("kind") == "video":
                video = item["data"]["video"]
                videos[video["id"]] = (video.get("like_count", 0), video.get("title") or "")
    return videos


def read_events(group):
    """The records of a Clients group started with -d, in order: [kind, stream, t_ns, fields,
    data], the stream index made global across the group's processes, data the JSON text of a
    reset or delta (an "I" line of `dump`: t_ns 0, fields [last event id])."""
    group.command_and_wait("flush", "FLUSHED")
    events = []
    for process, path in zip(group.processes, group.records):
        with open(path) as f:
            for line in f:
                if line.startswith("J "):
                    events[-1][4] = line[2:].rstrip("\n")
                    continue
                fields = line.split()
                stream = int(fields[1]) + process.first
                if fields[0] == "I":
                    events.append(["I", stream, 0, fields[2:], None])
                else:
                    events.append([fields[0], stream, int(fields[2]), fields[3:], None])
    return events


class Writer:
    """Open-loop writes at RATE a second for SECONDS, write n sent to port n % len(PORTS) (each of
    16 threads keeps one keep-alive connection per port): 4 in 5 likes (PUT …/likes/{user}) by a
    random user of one of VIDEOS (the videos the streams' pages show) or, without VIDEOS, of a
    random video; 1 in 5 new videos by random authors titled "lv-N". Remembers when each write
    was acknowledged, what it carries and which port (replica) acknowledged it."""

    def __init__(self, options, ports, rate, seconds, videos=None, seed=13):
        self.options, self.ports, self.rate, self.seconds = options, ports, rate, seconds
        self.videos = sorted(videos) if videos else None
        self.rng = random.Random(seed)
        self.jobs = queue.Queue()
        self.lock = threading.Lock()
        self.likes = collections.defaultdict(list)  # video -> [(like_count, acked)]
        self.titles = {}  # n -> acked
        self.origin = {}  # ("L", video, like_count) or ("T", n) -> the replica that acknowledged it
        self.status = collections.Counter()
        self.status_by_replica = [collections.Counter() for _ in ports]
        self.latencies = []
        self.log = []  # (n, replica, kind, status, sent, acked, video, like_count)
        self.offered = 0
        self.last_acked = 0

    def work(self):
        connections = [None] * len(self.ports)
        while True:
            job = self.jobs.get()
            if job is None:
                for connection in connections:
                    if connection:
                        connection.close()
                return
            kind, replica, method, path, body, n = job
            port = self.ports[replica]
            if connections[replica] is None:
                connections[replica] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            sent = now()
            try:
                status, _, data = request(port, method, path, body=body, connection=connections[replica])
            except (OSError, http.client.HTTPException) as error:
                status, data = type(error).__name__, b""
                connections[replica].close()
                connections[replica] = None
            acked = now()
            with self.lock:
                self.status[status] += 1
                self.status_by_replica[replica][status] += 1
                video = json.loads(data) if status == 201 else {}
                self.log.append((n, replica, kind, status, sent, acked, video.get("id", 0), video.get("like_count", -1)))
                if status == 201:
                    self.latencies.append(acked - sent)
                    self.last_acked = max(self.last_acked, acked)
                    if kind == "like":
                        self.likes[video["id"]].append((video["like_count"], acked))
                        self.origin[("L", video["id"], video["like_count"])] = replica
                    else:
                        self.titles[n] = acked
                        self.origin[("T", n)] = replica

    def run(self):
        workers = [threading.Thread(target=self.work, daemon=True) for _ in range(16)]
        for worker in workers:
            worker.start()
        started = time.monotonic()
        for n in range(int(self.rate * self.seconds)):
            delay = started + n / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            replica = n % len(self.ports)
            if self.rng.random() < 0.8:
                video = self.rng.choice(self.videos) if self.videos else self.rng.randrange(1, self.options.videos + 1)
                user = self.rng.randrange(1, self.options.users + 1)
                self.jobs.put(("like", replica, "PUT", f"/v1/videos/{video}/likes/{user}", None, n))
            else:
                body = json.dumps({"author_id": self.rng.randrange(1, self.options.users + 1), "title": f"lv-{n}",
                                   "thumbnail_url": "https://cdn.deltafeed.example/thumbs/b.jpg", "duration_seconds": 30})
                self.jobs.put(("video", replica, "POST", "/v1/videos", body, n))
            self.offered += 1
        for _ in workers:
            self.jobs.put(None)
        for worker in workers:
            worker.join(timeout=60)
        return time.monotonic() - started


def replay(events, writer, replica, t_start, window_ns, deliveries, counters):
    """Applies each stream's events, in order, to a copy of its page (the streams are
    format=jsonpatch, so every like count that changes names its video) and attributes every
    write to the event that first carried it: a like when its video's count on the page passes the
    like's count (several likes of one video folded into one event are each delivered by it), a
    new video when its title lv-N first appears. A video that enters the page delivers nothing
    (its likes were not the page's to show). Appends (lag_ns, write's replica, stream's replica,
    quiet, write) to deliveries, quiet meaning the event came more than window_ns after the
    stream's previous one (not held by coalescing). Returns each stream's page at the end."""
    by_stream = collections.defaultdict(list)
    for event in events:
        by_stream[event[1]].append(event)
    pages = {}
    for stream, stream_events in by_stream.items():
        document, videos, seen, last_t = None, {}, set(), None
        for kind, _, t, fields, data in stream_events:
            if kind in ("C", "F", "X"):
                if t >= t_start:
                    counters[{"C": "closed", "F": "refused", "X": "other_events"}[kind]] += 1
                continue
            if kind == "R":
                document = json.loads(data)
                videos = page_videos(document)
                seen.update(title for _, title in videos.values())
                if t >= t_start:
                    counters["resets"] += 1
                last_t = t
                continue
            if kind != "D":
                continue
            counters["deltas"] += 1
            counters["delta_bytes"] += int(fields[0])
            delta = json.loads(data)
            # A delta event follows from the event before it (the body does not repeat since):
            # only one with no page to apply to breaks the chain.
            if document is None:
                counters["chain_breaks"] += 1
            try:
                document = apply_json_patch(document, delta["patch"])
            except (KeyError, IndexError, ValueError, TypeError):
                counters["patch_failures"] += 1
                document = None
                continue
            if document.get("snapshot") != delta.get("snapshot") or fields[1] != delta.get("snapshot"):
                counters["snapshot_mismatches"] += 1
            after = page_videos(document)
            quiet = last_t is None or t - last_t > window_ns
            carried = 0
            for video, (like_count, title) in after.items():
                before = videos.get(video)
                if before is None:
                    counters["videos_entered"] += 1
                    if title.startswith("lv-") and title not in seen:
                        seen.add(title)
                        n = int(title[3:])
                        if n in writer.titles:
                            deliveries.append((t - writer.titles[n], writer.origin[("T", n)], replica, quiet, ("T", n)))
                            carried += 1
                    continue
                if like_count > before[0]:
                    likes = [(count, acked) for count, acked in writer.likes.get(video, ()) if before[0] < count <= like_count]
                    for count, acked in likes:
                        deliveries.append((t - acked, writer.origin[("L", video, count)], replica, quiet, ("L", video, count)))
                    carried += len(likes)
                    if len(likes) != like_count - before[0]:
                        counters["unexplained_counts"] += 1
                elif like_count < before[0]:
                    counters["counts_went_down"] += 1
            videos = after
            counters["events_carrying_writes" if carried else "events_carrying_none"] += 1
            last_t = t
        pages[stream] = document
    return pages


def cluster(options, results):
    """Streams spread over the replicas (stream i on replica i % R, through that replica's own
    port), writes round robin over the replicas, every delivery's lag split by whether the
    stream's replica is the one that acknowledged the write. The replicas, PostgreSQL and nginx
    are scripts/bench-live's (cluster-lib.sh start_cluster / stop_cluster): this reads their
    ports and PIDs, and starts or stops none of them."""
    ports = [int(p) for p in options.cluster_ports.split(",")]
    pids = [int(p) for p in options.cluster_pids.split(",")]
    replicas = len(ports)
    count = options.cluster_streams

    def alive():
        for r, pid in enumerate(pids):
            if not process_alive(pid):
                raise SystemExit(f"cluster: replica {r} (pid {pid}, port {ports[r]}) is no longer running")

    pages = page_paths(options, count)
    members = [[i for i in range(count) if i % replicas == r] for r in range(replicas)]
    say(f"cluster: opening {count:,} streams, {len(members[0]):,} on each of the {replicas} replicas' own ports "
        f"(pages of {options.users:,} viewers, limits {pages[0][1]}..{pages[-1][1]}, format=jsonpatch)")
    groups = []
    try:
        for r in range(replicas):
            paths = [f"/v1/users/{pages[i][0]}/feed/live?limit={pages[i][1]}&format=jsonpatch" for i in members[r]]
            groups.append(Clients(options, f"cluster-r{r}", paths, ["-d"], port=ports[r], first_source=1 + 64 * r))
        for r, group in enumerate(groups):
            if not group.wait_ready(timeout=180):
                raise SystemExit(f"cluster: not every stream of replica {r} opened in 180 s: {group.stats()}")
            stats = group.wait_for("resets", len(members[r]), timeout=180, poll=0.2)
            if stats["resets"] < len(members[r]) or stats["refused"]:
                raise SystemExit(f"cluster: replica {r}: {stats['resets']} resets for {len(members[r])} streams ({stats})")
        alive()
        videos = set()
        for group in groups:
            for event in read_events(group):
                if event[0] == "R":
                    videos.update(page_videos(json.loads(event[4])))
        time.sleep(2)
        base = [group.stats() for group in groups]
        say(f"cluster: {options.cluster_rate:g} writes/s for {options.cluster_seconds:g} s, round robin over the replicas "
            f"(likes of the {len(videos):,} videos the pages show, new videos)")
        writer = Writer(options, ports, options.cluster_rate, options.cluster_seconds, videos)
        cpu0 = [cpu_seconds(pid) for pid in pids]
        pg0 = tree_cpu_seconds(options.cluster_pg_pid) if options.cluster_pg_pid else None
        t_start = now()
        writer.run()
        t_writes_end = now()
        alive()
        # Drained: no event on any stream for options.settle seconds (at most the drain limit).
        last_count, last_change = sum(group.stats()["deltas"] for group in groups), time.monotonic()
        while time.monotonic() - last_change < options.settle and (now() - t_writes_end) / 1e9 < options.cluster_drain_limit:
            time.sleep(0.25)
            alive()
            count_now = sum(group.stats()["deltas"] for group in groups)
            if count_now != last_count:
                last_count, last_change = count_now, time.monotonic()
        t_end = now()
        cpu1 = [cpu_seconds(pid) for pid in pids]
        pg1 = tree_cpu_seconds(options.cluster_pg_pid) if options.cluster_pg_pid else None
        end = [group.stats() for group in groups]
        metrics = []
        for r in range(replicas):
            saved, options.port = options.port, ports[r]  # live_metrics reads options.port
            try:
                metrics.append(live_metrics(options, f"cluster-r{r}"))
            finally:
                options.port = saved
        with open(os.path.join(options.out, "writes-cluster.txt"), "w") as f:
            f.write("# n replica kind status sent_ns acked_ns video like_count\n")
            for entry in sorted(writer.log):
                f.write(" ".join(str(x) for x in entry) + "\n")
        # Every stream's page, replayed from its events, against GET …/feed of that page now: on its
        # own replica (the snapshot id the stream last received, and the whole document) and on the
        # next replica (replicas at one change-log position give the same snapshot ids).
        deliveries, counters = [], collections.Counter()
        stale, differ, disagree, examples, last_event = 0, 0, 0, [], t_start
        window_ns = (options.coalesce_ms + 50) * 1_000_000
        connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for port in ports]
        for r, group in enumerate(groups):
            group.command_and_wait("dump", "DUMPED")
            events = read_events(group)
            held = {event[1]: event[3][0] for event in events if event[0] == "I"}
            last_event = max([last_event] + [event[2] for event in events if event[0] == "D"])
            replayed = replay(events, writer, r, t_start, window_ns, deliveries, counters)
            other = (r + 1) % replicas
            for j, i in enumerate(members[r]):
                v, limit = pages[i]
                path = f"/v1/users/{v}/feed?limit={limit}"
                status, headers, body = request(ports[r], "GET", path, connection=connections[r])
                if status != 200:
                    raise SystemExit(f"cluster: GET {path} on replica {r} answered {status}")
                fresh = headers["ETag"].strip('"').removeprefix("W/").strip('"')
                if held.get(j) != fresh:
                    stale += 1
                    if len(examples) < 5:
                        examples.append(f"stale: replica {r} (port {ports[r]}) {path}: the stream's last event {held.get(j)}, the page now {fresh}")
                elif replayed.get(j) != json.loads(body):
                    differ += 1
                    if len(examples) < 5:
                        examples.append(f"differs: replica {r} (port {ports[r]}) {path} at {fresh}: the stream's events applied to its reset "
                                        f"do not give the page")
                if snapshot_of(ports[other], path, connections[other]) != fresh:
                    disagree += 1
            del events, replayed
        for connection in connections:
            connection.close()

        def figures(lags):
            lags = sorted(lags)
            return {"n": len(lags), "p50": percentile(lags, 50), "p99": percentile(lags, 99),
                    "max": lags[-1] if lags else float("nan"), "min": lags[0] if lags else float("nan")}

        pairs = collections.defaultdict(list)
        first = {}  # (write, stream's replica) -> (lag of the first stream it reached there, write's replica)
        reach = collections.Counter()  # write -> streams it reached
        for lag, origin, stream_replica, _, write in deliveries:
            pairs[(origin, stream_replica)].append(lag)
            reach[write] += 1
            if (write, stream_replica) not in first or lag < first[(write, stream_replica)][0]:
                first[(write, stream_replica)] = (lag, origin)
        wide = count // 10
        results.append({
            "replicas": replicas, "streams": count, "rate": options.cluster_rate, "seconds": options.cluster_seconds,
            "offered": writer.offered, "status": dict(writer.status),
            "status_by_replica": [dict(c) for c in writer.status_by_replica], "videos": len(videos),
            "write_p50": percentile(sorted(writer.latencies), 50), "write_p99": percentile(sorted(writer.latencies), 99),
            "same": figures([d[0] for d in deliveries if d[1] == d[2]]), "other": figures([d[0] for d in deliveries if d[1] != d[2]]),
            "all": figures([d[0] for d in deliveries]), "quiet": figures([d[0] for d in deliveries if d[3]]),
            "held": figures([d[0] for d in deliveries if not d[3]]),
            "first_same": figures([lag for (_, r), (lag, origin) in first.items() if origin == r]),
            "first_other": figures([lag for (_, r), (lag, origin) in first.items() if origin != r]),
            "wide": figures([d[0] for d in deliveries if reach[d[4]] > wide]),
            "narrow": figures([d[0] for d in deliveries if reach[d[4]] <= wide]),
            "wide_writes": sum(1 for n in reach.values() if n > wide), "narrow_writes": sum(1 for n in reach.values() if n <= wide),
            "writes_reaching": len(reach),
            "pairs": {f"{a}→{b}": figures(lags) for (a, b), lags in sorted(pairs.items())},
            "events_per_s": counters["deltas"] / ((t_end - t_start) / 1e9), "counters": dict(counters),
            "live_end": sum(e["live"] for e in end), "closed": sum(e["closed"] - b["closed"] for e, b in zip(end, base)),
            "stale": stale, "differ": differ, "disagree": disagree, "examples": examples,
            "drained": max(0.0, (last_event - max(writer.last_acked, t_start)) / 1e9),
            "cpu": [b - a for a, b in zip(cpu0, cpu1)], "pg_cpu": (pg1 - pg0) if pg0 is not None else None,
            "window": (t_end - t_start) / 1e9, "metrics": metrics, "ports": ports, "pids": pids,
        })
    finally:
        for group in groups:
            group.quit()


# MARK: - Output


def metrics_line(metrics):
    """The server's live counters, without histogram buckets."""
    shown = [f"{key.removeprefix('deltafeed_')} {value:,.6g}" for key, value in sorted(metrics.items()) if "_bucket" not in key]
    return "server /metrics: " + "; ".join(shown)


def kib(value):
    return f"{value / 1024:,.0f}"


def report(options, idle_results, fanout_results, mixed_results, cluster_results=()):
    if idle_results or fanout_results or mixed_results:
        print()
        print(f"deltafeed live streams: {options.binary_label}; store: demo ({options.users:,} users, {options.videos:,} videos, 40 ads), SQLite")
        print(f"server: `serve --threads 1` pinned to core {options.server_cpu} (taskset); stream holders "
              f"(scripts/bench/live_client.c, epoll), writer and /healthz prober on core {options.client_cpu}; "
              f"RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)[1]:,}; load average {options.load_before} before, "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} after")
    verdicts = []
    if idle_results:
        print()
        print(f"Idle streams (each resumes from the snapshot its viewer was just served, so no event is due; CPU over {options.idle_seconds} s of holding them, heartbeats every 15 s):")
        print()
        print("| streams | open | open in | server CPU to open | RSS before MiB | RSS with streams MiB | RSS per stream | idle CPU | per stream | heartbeats received | streams that got one | events | closed |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in idle_results:
            if "skipped" in r:
                print(f"| {r['streams']:,} | skipped: {r['skipped']} | | | | | | | | | | | |")
                continue
            per_stream = (r["rss_after_kib"] - r["rss_before_kib"]) * 1024 / r["streams"]
            cpu_share = r["cpu_seconds"] / r["window"]
            r["per_stream"] = per_stream
            print(f"| {r['streams']:,} | {r['opened']:,} | {r['open_seconds']:.1f} s | {r['open_cpu']:.2f} s | {kib(r['rss_before_kib'])} | "
                  f"{kib(r['rss_after_kib'])} | {per_stream / 1000:.1f} KB | {100 * cpu_share:.2f} % of a core "
                  f"({r['cpu_seconds']:.2f} s in {r['window']:.0f} s) | {1e6 * cpu_share / r['streams']:.2f} µs/s | "
                  f"{r['heartbeats']:,} | {r['streams_with_heartbeat']:,} | {r['events']} | {r['closed']} |")
        measured = [r for r in idle_results if "per_stream" in r]
        if measured:
            largest = max(measured, key=lambda r: r["streams"])
            worst = max(r["per_stream"] for r in measured)
            projected = largest["rss_before_kib"] * 1024 + 100_000 * largest["per_stream"]
            done = [r for r in measured if r["streams"] >= 100_000]
            how = "measured" if done else f"projected from {largest['streams']:,} streams"
            verdicts.append(("100,000 idle streams within 2 GiB RSS (≤ 20 KB each)",
                             f"{worst / 1000:.1f} KB per stream at most; 100,000 streams: {projected / 2**30:.2f} GiB ({how})",
                             ("yes" if worst <= 20_000 and projected <= 2**31 else "no") + ("" if done else " (not run at 100,000)")))
    for r in fanout_results:
        print()
        print(f"Fan-out: {r['viewers']:,} streams ({r['viewers']:,} pages: {options.users:,} viewers × limits), video {r['video']} on "
              f"{r['showing']:,} of them; {r['likes']} likes on it, one at a time, each once the last was delivered everywhere "
              f"and {options.like_gap * 1000:.0f} ms had passed (the coalescing window). Delivery = event received − like acknowledged:")
        print()
        print("| deliveries | missing | extra | wrong count | p50 | p99 | max | min | last stream of a like: p50 / max | server CPU per event (user + system) | SSE bytes per event | write latency p50 | RSS streams open / after / peak MiB |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        cpu_per_event = r["cpu"] / r["events"] if r["events"] else float("nan")
        write_ms = sorted(r["write_ms"])
        print(f"| {r['events']:,} | {r['missing']} | {r['extra'] + r['not_watched']} | {r['wrong']} | {ms(r['p50'])} ms | {ms(r['p99'])} ms | "
              f"{ms(r['max'])} ms | {ms(r['min'])} ms | {ms(r['last_p50'])} / {ms(r['last_max'])} ms | "
              f"{1e6 * cpu_per_event:.1f} µs ({r['cpu']:.2f} s; {1e6 * r['user_cpu'] / max(r['events'], 1):.1f} + "
              f"{1e6 * r['system_cpu'] / max(r['events'], 1):.1f}) | {r['bytes'] / max(r['events'], 1):,.0f} | {percentile(write_ms, 50):.1f} ms | "
              f"{kib(r['rss_open_kib'])} / {kib(r['rss_end_kib'])} / {kib(r['rss_peak_kib'])} |")
        print()
        print(metrics_line(r["metrics"]))
        verdicts.append((f"a like reaches all {r['viewers']:,} viewers within 250 ms p99 of its acknowledgement",
                         f"p99 {ms(r['p99'])} ms, {r['missing']} missing", "yes" if r["p99"] <= 250e6 and r["missing"] == 0 else "no"))
        verdicts.append(("≤ 25 µs server CPU per delivered event", f"{1e6 * cpu_per_event:.1f} µs", "yes" if cpu_per_event <= 25e-6 else "no"))
    if mixed_results:
        print()
        print(f"Mixed: {options.mixed_viewers:,} streams (the same pages), a writer for {options.mixed_seconds} s at each rate (open loop, 16 "
              f"connections; 4 in 5 likes of random videos by random users, 1 in 5 new videos by random authors), "
              f"/healthz probed {options.probe_rate}/s meanwhile. Lag = event received − write acknowledged, for every stream an event "
              f"carried the write to (a new video by its title, a like by its count; unattributed: likes an event carried at an unknown time, "
              f"after a patch whose count several videos of the page had reached, or before their video entered the page, left out of the lags):")
        print()
        print("| writes/s | acknowledged (201) | other answers | write p99 | events/s | SSE bytes per event | deliveries (unattributed) | lag p50 | lag p99 | lag max | "
              "events no write matched | resets | last event after the last write | streams stale then | server CPU | RSS start / max / end MiB | /healthz p50 / p99 / max |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in mixed_results:
            other = {k: v for k, v in r["status"].items() if k != 201}
            h = r["healthz"]
            print(f"| {r['rate']} | {r['status'].get(201, 0):,} of {r['offered']:,} | {other or 0} | {ms(r['write_p99'])} ms | {r['events_per_s']:,.0f} | "
                  f"{r['delta_bytes'] / max(r['deltas'], 1):,.0f} | {r['deliveries']:,} ({r['unattributed']:,}) | {ms(r['p50'])} ms | {ms(r['p99'])} ms | {ms(r['max'])} ms | "
                  f"{r['unmatched']:,} ({r['ambiguous']} ambiguous) | {r['resets']} | {r['drained']:.1f} s | {r['stale']} | "
                  f"{100 * r['cpu'] / r['window']:.0f} % of a core | "
                  f"{kib(r['rss_start_kib'])} / {kib(r['rss_max_kib'])} / {kib(r['rss_end_kib'])} | "
                  f"{h['p50_ms']:.2f} / {h['p99_ms']:.2f} / {h['max_ms']:.2f} ms ({h['requests']} requests, {h['errors']} errors) |")
        for r in mixed_results:
            print()
            print(f"{r['rate']} writes/s: " + metrics_line(r["metrics"]))
        for r in mixed_results:
            if r["rate"] == 50:
                h = r["healthz"]
                verdicts.append(("50 writes/s: every change reaches its viewers within 1 s p99",
                                 f"lag p99 {ms(r['p99'])} ms; {r['stale']} streams stale at the end",
                                 "yes" if r["p99"] <= 1e9 and r["stale"] == 0 else "no"))
                verdicts.append(("50 writes/s: /healthz p99 ≤ 10 ms", f"{h['p99_ms']:.2f} ms", "yes" if h["p99_ms"] <= 10 else "no"))
    for r in cluster_results:
        n = r["replicas"]
        print()
        print(f"deltafeed live streams across {n} replicas: {options.binary_label}; {n} replicas (`serve --threads 1` each, "
              f"scripts/cluster-lib.sh) on one {options.cluster_label}, seeded with the demo store ({options.users:,} users, "
              f"{options.videos:,} videos, 40 ads); replicas, PostgreSQL and nginx on {options.cluster_cpu}; stream holders "
              f"and writer on core {options.client_cpu}; load average {options.load_before} before, "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} after")
        print()
        print(f"{r['streams']:,} streams, stream i on replica i % {n} through that replica's own port ({r['streams'] // n:,} each; "
              f"pages: viewer 1 + i % {options.users:,} with limit 10 + i / {options.users:,}, each starting with a reset); "
              f"{r['rate']} writes/s for {r['seconds']:g} s, write n sent to replica n % {n} directly (open loop, 16 connections; "
              f"4 in 5 likes of one of the {r['videos']:,} videos the pages show by a random user, 1 in 5 new videos by random "
              f"authors titled lv-N). Lag = event received − write acknowledged (both CLOCK_MONOTONIC), for every stream whose "
              f"event carried the write (the streams are format=jsonpatch and each is replayed on a copy of its page, so every "
              f"like count that changes names its video), split by the stream's replica against the one that acknowledged the write:")
        print()
        print("| deliveries | count | p50 | p99 | max | min |")
        print("|---|---|---|---|---|---|")
        rows = (("stream on the replica that acknowledged the write", "same"), ("stream on another replica (NOTIFY, then catch-up)", "other"),
                ("all", "all"),
                (f"all, of the {r['wide_writes']:,} writes that reached more than 10 % of the streams", "wide"),
                (f"all, of the {r['narrow_writes']:,} writes that reached 10 % or fewer", "narrow"),
                (f"all, in events > {options.coalesce_ms + 50} ms after the stream's previous one (not held by coalescing)", "quiet"),
                (f"all, in events ≤ {options.coalesce_ms + 50} ms after the stream's previous one", "held"),
                ("first stream a write reached on its own replica (one per write)", "first_same"),
                ("first stream a write reached on each other replica (one per write and replica)", "first_other"))
        for label, key in rows:
            f = r[key]
            print(f"| {label} | {f['n']:,} | {ms(f['p50'])} ms | {ms(f['p99'])} ms | {ms(f['max'])} ms | {ms(f['min'])} ms |")
        print()
        c = collections.Counter(r["counters"])
        other = {k: v for k, v in r["status"].items() if k != 201}
        cpu = " / ".join(f"{100 * x / r['window']:.0f}" for x in r["cpu"])
        pg = f"{100 * r['pg_cpu'] / r['window']:.0f} %" if r["pg_cpu"] is not None else "-"
        print("| writes acknowledged (201) | other answers | write p50 / p99 | events/s | SSE bytes per event | events carrying no write "
              "| resets, closed, refused during | open at the end | last event after the last ack "
              "| streams not at their page's snapshot (lost) | pages replayed ≠ GET …/feed | pages the next replica disagrees on "
              "| replicas' CPU | PostgreSQL CPU |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        print(f"| {r['status'].get(201, 0):,} of {r['offered']:,} | {other or 0} | {ms(r['write_p50'])} / {ms(r['write_p99'])} ms | "
              f"{r['events_per_s']:,.0f} | {c['delta_bytes'] / max(c['deltas'], 1):,.0f} | {c['events_carrying_none']:,} of {c['deltas']:,} | "
              f"{c['resets']}, {c['closed']}, {c['refused']} | {r['live_end']:,} of {r['streams']:,} | {r['drained']:.2f} s | "
              f"{r['stale']} | {r['differ']} | {r['disagree']} | {cpu} % of a core ({r['window']:.0f} s) | {pg} |")
        print()
        print(f"replay: {c['videos_entered']:,} videos entered pages; {c['unexplained_counts']} like counts moved by other than the "
              f"acknowledged likes; {c['chain_breaks']} deltas not from the previous event's snapshot; {c['patch_failures']} patches "
              f"that did not apply; {c['snapshot_mismatches']} events whose patched snapshot is not their id; "
              f"{c['other_events']} other events (shutdown, gone)")
        print()
        print("p50 / p99 by the write's replica → the stream's replica: "
              + "; ".join(f"{pair} {ms(f['p50'])} / {ms(f['p99'])} ms ({f['n']:,})" for pair, f in r["pairs"].items()))
        for k, metrics in enumerate(r["metrics"]):
            print(f"replica {k}: " + metrics_line(metrics))
        for example in r["examples"]:
            print(example)
        worst = max(r["same"]["p99"], r["other"]["p99"])
        verdicts.append((f"across {n} replicas, write-to-delivery p99 ≤ 100 ms (on the acknowledging replica and on the others), no event lost",
                         f"p99 {ms(r['same']['p99'])} ms same replica, {ms(r['other']['p99'])} ms other replicas "
                         f"({ms(r['all']['p99'])} ms all); {r['stale']} streams not at their page's snapshot",
                         "yes" if worst <= 100e6 and r["stale"] == r["differ"] == 0 and r["live_end"] == r["streams"] else "no"))
    if verdicts:
        print()
        print("| target | measured | met? |")
        print("|---|---|---|")
        for target, measured, met in verdicts:
            print(f"| {target} | {measured} | {met} |")


# MARK: - The /healthz prober


def probe(port, rate, seconds):
    """GET /healthz RATE times a second for SECONDS on one keep-alive connection; prints one JSON
    line with the latency percentiles."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    latencies, errors = [], 0
    started = time.monotonic()
    for n in range(int(rate * seconds)):
        delay = started + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        t = time.perf_counter()
        try:
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                errors += 1
                continue
        except (OSError, http.client.HTTPException):
            errors += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            continue
        latencies.append((time.perf_counter() - t) * 1000)
    latencies.sort()
    print(json.dumps({"requests": len(latencies) + errors, "errors": errors, "p50_ms": percentile(latencies, 50),
                      "p99_ms": percentile(latencies, 99), "max_ms": latencies[-1] if latencies else float("nan")}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "probe":
        probe(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--binary-label", default="")
    parser.add_argument("--client", required=True)
    parser.add_argument("--seed", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--port", type=int, default=18090)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--videos", type=int, default=50000)
    parser.add_argument("--server-cpu", default="1")
    parser.add_argument("--client-cpu", default="0")
    parser.add_argument("--idle", default="10000")
    parser.add_argument("--idle-seconds", type=float, default=35)
    parser.add_argument("--fanout-viewers", type=int, default=10000)
    parser.add_argument("--likes", type=int, default=20)
    parser.add_argument("--like-gap", type=float, default=0.2)
    parser.add_argument("--like-timeout", type=float, default=10)
    parser.add_argument("--mixed-viewers", type=int, default=10000)
    parser.add_argument("--rates", default="50 500")
    parser.add_argument("--mixed-seconds", type=float, default=30)
    parser.add_argument("--settle", type=float, default=3)
    parser.add_argument("--probe-rate", type=float, default=20)
    parser.add_argument("--per-client", type=int, default=15000)
    parser.add_argument("--phases", default="idle fanout mixed")
    parser.add_argument("--server-flags", default="")
    parser.add_argument("--drain-limit", type=float, default=120)
    parser.add_argument("--cluster-ports", default="", help="the replicas' ports, comma-separated (scripts/bench-live)")
    parser.add_argument("--cluster-pids", default="", help="the replicas' PIDs, in the same order")
    parser.add_argument("--cluster-pg-pid", type=int, default=0, help="PostgreSQL's postmaster (for its CPU)")
    parser.add_argument("--cluster-label", default="PostgreSQL")
    parser.add_argument("--cluster-cpu", default="cores 0-1 (unpinned)", help="where the cluster runs (for the report)")
    parser.add_argument("--cluster-streams", type=int, default=3000)
    parser.add_argument("--cluster-rate", type=float, default=50)
    parser.add_argument("--cluster-seconds", type=float, default=30)
    parser.add_argument("--cluster-drain-limit", type=float, default=60)
    parser.add_argument("--coalesce-ms", type=int, default=100, help="the servers' --live-coalesce-ms")
    options = parser.parse_args()
    options.binary_label = options.binary_label or options.binary
    # The prober preempts the stream holders on the load core (real-time when allowed), so its
    # latencies are the server's, not the wait for that core.
    options.probe_priority = ["chrt", "-f", "10"] if subprocess.run(["chrt", "-f", "10", "true"], capture_output=True).returncode == 0 else []
    raise_descriptor_limit()
    options.load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.makedirs(options.out, exist_ok=True)
    phases = options.phases.split()
    unknown = set(phases) - {"idle", "fanout", "mixed", "cluster"}
    if unknown:
        raise SystemExit(f"unknown phases: {' '.join(sorted(unknown))} (idle, fanout, mixed, cluster)")
    if "cluster" in phases and not (options.cluster_ports and options.cluster_pids):
        raise SystemExit("the cluster phase needs --cluster-ports and --cluster-pids: run it with PHASES=cluster scripts/bench-live")
    idle_results, fanout_results, mixed_results, cluster_results = [], [], [], []
    if "idle" in phases:
        for count in (int(n) for n in options.idle.split()):
            idle(options, count, idle_results)
    if "fanout" in phases and options.fanout_viewers:
        fanout(options, fanout_results)
    if "mixed" in phases:
        for rate in (int(r) for r in options.rates.split()):
            mixed(options, rate, mixed_results)
    if "cluster" in phases:
        cluster(options, cluster_results)
    if idle_results or fanout_results or mixed_results:
        with open(os.path.join(options.out, "results.json"), "w") as f:
            json.dump({"idle": idle_results, "fanout": fanout_results, "mixed": mixed_results}, f, indent=1, default=str)
    if cluster_results:
        with open(os.path.join(options.out, "results-cluster.json"), "w") as f:
            json.dump({"cluster": cluster_results}, f, indent=1, default=str)
    report(options, idle_results, fanout_results, mixed_results, cluster_results)


if __name__ == "__main__":
    main()
